"""What Codex's own session log says about the running turn: read-only, and only for prompts that
would be answered locally.

Observed in Codex 0.169.0 (tests/e2e/test_real_codex_receipts.py): a message typed while a turn
runs (steering) reaches UserPromptSubmit with the running turn's `turn_id`, and answering it with
`decision: "block"` ends that turn and drops the model's answer. The log at `transcript_path`
tells the two apart: a turn's first prompt runs its hook after the turn's `turn_context` line and
before its user message is logged; a steering message finds a user message of its turn already
logged. Anything unreadable or unfamiliar reads as "not steering", which is how every prompt
was answered before this check existed.
"""
from intent_loop.base import fast_os
from intent_loop.base.canonical import loads

TAIL_BYTES = 256 * 1024  # a turn's start is near the end of the log; a larger turn is not scanned


def is_steering(payload):
    """True when this prompt's turn already has a user message in Codex's log (typed mid-turn)."""
    path, turn_id = payload.get("transcript_path"), payload.get("turn_id")
    if not isinstance(path, str) or not path or not isinstance(turn_id, str) or not turn_id:
        return False
    try:
        tail = _tail(path)
    except OSError:
        return False
    marker = turn_id.encode()
    user_message_after = False
    for line in reversed(tail.split(b"\n")):
        if b'"user"' in line and b'"message"' in line and _is_user_message(line):
            user_message_after = True
        elif marker in line and _starts_turn(line, turn_id):
            return user_message_after
    return False


def _tail(path):
    """The log's last TAIL_BYTES. O_NONBLOCK: a FIFO or device named as the log must not hold the
    hook until its deadline (only a regular file is read)."""
    fd = fast_os.open(path, fast_os.O_RDONLY | fast_os.O_NONBLOCK | fast_os.O_NOFOLLOW)
    try:
        st = fast_os.fstat(fd)
        if not fast_os.S_ISREG(st.st_mode):
            return b""
        size = st.st_size
        start = max(0, size - TAIL_BYTES)
        return fast_os.pread(fd, size - start, start)
    finally:
        fast_os.close(fd)


def _record(line):
    try:
        record = loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("payload"), dict) else None


def _is_user_message(line):
    record = _record(line)
    return (record is not None and record.get("type") == "response_item"
            and record["payload"].get("type") == "message" and record["payload"].get("role") == "user")


def _starts_turn(line, turn_id):
    record = _record(line)
    if record is None or record["payload"].get("turn_id") != turn_id:
        return False
    return record.get("type") == "turn_context" or record["payload"].get("type") == "task_started"

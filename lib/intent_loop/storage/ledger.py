"""The hash-chained ledger: the event envelope and drafts, verification and the lock-free read path.

Each line of `ledger.jsonl` is one canonical JSON event; `event_hash` is the SHA-256 of the
canonical event without `event_hash`, and `prev_hash` chains the project's events (`sealing`
writes both). Derived state (a caller-supplied reducer folded over the events) is cached in
`cache/` with the verified checkpoint, so a call only verifies the lines appended since that
checkpoint.
"""

import stat

from intent_loop.base import fast_os, platform
from intent_loop.base.canonical import canonical_bytes, loads
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.line_hash import HASH_FIELD, content_hash

SCHEMA_VERSION = 1
ENVELOPE_KEYS = frozenset((
    "schema_version", "event_id", "event_type", "project_id", "task_id", "occurred_at",
    "actor", "request_id", "payload", "prev_hash", "event_hash",
))
ACTORS = ("user", "agent", "evidence", "system")


def new_uuid4():
    """A random RFC 4122 version-4 UUID string (fast_os.urandom; `import uuid` costs ~18 ms)."""
    raw = bytearray(fast_os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return format_uuid(bytes(raw))


def format_uuid(raw16):
    h = raw16.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_uuid(value):
    if not isinstance(value, str) or len(value) != 36:
        return False
    parts = value.split("-")
    if [len(p) for p in parts] != [8, 4, 4, 4, 12]:
        return False
    return all(c in "0123456789abcdef" for c in value.replace("-", ""))


class Draft:
    """An event before sealing: what the domain wants recorded.

    The event id is chosen here, not at sealing, so a plan can already reference the events it
    is about to write (a publication's source_message_refs name the claims of the same mutation).
    """

    __slots__ = ("event_type", "task_id", "actor", "payload", "event_id")

    def __init__(self, event_type, task_id, actor, payload):
        self.event_type = event_type
        self.task_id = task_id
        self.actor = actor
        self.payload = payload
        self.event_id = new_uuid4()


def _malformed(line_no, why):
    return IntentLoopError(ErrorCode.LEDGER_MALFORMED, f"line {line_no}: {why}; run `intent-loop recover`",
                           line=line_no)


def check_line(line, *, line_no, project_id, prev_hash):
    """Verify one ledger line (bytes without LF) against the chain; return the event dict."""
    try:
        event = loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _malformed(line_no, "not valid UTF-8 JSON") from None
    if not isinstance(event, dict):
        raise _malformed(line_no, "not a JSON object")
    version = event.get("schema_version")
    if type(version) is int and version > SCHEMA_VERSION:
        raise IntentLoopError(
            ErrorCode.FUTURE_SCHEMA,
            f"line {line_no} uses schema {version}; upgrade intent-loop to read it",
            line=line_no,
        )
    if type(version) is not int or version != SCHEMA_VERSION or event.keys() != ENVELOPE_KEYS:
        raise _malformed(line_no, "the envelope does not have exactly the schema-1 fields")
    _check_envelope_types(event, line_no)
    if event["project_id"] != project_id:
        raise IntentLoopError(ErrorCode.FOREIGN_PROJECT, f"line {line_no} belongs to another project", line=line_no)
    try:
        canonical = canonical_bytes(event)
    except IntentLoopError:  # a lone surrogate escape: no valid event carries one
        raise _malformed(line_no, "holds text that is not valid Unicode") from None
    if canonical != line:
        raise _malformed(line_no, "not in canonical JSON form")
    start = 11 + len(event["actor"])  # len('{"actor":"') + actor + closing quote
    if line[start : start + len(HASH_FIELD)] != HASH_FIELD:  # pragma: no cover - canonical order
        raise _malformed(line_no, "event_hash is not where canonical order puts it")
    if content_hash(line, start) != event["event_hash"]:
        raise IntentLoopError(ErrorCode.LEDGER_HASH_MISMATCH, f"line {line_no}: event_hash does not match its content",
                              line=line_no)
    if event["prev_hash"] != prev_hash:
        raise IntentLoopError(ErrorCode.LEDGER_CHAIN_BROKEN, f"line {line_no}: prev_hash breaks the chain",
                              line=line_no)
    return event


def _check_envelope_types(event, line_no):
    ok = (
        is_uuid(event["event_id"])
        and isinstance(event["event_type"], str) and event["event_type"]
        and isinstance(event["project_id"], str)
        and (event["task_id"] is None or is_uuid(event["task_id"]))
        and isinstance(event["occurred_at"], str) and event["occurred_at"].endswith("Z")
        and event["actor"] in ACTORS
        and isinstance(event["request_id"], str)
        and isinstance(event["payload"], dict)
        and (event["prev_hash"] is None or _is_hex64(event["prev_hash"]))
        and _is_hex64(event["event_hash"])
    )
    if not ok:
        raise _malformed(line_no, "an envelope field has the wrong type or shape")


def _is_hex64(value):
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


# The first event of every request written by the append path says how many events the request
# has, so a reader can tell a request that is still being appended (or was cut short by a crash)
# from a complete one. Requests written by the replace protocol lack it and are complete.
REQUEST_EVENT_COUNT = "request_event_count"


class RequestAssembler:
    """The all-or-nothing rule: which verified events may be projected, one request at a time."""

    __slots__ = ("request_id", "remaining", "held")

    def __init__(self):
        self.request_id = None
        self.remaining = 0
        self.held = []

    def add(self, event, line_no):
        """The events that are now complete (in order), or None while a request is still open."""
        count = event["payload"].get(REQUEST_EVENT_COUNT)
        if self.remaining:
            if event["request_id"] != self.request_id or count is not None:
                raise _malformed(line_no, f"request {self.request_id!r} ends before all its events")
            self.held.append(event)
            self.remaining -= 1
            if self.remaining:
                return None
            done, self.held = self.held, []
            return done
        if count is None:
            return [event]
        if type(count) is not int or count < 1:
            raise _malformed(line_no, f"{REQUEST_EVENT_COUNT} is not a positive integer")
        if count == 1:
            return [event]
        self.request_id, self.remaining, self.held = event["request_id"], count - 1, [event]
        return None


def fold_lines(data, verified, reducer, *, project_id, base=0, on_progress=None):
    """Verify every line after `verified.size` and fold the complete requests; mutates `verified`.

    `data` holds the ledger's bytes from file offset `base` (<= verified.size) to its end, so a
    caller resuming from a checkpoint reads only the suffix. `verified` only ever advances to the
    end of a complete request: what follows (a partial line, or the lines of a request still being
    appended) is `torn_tail`. A last line that verifies but lacks its final LF is projected and
    flagged `missing_lf` (the next append writes that LF first). A reducer with `wants_position`
    set is also told each line's place, `apply(state, event, (offset, length without LF))`.
    """
    offset = verified.size - base
    if verified.missing_lf and offset < len(data):
        if data[offset : offset + 1] != b"\n":
            raise _malformed(verified.count + 1, "a line was joined to a last line that lacked its LF")
        offset += 1
        verified.size += 1
        verified.missing_lf = False
    assembler = RequestAssembler()
    prev, line_no = verified.last_hash, verified.count
    state, apply = verified.state, reducer.apply
    positioned, positions = getattr(reducer, "wants_position", False), []
    while offset < len(data):
        stop = data.find(b"\n", offset)
        line_no += 1
        if stop < 0:  # after the last LF: a complete line missing only its LF, or a torn one
            try:
                event = check_line(data[offset:], line_no=line_no, project_id=project_id, prev_hash=prev)
            except IntentLoopError:
                break
            stop = len(data)
        else:
            event = check_line(data[offset:stop], line_no=line_no, project_id=project_id, prev_hash=prev)
        prev = event["event_hash"]
        positions.append((base + offset, stop - offset))
        done = assembler.add(event, line_no)
        if done is not None:  # the lines since the last complete request, in order
            if positioned:
                for complete, position in zip(done, positions, strict=True):
                    apply(state, complete, position)
            else:
                for complete in done:
                    apply(state, complete)
            positions.clear()
            verified.last_line_start = base + offset
            verified.last_hash = prev
            verified.count = line_no
            verified.size = base + stop + 1
            verified.missing_lf = stop == len(data)
            if verified.missing_lf:
                verified.size -= 1
        offset = stop + 1
        if on_progress is not None and line_no % 1000 == 0:
            on_progress(offset, len(data))
    if on_progress is not None:
        on_progress(len(data), len(data))
    verified.torn_tail = base + len(data) - verified.size
    return verified


def empty_verified(reducer):
    return Verified(0, 0, None, 0, reducer.initial())


def open_ledger(paths):
    """(fd, stat) of the ledger opened for reading, or (None, None); refuses unsafe files."""
    st = paths_mod.check_regular_file(paths.ledger)
    if st is None:
        return None, None
    # O_NONBLOCK: a FIFO swapped in after the lstat must not hang the open (with the lock held)
    fd = fast_os.open(paths.ledger, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
    fst = fast_os.fstat(fd)
    if (fst.st_ino, fst.st_dev) != (st.st_ino, st.st_dev) or not stat.S_ISREG(fst.st_mode):
        fast_os.close(fd)
        raise paths_mod.unsafe(paths.ledger, "the ledger was swapped while opening it")
    return fd, fst


def read_range(fd, start, end):
    """Bytes [start, end) of an open file, read into one buffer."""
    buffer = bytearray(max(0, end - start))
    view = memoryview(buffer)
    done = 0
    while done < len(buffer):
        got = platform.read_into(fd, view[done:], start + done)
        if got == 0:
            break
        done += got
    return bytes(view[:done])


def is_project_present(paths):
    """True when the project directory exists (never creates anything; refuses links)."""
    if not paths_mod.check_real_directory(fast_os.path.join(paths.data_root, "projects")):
        return False
    return paths_mod.check_real_directory(paths.dir)


class Verified:
    """The verified state of a ledger prefix: checkpoint plus the reducer's folded state."""

    __slots__ = ("size", "count", "last_hash", "last_line_start", "state", "torn_tail", "missing_lf")

    def __init__(self, size, count, last_hash, last_line_start, state, torn_tail=0, missing_lf=False):
        self.size = size
        self.count = count
        self.last_hash = last_hash
        self.last_line_start = last_line_start
        self.state = state
        # Bytes after the verified prefix that are not projected: a crashed appender's partial
        # line, or the complete lines of a request whose remaining lines are missing.
        self.torn_tail = torn_tail
        self.missing_lf = missing_lf  # the last verified line ends the file without its LF

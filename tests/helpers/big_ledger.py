"""Large ledgers, written fast: sealed events appended straight to the file (no lock, no rewrite).

Until tests/bench/history.py (a year of realistic history) is on main, tests that need a big
ledger seal hash-only observations of an existing task themselves; every line is a real sealed
event (storage/sealing.seal), so the ledger verifies like one the hooks wrote.
"""
import hashlib

from intent_loop.storage import ledger, sealing


def last_hash(path):
    """The event_hash of the ledger's last line (None for an empty ledger)."""
    with open(path, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 8192))
        tail = fh.read()
    lines = [line for line in tail.split(b"\n") if line]
    if not lines:
        return None
    return _hash_field(lines[-1])


def _hash_field(line):
    start = line.index(b'"event_hash":"') + len(b'"event_hash":"')
    return line[start:start + 64].decode()


def append_observations(paths, *, task_id, count, session_hash, start=0, occurred_at="2026-01-01T00:00:00.000Z",
                        chunk=5000):
    """Append `count` sealed observation events (alternately a prompt's and a Stop's) of `task_id`."""
    prev = last_hash(paths.ledger)
    with open(paths.ledger, "ab") as fh:
        lines = []
        for index in range(start, start + count):
            stop = index % 2 == 1
            digest = hashlib.sha256(str(index).encode()).hexdigest()
            draft = ledger.Draft("result_signal_observed" if stop else "source_observed", task_id,
                                 "agent" if stop else "user",
                                 {"host_session_hash": session_hash,
                                  "source": {"kind": "agent_turn" if stop else "user_event", "sha256": digest},
                                  "char_count": index % 997})
            event, line = sealing.seal(draft, project_id=paths.project_id, request_id=f"bulk:{index}",
                                       prev_hash=prev, occurred_at=occurred_at)
            prev = event["event_hash"]
            lines.append(line)
            if len(lines) >= chunk:
                fh.write(b"".join(lines))
                lines = []
        fh.write(b"".join(lines))
    return prev

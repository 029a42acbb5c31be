"""The request-id index in `cache/requests.idx`: exact retries are found without reading the ledger.

One line per request, appended under the project lock: `<key> <offset> <end> <hash16>` where key
is the first 32 hex digits of SHA-256(request id), [offset, end) the request's lines in the ledger
and hash16 the start of its last event's hash. The index is trusted only while the line that
ends at the last record's `end` still carries that hash: the chain makes that line vouch for
every byte before it. Otherwise it is rebuilt from the ledger. A hit is always confirmed
against the ledger's own line, so a damaged index can cost time but never a wrong answer.
"""

from intent_loop.storage import fast_os
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.canonical import loads, sha256_hex
from intent_loop.storage.line_hash import find_hash_field, recorded_hash

INDEX_FILE = "requests.idx"


def _path(tx):
    return fast_os.path.join(tx.paths.cache_dir, INDEX_FILE)


def _key(request_id):
    return sha256_hex(request_id.encode())[:32].encode()


def _read(tx):
    """(index bytes, covered end) of a trustworthy index; (b"", 0) to start from nothing."""
    from intent_loop.storage.ledger import read_range

    path = _path(tx)
    try:
        if paths_mod.check_regular_file(path) is None:
            return b"", 0
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return b"", 0
    last = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
    try:
        _key_, offset, end, hash16 = last.split()
        offset, end = int(offset), int(end)
    except ValueError:
        return _discard(path)
    if not (data.endswith(b"\n") and 0 <= offset < end <= tx.verified.size):
        return _discard(path)
    lines = read_range(tx.fd, offset, end)
    last_line = lines[lines.rfind(b"\n", 0, len(lines) - 1) + 1 :]
    field = find_hash_field(last_line)
    if field < 0 or recorded_hash(last_line, field)[:16] != hash16:
        return _discard(path)
    return data, end


def _discard(path):
    try:
        fast_os.unlink(path)
    except OSError:
        pass
    return b"", 0


def _catch_up(tx, data, covered):
    """Index the requests the ledger holds after `covered` (usually none)."""
    from intent_loop.storage.ledger import read_range

    if covered >= tx.verified.size:
        return data
    gap = read_range(tx.fd, covered, tx.verified.size)
    records, start, current, last_hash = [], 0, None, None
    pos = 0
    while pos < len(gap):
        stop = gap.index(b"\n", pos)
        event = loads(gap[pos:stop])
        if event["request_id"] != current:
            if current is not None:
                records.append(_record(current, covered + start, covered + pos, last_hash))
            current, start = event["request_id"], pos
        last_hash = event["event_hash"]
        pos = stop + 1
    records.append(_record(current, covered + start, covered + pos, last_hash))
    added = b"".join(records)
    _append(tx, added)
    return data + added


def _record(request_id, offset, end, last_hash):
    return b"%s %d %d %s\n" % (_key(request_id), offset, end, last_hash[:16].encode())


def _append(tx, data):
    try:
        fd = fast_os.open(_path(tx), fast_os.O_WRONLY | fast_os.O_CREAT | fast_os.O_APPEND
                                     | getattr(fast_os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return  # the cache is an accelerator: without it the next lookup rebuilds
    try:
        fast_os.write(fd, data)
    except OSError:
        pass
    finally:
        fast_os.close(fd)


def find(tx, request_id):
    """The events recorded under `request_id`, confirmed against the ledger; [] when none."""
    from intent_loop.storage.ledger import read_range

    if tx.fd is None:
        return []
    data, covered = _read(tx)
    data = _catch_up(tx, data, covered)
    tx.index_end = tx.verified.size
    key = _key(request_id)
    pos = data.find(key)
    while pos >= 0:
        if pos == 0 or data[pos - 1 : pos] == b"\n":
            _k, offset, end, _h = data[pos : data.index(b"\n", pos)].split()
            events = [loads(line) for line in read_range(tx.fd, int(offset), int(end)).splitlines()]
            if events and all(e["request_id"] == request_id for e in events):
                return events
        pos = data.find(key, pos + 1)
    return []


def record(tx, request_id, offset, last_hash):
    """Index a request just appended at `offset`, if the index was current up to there."""
    if getattr(tx, "index_end", None) != offset:
        return
    _append(tx, _record(request_id, offset, tx.verified.size, last_hash))
    tx.index_end = tx.verified.size

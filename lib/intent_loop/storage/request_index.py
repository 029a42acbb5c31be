"""The request-id index in `cache/requests-2.idx`: an exact retry is found in a bounded number of bytes.

An open-addressing hash table read and written with pread/pwrite, so a lookup costs the same at
10 events and at 100,000:
- a 64-byte header: magic, capacity, entry count, and the ledger position the table covers
  (`covered_end`, the start of the line ending there and the first 16 hex digits of its hash);
- `capacity + PROBE` slots of 32 bytes: the first 16 bytes of SHA-256(request id), then the
  request's [offset, end) in the ledger (8 bytes each, little-endian). A key lives in the first
  free slot of its PROBE-slot window, which never wraps (the extra slots at the end).
A lookup reads the header, the covered line and one window (about 1 KiB in all). The table is
trusted only while the ledger line ending at `covered_end` still carries the recorded hash: the
chain makes that line vouch for every byte before it, so a rewritten ledger (deletion, recovery)
invalidates it. A hit is always confirmed against the ledger's own lines, so a damaged table can
cost time but never a wrong answer.

A missing, stale or full table is never rebuilt inside a mutation: the mutation scans the ledger
for the id instead (a byte search, bounded memory: storage/request_scan.py) and marks the table for
`rebuild`, which the hook's after-answer child and the CLI run.
"""

from intent_loop.base import fast_os, platform
from intent_loop.base.canonical import loads, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.line_hash import find_hash_field, recorded_hash

INDEX_FILE = "requests-2.idx"
OLD_INDEX_FILES = ("requests.idx",)  # format 1: one text line per request, read whole
MAGIC = b"ILREQ-2\n"
HEADER = 64
SLOT = 32
PROBE = 32  # slots per window: with the table at most half full, a window fills about never
INITIAL_CAPACITY = 1 << 12
_EMPTY = bytes(16)
_CATCH_UP_LIMIT = 1 << 16  # a larger unindexed gap (about 80 events) is left to `rebuild`


def _path(paths):
    return fast_os.path.join(paths.cache_dir, INDEX_FILE)


def _key(request_id):
    return bytes.fromhex(sha256_hex(request_id.encode())[:32])


def _u64(data, at):
    return int.from_bytes(data[at : at + 8], "little")


def _p64(value):
    return value.to_bytes(8, "little")


def _write_at(fd, data, offset):
    """pwrite into the table; a failure (ENOSPC, EIO) is WRITE_FAILED, never a raw OSError (the
    table is derived: `find` then scans, `record`'s caller asks for a rebuild)."""
    try:
        platform.pwrite(fd, data, offset)
    except OSError as exc:
        from intent_loop.storage.atomic import describe_os_error

        raise IntentLoopError(ErrorCode.WRITE_FAILED,
                              f"could not write the request index: {describe_os_error(exc)}") from exc


class Table:
    """An open index file and its header."""

    __slots__ = ("fd", "capacity", "count", "covered_end", "covered_start", "covered_hash")

    def __init__(self, fd, capacity, count=0, covered_end=0, covered_start=0, covered_hash=b"0" * 16):
        self.fd = fd
        self.capacity = capacity
        self.count = count
        self.covered_end = covered_end
        self.covered_start = covered_start
        self.covered_hash = covered_hash

    def header(self):
        return (MAGIC + _p64(self.capacity) + _p64(self.count) + _p64(self.covered_end)
                + _p64(self.covered_start) + self.covered_hash).ljust(HEADER, b"\0")

    def window(self, key):
        home = int.from_bytes(key[:8], "little") % self.capacity
        at = HEADER + home * SLOT
        data = fast_os.pread(self.fd, PROBE * SLOT, at)
        return at, data.ljust(PROBE * SLOT, b"\0")  # a sparse file's unwritten end reads short

    def lookup(self, key):
        """[offset, end) stored for `key`, or None."""
        _at, data = self.window(key)
        for pos in range(0, len(data), SLOT):
            found = data[pos : pos + 16]
            if found == key:
                return _u64(data, pos + 16), _u64(data, pos + 24)
            if found == _EMPTY:
                return None
        return None

    def insert(self, key, offset, end):
        """Store a request's span; False when its window is full (the table needs a rebuild)."""
        at, data = self.window(key)
        for pos in range(0, len(data), SLOT):
            found = data[pos : pos + 16]
            if found == key or found == _EMPTY:
                _write_at(self.fd, key + _p64(offset) + _p64(end), at + pos)
                self.count += found == _EMPTY
                return True
        return False

    def cover(self, end, line_start, last_hash):
        self.covered_end, self.covered_start, self.covered_hash = end, line_start, last_hash[:16].encode()
        _write_at(self.fd, self.header(), 0)

    def is_crowded(self):
        return self.count * 2 > self.capacity


def _open(paths, *, create):
    path = _path(paths)
    flags = fast_os.O_RDWR | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK
    try:
        if paths_mod.check_regular_file(path) is None:
            if not create:
                return None
            fd = fast_os.open(path, flags | fast_os.O_CREAT | fast_os.O_EXCL, 0o600)
            table = Table(fd, INITIAL_CAPACITY)
            try:
                _write_at(fd, table.header(), 0)
            except IntentLoopError:
                fast_os.close(fd)  # a headerless file reads as no table: the rebuild replaces it
                raise
            return table
        fd = fast_os.open(path, flags)
    except (OSError, IntentLoopError):
        return None
    head = fast_os.pread(fd, HEADER, 0)
    capacity = _u64(head, 8)
    if head[:8] != MAGIC or not 1 <= capacity <= 1 << 40:
        fast_os.close(fd)
        return None
    return Table(fd, capacity, _u64(head, 16), _u64(head, 24), _u64(head, 32), head[40:56])


def _vouches(tx, table):
    """True when the ledger line ending at the table's covered_end still has the recorded hash."""
    from intent_loop.storage.ledger import read_range

    end, start = table.covered_end, table.covered_start
    if end == 0:
        return True
    if not start < end <= tx.verified.size or end - start > 1 << 24:
        return False
    line = read_range(tx.fd, start, end).rstrip(b"\n")
    field = find_hash_field(line)
    return field >= 0 and recorded_hash(line, field)[:16] == table.covered_hash


def _catch_up(tx, table):
    """Index what the ledger holds after covered_end (usually nothing); False if left to rebuild."""
    if table.covered_end >= tx.verified.size:
        return True
    if tx.verified.size - table.covered_end > _CATCH_UP_LIMIT:
        return False
    from intent_loop.storage.ledger import read_range
    from intent_loop.storage.request_scan import requests_in  # only for a gap: a current table has none

    gap = read_range(tx.fd, table.covered_end, tx.verified.size)
    last = None
    for request_id, offset, end, last_hash in requests_in(gap, table.covered_end):
        if not table.insert(_key(request_id), offset, end):
            return False
        last = (end, offset, last_hash)
    if last is not None:
        table.cover(tx.verified.size, _last_line_start(tx, gap), last[2])
    return True


def _caught_up(tx, table):
    """_catch_up; a failed write into the table (a full disk) counts as a stale table: the ledger
    is scanned, and the mutation goes on or fails on its own append."""
    try:
        return _catch_up(tx, table)
    except IntentLoopError as exc:
        if exc.code != ErrorCode.WRITE_FAILED:
            raise
        return False


def _last_line_start(tx, gap):
    body = gap[:-1] if gap.endswith(b"\n") else gap
    return tx.verified.size - len(gap) + body.rfind(b"\n") + 1


def _confirmed(tx, request_id, span):
    from intent_loop.storage.ledger import read_range

    offset, end = span
    if not 0 <= offset < end <= tx.verified.size:
        return []
    events = [loads(line) for line in read_range(tx.fd, offset, end).splitlines()]
    return events if events and all(e["request_id"] == request_id for e in events) else []


def find(tx, request_id):
    """The events recorded under `request_id`, confirmed against the ledger; [] when none."""
    tx.index_end = None
    if tx.fd is None:
        return []
    table = _open(tx.paths, create=fast_os.path.isdir(tx.paths.cache_dir))
    try:
        if table is not None and _vouches(tx, table) and _caught_up(tx, table):
            tx.index_end = tx.verified.size
            span = table.lookup(_key(request_id))
            if table.is_crowded():
                _ask_for_rebuild(tx)
            return _confirmed(tx, request_id, span) if span else []
    finally:
        if table is not None:
            fast_os.close(table.fd)
    _ask_for_rebuild(tx)
    from intent_loop.storage.request_scan import scan  # no usable table: a byte search of the ledger

    return scan(tx.fd, tx.verified.size, request_id)


def record(tx, request_id, offset, last_hash):
    """Index a request just appended at `offset`, if the table was current up to there."""
    if getattr(tx, "index_end", None) != offset:
        return
    table = _open(tx.paths, create=False)
    if table is None:
        return
    try:
        # covered_end is one short when this append first wrote the LF the last line lacked
        if table.covered_end in (offset, offset - 1) and table.insert(_key(request_id), offset, tx.verified.size):
            table.cover(tx.verified.size, tx.verified.last_line_start, last_hash)
            tx.index_end = tx.verified.size
        else:
            _ask_for_rebuild(tx)
    finally:
        fast_os.close(table.fd)


def ask_for_rebuild(tx):
    """The transaction's index write failed (a full disk): rebuild the table after the answer."""
    try:
        _ask_for_rebuild(tx)
    except (OSError, IntentLoopError):
        pass  # the table is derived: the next reader that finds it behind rebuilds it


def _ask_for_rebuild(tx):
    """Have the table rebuilt once the answer is out, for the verified prefix as the transaction
    leaves it (read when the job runs, so it includes what this mutation appended)."""
    from intent_loop.storage import maintenance

    paths = tx.paths

    def rebuild_job(deadline):
        from intent_loop.storage.cache import checkpoint
        from intent_loop.storage.ledger import open_ledger, read_range

        v = tx.verified
        size, start, last_hash = v.size, v.last_line_start, v.last_hash
        fd, st = open_ledger(paths)
        if fd is None:
            return
        try:  # the prefix must still be the one verified (a deletion may have rewritten the file)
            line = read_range(fd, start, size)
            if size and checkpoint.line_hash_at(line, 0, len(line),
                                                missing_lf=not line.endswith(b"\n")) != last_hash:
                return
            rebuild(paths, fd, size, last_line_start=start, last_hash=last_hash or "0" * 64)
        finally:
            fast_os.close(fd)

    maintenance.request_maintenance(paths, "request-index", rebuild_job)


def rebuild(paths, fd, size, *, last_line_start, last_hash):
    """Write a fresh table for the verified ledger bytes [0, size) open at `fd`.

    Needs no lock: it reads a verified prefix (appends only add after it) and replaces the file
    atomically; whatever a concurrent mutation indexed meanwhile is after `size`, so the next
    mutation catches it up, and a rewritten ledger no longer vouches for the new table.
    """
    from intent_loop.storage.atomic import temp_name_for
    from intent_loop.storage.request_scan import request_spans

    if not fast_os.path.isdir(paths.cache_dir):
        return False
    for old in OLD_INDEX_FILES:
        try:
            fast_os.unlink(fast_os.path.join(paths.cache_dir, old))
        except OSError:
            pass
    requests = request_spans(fd, size)
    capacity = INITIAL_CAPACITY
    while len(requests) * 2 > capacity:
        capacity *= 2
    path = _path(paths)
    for _attempt in range(4):  # a full probe window is rare at half load; a bigger table fixes it
        temp = temp_name_for(path)
        try:
            if _write_table(temp, capacity, requests, size, last_line_start, last_hash):
                fast_os.replace(temp, path)
                return True
        except (OSError, IntentLoopError):  # a full disk: no table; the next rebuild tries again
            pass
        try:
            fast_os.unlink(temp)
        except OSError:
            pass
        capacity *= 2
    return False


def _write_table(temp, capacity, requests, size, last_line_start, last_hash):
    fd = fast_os.open(temp, fast_os.O_RDWR | fast_os.O_CREAT | fast_os.O_EXCL | fast_os.O_NOFOLLOW,
                      0o600)
    try:
        table = Table(fd, capacity)
        for request_id, offset, end in requests:
            if not table.insert(_key(request_id), offset, end):
                return False
        if size:
            table.cover(size, last_line_start, last_hash)
        else:
            _write_at(fd, table.header(), 0)
        return True
    finally:
        fast_os.close(fd)

"""The derived cache in `cache/`: the verified checkpoint plus the reducer's state.

Everything here can be deleted at any time; it is rebuilt from the ledger. A checkpoint is
trusted only when the ledger's identity (size, inode, mtime) is unchanged and its last line
still hashes to the recorded hash, or, after an append, when that line is still in place.
The file is `<sha256 of the body>\n<canonical JSON body>`, so a cache damaged or edited by hand
is ignored (and rebuilt), never believed.
"""

from intent_loop.errors import IntentLoopError
from intent_loop.storage import fast_os
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.storage.line_hash import self_verified_hash

CACHE_FORMAT = 1
STATE_FILE = "state.json"


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


class Cached:
    __slots__ = ("verified", "identity")

    def __init__(self, verified, identity):
        self.verified = verified
        self.identity = identity


def _identity(st):
    return [st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns]


def load(paths, reducer):
    """The cached checkpoint, or None when missing, unreadable or made by other code."""
    path = fast_os.path.join(paths.cache_dir, STATE_FILE)
    try:
        if paths_mod.check_regular_file(path) is None:
            return None
        with open(path, "rb") as fh:
            data = fh.read()
        digest, body = data[:64], data[65:]
        if data[64:65] != b"\n" or sha256_hex(body).encode() != digest:
            return None
        doc = loads(body)
        if (doc.get("format") != CACHE_FORMAT or doc.get("reducer") != reducer.version
                or doc.get("project_id") != paths.project_id):
            return None
        v = doc["verified"]
        if not _is_checkpoint(v) or not isinstance(doc["state"], dict) or not isinstance(doc["identity"], list):
            return None
        verified = Verified(v["size"], v["count"], v["last_hash"], v["last_line_start"], doc["state"],
                            missing_lf=v.get("missing_lf") is True)
        return Cached(verified, doc["identity"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IntentLoopError):
        return None


def _is_checkpoint(v):
    counts = (v.get("size"), v.get("count"), v.get("last_line_start"))
    if not all(type(n) is int and n >= 0 for n in counts) or v["last_line_start"] > v["size"]:
        return False
    return v["last_hash"] is None or (isinstance(v["last_hash"], str) and len(v["last_hash"]) == 64)


def is_current(cached, st):
    return cached.identity == _identity(st)


def line_hash_at(data, start, end, *, missing_lf=False):
    """The event_hash of the ledger line data[start:end] (ending in LF, or ending the file
    without it when `missing_lf`) if it verifies, else None."""
    if end == 0:
        return None
    if missing_lf:
        line = data[start:end]
    elif data[end - 1 : end] != b"\n":
        return None
    else:
        line = data[start : end - 1]
    if not line.startswith(b'{"actor":"'):
        return None
    return self_verified_hash(line)


def last_line_matches(paths, cached):
    """Re-check the checkpoint against the bytes on disk: its last line still hashes to last_hash."""
    v = cached.verified
    if v.size == 0:
        return v.last_hash is None
    try:
        fd = fast_os.open(paths.ledger, fast_os.O_RDONLY | getattr(fast_os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    try:
        data = fast_os.pread(fd, v.size - v.last_line_start, v.last_line_start)
    finally:
        fast_os.close(fd)
    return line_hash_at(data, 0, len(data), missing_lf=v.missing_lf) == v.last_hash


def save(paths, reducer, verified, st):
    """Best effort: the cache is an accelerator, a failed write only costs a later rebuild."""
    if not fast_os.path.isdir(paths.cache_dir) or fast_os.path.islink(paths.cache_dir):
        return
    doc = {
        "format": CACHE_FORMAT,
        "reducer": reducer.version,
        "project_id": paths.project_id,
        "identity": _identity(st),
        "verified": {
            "size": verified.size,
            "count": verified.count,
            "last_hash": verified.last_hash,
            "last_line_start": verified.last_line_start,
            "missing_lf": verified.missing_lf,
        },
        "state": verified.state,
    }
    from intent_loop.storage.atomic import replace_atomically

    body = canonical_bytes(doc)
    try:
        replace_atomically(fast_os.path.join(paths.cache_dir, STATE_FILE),
                           sha256_hex(body).encode() + b"\n" + body, durable=False)
    except IntentLoopError:
        pass

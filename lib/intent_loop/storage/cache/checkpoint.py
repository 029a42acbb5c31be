"""The derived cache in `cache/`: the verified checkpoint plus the reducer's state (format 3).

Everything here can be deleted at any time; it is rebuilt from the ledger. A checkpoint is
trusted only when the ledger's identity (size, inode, mtime) is unchanged and its last line
still hashes to the recorded hash, or, after an append, when that line is still in place.

The root file `cache/v3.root` is `<sha256 of the body>\\n<canonical JSON body>`, so a cache
damaged by accident is ignored (and rebuilt), never believed. A reducer that defines
`cache_split`/`cache_join` keeps only a small root in it and the rest in table pages and shards
(see `cache_store`), reading every text back from the ledger line it came from, so a hand edit
with its digest recomputed can change positions and lifecycle at most, never words. Other
reducers (tests' counters) keep their whole state in the root. Formats 1 (`cache/state.json`)
and 2 (`cache/v2.root`, one flat shard table) are ignored and removed on the first format-3 write.
"""

import stat

from intent_loop.base import fast_os
from intent_loop.errors import IntentLoopError
from intent_loop.storage.cache import cache_store
from intent_loop.storage.ledger import Verified

CACHE_FORMAT = 3
ROOT_FILE = cache_store.ROOT_FILE
STATE_FILE = ROOT_FILE  # the name callers unlink to drop the checkpoint (its shards then vouch for nothing)
OLD_FILES = ("state.json",)  # format 1: ignored, removed when format 3 is first written


def _count(value):
    return type(value) is int and value >= 0


def _hash_or_none(value):
    return value is None or (isinstance(value, str) and len(value) == 64)


# The Verified slots a checkpoint persists, each with the check its cached value must pass. A new
# checkpoint slot is one more entry here (as `missing_lf` was); a root written before it existed
# lacks the field and is rebuilt rather than guessed.
CHECKPOINT_FIELDS = {
    "size": _count,
    "count": _count,
    "last_hash": _hash_or_none,
    "last_line_start": _count,
    "missing_lf": lambda value: type(value) is bool,
}


class Cached:
    __slots__ = ("verified", "identity")

    def __init__(self, verified, identity):
        self.verified = verified
        self.identity = identity


def _identity(st):
    if isinstance(st, list):  # an identity already recorded (a repaired cache keeps its root's)
        return st
    return [st.st_size, st.st_ino, st.st_dev, st.st_mtime_ns]


def _root_path(paths):
    return fast_os.path.join(paths.cache_dir, ROOT_FILE)


def _checkpoint_of(doc):
    v = doc.get("verified")
    if not isinstance(v, dict) or v.keys() != CHECKPOINT_FIELDS.keys():
        return None
    if not all(check(v[name]) for name, check in CHECKPOINT_FIELDS.items()):
        return None
    if v["last_line_start"] > v["size"] or (v["size"] == 0) != (v["last_hash"] is None):
        return None
    return v


def _load_root(paths, reducer):
    doc = cache_store.read_framed(_root_path(paths))
    if (doc is None or doc.get("format") != CACHE_FORMAT or doc.get("reducer") != reducer.version
            or doc.get("project_id") != paths.project_id or not isinstance(doc.get("identity"), list)):
        return None, None
    checkpoint = _checkpoint_of(doc)
    if (checkpoint is None or not isinstance(doc.get("gen"), str) or not isinstance(doc.get("pages"), dict)
            or not isinstance(doc.get("recent"), dict)):
        return None, None
    return doc, checkpoint


def load(paths, reducer):
    """The cached checkpoint, or None when missing, unreadable or made by other code."""
    try:
        doc, checkpoint = _load_root(paths, reducer)
        if doc is None:
            return None
        verified = Verified(state=None, **checkpoint)
        if hasattr(reducer, "cache_join"):
            store = cache_store.Store(paths, gen=doc["gen"], pages=doc["pages"], recent=doc["recent"],
                                      limit=checkpoint["size"],
                                      missing_lf=checkpoint["missing_lf"], identity=doc["identity"])
            verified.state = reducer.cache_join(doc["state"], store, paths=paths, checkpoint=checkpoint)
        elif isinstance(doc.get("state"), dict):
            verified.state = doc["state"]
        if verified.state is None:
            return None
        return Cached(verified, doc["identity"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IntentLoopError, cache_store.Untrusted):
        return None


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
    return cache_store.self_verified_hash(line)


def last_line_matches(paths, cached):
    """Re-check the checkpoint against the bytes on disk: its last line still hashes to last_hash."""
    v = cached.verified
    if v.size == 0:
        return v.last_hash is None
    try:
        fd = fast_os.open(paths.ledger, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(fast_os.fstat(fd).st_mode):  # a FIFO swapped in: never read, never blocks
            return False
        data = fast_os.pread(fd, v.size - v.last_line_start, v.last_line_start)
    finally:
        fast_os.close(fd)
    return line_hash_at(data, 0, len(data), missing_lf=v.missing_lf) == v.last_hash


def save(paths, reducer, verified, st):
    """Best effort: the cache is an accelerator, a failed write only costs a later rebuild.

    `st` is the ledger's stat the checkpoint was verified against (or an identity list a loaded
    root recorded, when a repaired cache is written for that same checkpoint).

    A split reducer's changed shards are written first, then any table page this save folds
    `recent` into, the root last, each atomically: a root never names a page version, nor a
    page a shard version, that is not on disk, and a crash in between leaves files the old root
    does not vouch for (ignored).
    """
    if not fast_os.path.isdir(paths.cache_dir) or fast_os.path.islink(paths.cache_dir):
        return
    checkpoint = {name: getattr(verified, name) for name in CHECKPOINT_FIELDS}
    try:
        if hasattr(reducer, "cache_split"):
            root_state, shards, store, on_saved = reducer.cache_split(verified.state)
        else:
            root_state, shards, store, on_saved = verified.state, {}, None, None
        full = store is None
        gen = fast_os.urandom(8).hex() if full else store.gen
        pages = {} if full else dict(store.pages)
        recent = {} if full else dict(store.recent)
        count = verified.count
        for name, data in sorted(shards.items()):
            if data is None:  # a task gone from the state: nothing names its shard any more
                recent[name] = None
                continue
            old = None if full else store.entry(name)
            slot = 0 if old is None else 1 - old % 2
            _write_part(paths, name, slot, gen, count, data)
            recent[name] = count * 2 + slot
        tables = {}  # page -> its new table, for the pages this save writes
        if full or len(recent) > cache_store.RECENT_LIMIT:
            for name, entry in recent.items():
                page = cache_store.page_of(name)
                if page not in tables:
                    tables[page] = {} if full else dict(store.table(page))
                if entry is None:
                    tables[page].pop(name, None)
                else:
                    tables[page][name] = entry
            recent = {}
            for page, table in sorted(tables.items()):
                old = pages.get(page)
                slot = 0 if old is None else 1 - old % 2
                _write_part(paths, page, slot, gen, count, table)
                pages[page] = count * 2 + slot
        cache_store.write_framed(_root_path(paths), {
            "format": CACHE_FORMAT, "reducer": reducer.version, "project_id": paths.project_id,
            "identity": _identity(st), "verified": checkpoint, "state": root_state, "gen": gen,
            "pages": pages, "recent": recent,
        })
    except (IntentLoopError, OSError, ValueError, cache_store.Untrusted):
        # OSError: a full disk; ValueError: a state holding text without its position; Untrusted: a page this save
        # needed and no read had checked yet is damaged (the next read recovers and rewrites all)
        return
    if on_saved is not None:
        kept = {} if full else {p: t for p, t in store.checked_tables().items() if p not in tables}
        on_saved(cache_store.Store(paths, gen=gen, pages=pages, recent=recent, limit=verified.size,
                                   missing_lf=verified.missing_lf, tables={**kept, **tables}))
    if full:
        _remove_old_format(paths)


def _write_part(paths, name, slot, gen, count, data):
    cache_store.write_framed(cache_store.shard_path(paths, name, slot),
                             {"gen": gen, "name": name, "count": count, "data": data})


def _remove_old_format(paths):
    """Format 1's `state.json` and format 2's root and shards: a full save replaced them."""
    try:
        names = fast_os.listdir(paths.cache_dir)
    except OSError:
        return
    for name in names:
        if name in OLD_FILES or name.startswith(cache_store.OLD_PREFIXES):
            try:
                fast_os.unlink(fast_os.path.join(paths.cache_dir, name))
            except OSError:
                pass


def matches(paths, reducer, verified):
    """True when the cache holds exactly `verified` (a full fold of the same ledger prefix).

    For the scrub: it loads every shard and resolves every pointer; a cache that cannot be read,
    fails a check, or sits at another checkpoint does not match.
    """
    cached = load(paths, reducer)
    if cached is None:
        return False
    if any(getattr(cached.verified, name) != getattr(verified, name) for name in CHECKPOINT_FIELDS):
        return False
    try:
        if hasattr(reducer, "cache_plain"):
            return reducer.cache_plain(cached.verified.state, strict=True) == reducer.cache_plain(verified.state)
        return cached.verified.state == verified.state
    except (cache_store.Untrusted, IntentLoopError, OSError, ValueError, KeyError, TypeError):
        return False

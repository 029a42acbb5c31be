"""The sharded cache (format 2): a small root file, shards it vouches for, and ledger-line pointers.

Layout, all flat in `cache/` so every deletion that clears `cache/` clears it whole:

- `v2.root`: `<sha256 of the body>\\n<canonical JSON>`: the checkpoint, the reducer's small root
  state, a generation id and the shard table `{name: count * 2 + slot}`.
- `v2.<name>.<slot>`: one shard, same framing, holding `{"gen", "name", "count", "data"}`. A shard
  is believed only when its generation, name and count are the ones the root names, so a shard
  that is stale (a best-effort write failed), ahead of the root (killed between the shard and the
  root) or edited by hand is detected, never used. Each shard has two slots and a write goes to
  the one the current root does not name: a lock-free reader still holding the previous root
  finds its version until the shard is written twice more.

Nothing here knows the reducer's shapes: the reducer splits its state into root and shards and
joins them back (`intent/state_cache.py` for the project reducer), using `LazyMap` for mappings
that load on first access and `Store.events` to read text back from the verified ledger lines the
cache points at (each line's own hash re-checked), so what the cache says is only positions and
lifecycle, never the words.
"""
from intent_loop.errors import IntentLoopError
from intent_loop.storage import fast_os
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.storage.line_hash import self_verified_hash

ROOT_FILE = "v2.root"
SHARD_PREFIX = "v2."
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


class Untrusted(Exception):
    """A shard or pointer the root vouches for does not check out: the cache must not be believed."""


def read_framed(path):
    """The JSON body of a `<sha256>\\n<body>` file, or None when missing, unsafe or damaged."""
    try:
        if paths_mod.check_regular_file(path) is None:
            return None
        with open(path, "rb") as fh:
            data = fh.read()
    except (OSError, IntentLoopError):
        return None
    digest, body = data[:64], data[65:]
    if data[64:65] != b"\n" or sha256_hex(body).encode() != digest:
        return None
    try:
        doc = loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def write_framed(path, doc):
    """Atomic, not durable: the cache is an accelerator. Raises IntentLoopError on failure."""
    from intent_loop.storage.atomic import replace_atomically

    body = canonical_bytes(doc)
    replace_atomically(path, sha256_hex(body).encode() + b"\n" + body, durable=False)


def shard_path(paths, name, slot):
    return fast_os.path.join(paths.cache_dir, f"{SHARD_PREFIX}{name}.{slot}")


def is_shard_name(name):
    return isinstance(name, str) and 0 < len(name) <= 80 and _NAME_CHARS.issuperset(name)


class Store:
    """What one loaded root vouches for: its shards and the ledger lines below its checkpoint."""

    def __init__(self, paths, *, gen, table, limit, missing_lf=False, identity=None):
        self.paths = paths
        self.gen = gen
        self.table = table  # shard name -> count * 2 + slot
        self.limit = limit  # pointers must lie inside the verified prefix the root checkpoints
        self.missing_lf = missing_lf  # its last line ends the file without an LF
        self.identity = identity  # the ledger identity the root recorded with its checkpoint
        self._events = {}  # offset -> event, so claims sharing a line read it once

    def read(self, name):
        """The shard's data, None when the root names no such shard; Untrusted when it fails a check."""
        entry = self.table.get(name)
        if entry is None:
            return None
        if not (is_shard_name(name) and type(entry) is int and entry >= 0):
            raise Untrusted(name)
        count, slot = divmod(entry, 2)
        doc = read_framed(shard_path(self.paths, name, slot))
        if doc is None or doc.get("gen") != self.gen or doc.get("name") != name or doc.get("count") != count:
            raise Untrusted(name)
        return doc.get("data")

    def events(self, refs):
        """{offset: event} for [(offset, length, event_id), ...]; Untrusted unless every line verifies.

        Each line must lie whole inside the verified prefix (LF before and after, or the end of
        the prefix when its last line lacks the LF), hash to its own
        event_hash, belong to this project and carry the expected event id.
        """
        wanted = [r for r in refs if r[0] not in self._events]
        if wanted:
            self._read_lines(wanted)
        return self._events

    def _read_lines(self, refs):
        try:
            fd = fast_os.open(self.paths.ledger, fast_os.O_RDONLY | getattr(fast_os, "O_NOFOLLOW", 0))
        except OSError:
            raise Untrusted("ledger") from None
        try:
            for offset, length, event_id in refs:
                if not (type(offset) is int and type(length) is int and offset >= 0 and length > 0):
                    raise Untrusted("pointer")
                end = offset + length
                last = self.missing_lf and end == self.limit  # the final line, without its LF
                if not (end < self.limit or last):
                    raise Untrusted("pointer")
                start = offset - 1 if offset else 0
                data = fast_os.pread(fd, end + (0 if last else 1) - start, start)
                line = data[offset - start : end - start]
                if ((not last and data[-1:] != b"\n") or (offset and data[:1] != b"\n") or len(line) != length
                        or self_verified_hash(line) is None):
                    raise Untrusted("line")
                try:
                    event = loads(line)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    raise Untrusted("line") from None
                if (not isinstance(event, dict) or event.get("event_id") != event_id
                        or event.get("project_id") != self.paths.project_id
                        or not isinstance(event.get("payload"), dict)):
                    raise Untrusted("line")
                self._events[offset] = event
        except OSError:
            raise Untrusted("ledger") from None
        finally:
            fast_os.close(fd)


class LazyMap:
    """A mapping whose items are loaded shard by shard on first access, remembering changed shards.

    `source.load(self, name)` returns `{key: item}` of one shard (decoding and pointer checks are
    the source's business). `shard_of(key)` names the shard a key lives in; `known` (per-key
    shards) lists the keys without loading them, else iteration loads every shard. `keyfunc`
    maps a caller's key to the stored one (a digest, so the cache holds no text as a key).
    Items the caller changes in place must be reported with `mark(key)`; assignment and
    deletion mark themselves. Only marked shards are written on save.
    """

    def __init__(self, source, *, shard_of, names, known=None, keyfunc=None):
        self._source = source
        self._shard_of = shard_of
        self._names = set(names)  # shards the root names for this map
        self._loaded = set()
        self._items = {}
        self._known = None if known is None else dict.fromkeys(known)
        self._key = keyfunc
        self.dirty = set()

    # -- loading -----------------------------------------------------------------------------
    def _k(self, key):
        return key if self._key is None else self._key(key)

    def _ensure(self, ik):
        name = self._shard_of(ik)
        if name not in self._loaded:
            self._loaded.add(name)
            if name in self._names and (self._known is None or ik in self._known):
                self._items.update(self._source.load(self, name))
        return name

    def _ensure_all(self):
        if self._known is not None:
            for ik in list(self._known):
                self._ensure(ik)
        else:
            for name in sorted(self._names - self._loaded):
                self._loaded.add(name)
                self._items.update(self._source.load(self, name))

    def fill(self, plain, *, loading=None):
        """Recovery: take from `plain` (a fresh fold, stored keys) every item of a shard not loaded
        yet, `loading` (the shard whose load failed) included; nothing is loaded from disk again."""
        for ik, item in plain.items():
            name = self._shard_of(ik)
            if name not in self._loaded or name == loading:
                self._items[ik] = item
        self._loaded.update(self._names)
        self._names = set()
        if self._known is not None:
            self._known = dict.fromkeys(self._items)

    def stored(self):
        """All items under their stored keys (loads everything)."""
        self._ensure_all()
        if self._known is not None:
            return {ik: self._items[ik] for ik in self._known}
        return dict(self._items)

    def shard_items(self, name):
        """The loaded items of one shard (for writing it)."""
        return {ik: v for ik, v in self._items.items() if self._shard_of(ik) == name}

    def is_loaded(self, key):
        return self._shard_of(self._k(key)) in self._loaded

    def mark(self, key):
        self.dirty.add(self._shard_of(self._k(key)))

    # -- the mapping protocol ----------------------------------------------------------------
    def __getitem__(self, key):
        ik = self._k(key)
        self._ensure(ik)
        return self._items[ik]

    def get(self, key, default=None):
        ik = self._k(key)
        if self._known is not None and ik not in self._known:
            return default
        self._ensure(ik)
        return self._items.get(ik, default)

    def __contains__(self, key):
        ik = self._k(key)
        if self._known is not None:
            return ik in self._known
        self._ensure(ik)
        return ik in self._items

    def __setitem__(self, key, value):
        ik = self._k(key)
        name = self._ensure(ik)  # the rest of its shard must be there before the shard is rewritten
        self._items[ik] = value
        if self._known is not None:
            self._known[ik] = None
        self.dirty.add(name)

    def __delitem__(self, key):
        ik = self._k(key)
        name = self._ensure(ik)
        del self._items[ik]
        if self._known is not None:
            del self._known[ik]
        self.dirty.add(name)

    def setdefault(self, key, default=None):
        ik = self._k(key)
        name = self._ensure(ik)
        if ik not in self._items:
            self._items[ik] = default
            if self._known is not None:
                self._known[ik] = None
        self.dirty.add(name)  # the caller is about to change it in place
        return self._items[ik]

    def pop(self, key, *default):
        if key in self:
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def __iter__(self):
        if self._known is not None:
            return iter(list(self._known))
        self._ensure_all()
        return iter(list(self._items))

    def keys(self):
        return list(self)

    def values(self):
        return list(self.stored().values())

    def items(self):
        return list(self.stored().items())

    def __len__(self):
        if self._known is not None:
            return len(self._known)
        self._ensure_all()
        return len(self._items)

    def __bool__(self):
        return len(self) > 0

    def __eq__(self, other):
        if isinstance(other, LazyMap):
            return self.stored() == other.stored()
        if isinstance(other, dict):
            return self.stored() == {self._k(k): v for k, v in other.items()}
        return NotImplemented

    __hash__ = None

    def __json__(self):
        """What canonical JSON writes for it: the plain dict it stands for."""
        return self.stored()

    def __repr__(self):
        return f"LazyMap({len(self._items)} loaded of {len(self._names)} shards)"

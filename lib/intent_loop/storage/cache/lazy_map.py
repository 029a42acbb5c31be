"""A mapping whose items load from the cache shard by shard, on first access (the project state's
maps: intent/cache_source.py makes them). Nothing here knows a shard's format: its source decodes
and checks each shard, and recovers when one fails."""
_NONE = object()


class LazyMap:
    """A mapping whose items are loaded shard by shard on first access, remembering changed shards.

    `source.load(self, name)` returns `{key: item}` of one shard, `{}` for a shard the cache does
    not hold (decoding and pointer checks are the source's business), and `source.missing(self)`
    recovers when a per-key map is asked for a key it does not list; `names()` lists every shard
    the cache holds for this map. `shard_of(key)` names the shard a key lives in. With
    `per_key=True` each key is its own shard, so `names()` lists the keys without loading their
    shards (iteration and `len` read no shard); otherwise iteration loads every shard. `keyfunc`
    maps a caller's key to the stored one (a digest, so the cache holds no text as a key).
    Items the caller changes in place must be reported with `mark(key)`; assignment and
    deletion mark themselves. Only marked shards are written on save.
    """

    def __init__(self, source, *, shard_of, names, per_key=False, keyfunc=None):
        self._source = source
        self._shard_of = shard_of
        self._names = names  # () -> the shard names the cache holds for this map
        self._complete = False  # every item is in _items (after a recovery, or all shards loaded)
        self._loaded = set()
        self._items = {}
        self._per_key = per_key
        self._known = None  # per-key maps: the keys, once listed (then kept up to date)
        self._deleted = set()
        self._key = keyfunc
        self.dirty = set()

    # -- loading -----------------------------------------------------------------------------
    def _k(self, key):
        return key if self._key is None else self._key(key)

    def _ensure(self, ik):
        name = self._shard_of(ik)
        if name not in self._loaded:
            self._loaded.add(name)
            if not self._complete and ik not in self._deleted:
                self._items.update(self._source.load(self, name))
        return name

    def _keys(self):
        """Per-key maps: every key, listed from the cache's names without loading a shard."""
        if self._known is None:
            known = {} if self._complete else dict.fromkeys(n[2:] for n in self._names())
            known.update(dict.fromkeys(self._items))
            for ik in self._deleted:
                known.pop(ik, None)
            self._known = known
        return self._known

    def _ensure_all(self):
        if self._complete:
            return
        if self._per_key:
            for ik in list(self._keys()):
                self._ensure(ik)
        else:
            for name in sorted(set(self._names()) - self._loaded):
                self._loaded.add(name)
                self._items.update(self._source.load(self, name))
        self._complete = True

    def fill(self, plain, *, loading=None):
        """Recovery: take from `plain` (a fresh fold, stored keys) every item of a shard not loaded
        yet, `loading` (the shard whose load failed) included; nothing is loaded from disk again."""
        for ik, item in plain.items():
            name = self._shard_of(ik)
            # also an item its loaded shard lacked: the shard was missing or listed too little
            if (name not in self._loaded or name == loading or ik not in self._items) and ik not in self._deleted:
                self._items[ik] = item
        self._complete = True
        if self._per_key:
            self._known = dict.fromkeys(self._items)

    def stored(self):
        """All items under their stored keys (loads everything)."""
        self._ensure_all()
        if self._per_key:
            return {ik: self._items[ik] for ik in self._keys() if ik in self._items}
        return dict(self._items)

    def shard_items(self, name):
        """The loaded items of one shard (for writing it)."""
        return {ik: v for ik, v in self._items.items() if self._shard_of(ik) == name}

    def is_loaded(self, key):
        return self._complete or self._shard_of(self._k(key)) in self._loaded

    def mark(self, key):
        self.dirty.add(self._shard_of(self._k(key)))

    # -- the mapping protocol ----------------------------------------------------------------
    def _absent(self, ik):
        """True when `ik` is known not to be there without reading a shard (a per-key map's key
        that is not a string, such as the None of "no task yet", names no shard at all)."""
        if self._known is not None:
            return ik not in self._known
        return self._per_key and type(ik) is not str

    def _find(self, ik, *, asked):
        """The item or _NONE. A per-key map asked for a key it does not list folds the ledger
        (`source.missing`) when the key is one the rest of the state names (`source.names_key`: a
        session link, the last change, the durable index) or the caller indexes it (`asked`):
        then the cache disagrees with itself, and the ledger decides. A key nothing names (a new
        task id a plan checks) costs no fold."""
        if not self._absent(ik):
            self._ensure(ik)
            if ik in self._items:
                return self._items[ik]
        if (self._per_key and type(ik) is str and not self._complete and ik not in self._deleted
                and (asked or self._source.names_key(self, ik))):
            self._source.missing(self)
            if ik in self._items:
                return self._items[ik]
        return _NONE

    def __getitem__(self, key):
        item = self._find(self._k(key), asked=True)
        if item is _NONE:
            raise KeyError(key)
        return item

    def get(self, key, default=None):
        item = self._find(self._k(key), asked=False)
        return default if item is _NONE else item

    def __contains__(self, key):
        ik = self._k(key)
        if self._known is not None and ik in self._known:  # listed: no shard needs reading to say so
            return True
        return self._find(ik, asked=False) is not _NONE

    def _added(self, ik):
        self._deleted.discard(ik)
        if self._known is not None:
            self._known[ik] = None

    def __setitem__(self, key, value):
        ik = self._k(key)
        name = self._ensure(ik)  # the rest of its shard must be there before the shard is rewritten
        self._items[ik] = value
        self._added(ik)
        self.dirty.add(name)

    def __delitem__(self, key):
        ik = self._k(key)
        name = self._ensure(ik)
        del self._items[ik]
        self._deleted.add(ik)
        if self._known is not None:
            del self._known[ik]
        self.dirty.add(name)

    def setdefault(self, key, default=None):
        ik = self._k(key)
        name = self._ensure(ik)
        if ik not in self._items:
            self._items[ik] = default
            self._added(ik)
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
        if self._per_key:
            return iter(list(self._keys()))
        self._ensure_all()
        return iter(list(self._items))

    def keys(self):
        return list(self)

    def values(self):
        return list(self.stored().values())

    def items(self):
        return list(self.stored().items())

    def __len__(self):
        if self._per_key:
            return len(self._keys())
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
        return f"LazyMap({len(self._items)} items loaded from {len(self._loaded)} shards)"

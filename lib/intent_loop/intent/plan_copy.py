"""A plan's scratch copy of the project state: it copies only what the plan touches, so a plan
over a cache-backed state never loads the rest of it, and never changes the state it was made from."""
from intent_loop.base.canonical import dumps, loads
from intent_loop.intent.cache_source import MAPS
from intent_loop.intent.claim_records import ClaimRecords, DerivedViews
from intent_loop.storage.cache.lazy_map import LazyMap

# -- plans: a scratch copy that copies only what it touches --------------------------------------
_MISSING = object()


def _copy(value):
    claims = value.get("claims") if isinstance(value, dict) else None
    if isinstance(claims, ClaimRecords):  # a task: copy what it resolved, never read its hidden claims
        out = loads(dumps({k: v for k, v in value.items() if k != "claims"}))
        out["claims"] = claims.copy(_copy)
        return out
    return loads(dumps(value))


class Overlay(DerivedViews):
    """Copy-on-read view of a map: a plan changes its copies, never the base (nor its cache)."""

    def __init__(self, base):
        self._base = base
        self._own = {}
        self._gone = set()

    def _get(self, key):
        if key in self._own:
            return self._own[key]
        if key in self._gone:
            return _MISSING
        value = self._base.get(key, _MISSING)
        if value is _MISSING:
            return _MISSING
        self._own[key] = value = _copy(value)
        return value

    def get(self, key, default=None):
        value = self._get(key)
        return default if value is _MISSING else value

    def __getitem__(self, key):
        value = self._get(key)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key):
        return self._get(key) is not _MISSING

    def __setitem__(self, key, value):
        self._own[key] = value
        self._gone.discard(key)

    def __delitem__(self, key):
        if self._get(key) is _MISSING:
            raise KeyError(key)
        del self._own[key]
        self._gone.add(key)

    def setdefault(self, key, default=None):
        value = self._get(key)
        if value is _MISSING:
            self[key] = value = default
        return value

    def pop(self, key, *default):
        value = self._get(key)
        if value is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        del self[key]
        return value

    def mark(self, key):
        pass

    def __iter__(self):
        keys = [k for k in self._base if k not in self._gone]
        keys += [k for k in self._own if k not in self._gone and k not in self._base]
        return iter(keys)

    def __len__(self):
        return len(list(self))

    def __bool__(self):
        return len(self) > 0


def scratch(state):
    """A copy of `state` a plan may fold drafts into; a cache-backed state is copied lazily."""
    if not any(isinstance(state.get(field), LazyMap) for field in MAPS):
        return _copy(state)
    out = {k: (Overlay(v) if isinstance(v, LazyMap) else _copy(v)) for k, v in state.items()}
    return out

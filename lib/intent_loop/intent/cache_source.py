"""Reading the project state back from the sharded cache: the shard names, the checks every
shard and pointer must pass, and `join`, which makes the cache-backed state whose maps load shard
by shard (intent/state_cache.py says what the cache holds and writes it). A shard or pointer that
fails a check makes the cache untrusted: the state is re-folded from the first ledger byte up to
the root's checkpoint, what was not loaded yet is taken from that fold, and the next save
rewrites every shard.
"""
from intent_loop.base.canonical import sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claim_records import ClaimRecords, Refolded, facts_of, is_hook_visible, light_record
from intent_loop.intent.event_types import CLAIM_SOURCES, MAX_CLAIM_EVENT_REFS, label_source
from intent_loop.storage.cache.cache_store import Untrusted
from intent_loop.storage.cache.lazy_map import LazyMap

CLAIM_STATES = ("active", "superseded", "invalidated")
MODES = ("on", "off", "private")
MAPS = ("tasks", "sessions", "signals", "candidates")
# Lifecycle a task has only sometimes: the mode the user set while the agent changed it, and the
# seq of the agent's last proposal (issue 13), each with the check its cached value must pass.
OPTIONAL_TASK_KEYS = {"guard_mode": lambda v: v in MODES, "proposal_seq": lambda v: type(v) is int and v >= 0}


def _task_shard(ik):
    return "t-" + ik


def _hidden_shard(task_id):
    """The claims of a task a hook does not show (intent/claim_records.py)."""
    return "h-" + task_id


def _session_shard(ik):
    return "s-" + sha256_hex(ik.encode("utf-8"))[:2]


def _signal_shard(ik):
    return "g-" + ik[:2]


def _candidate_shard(_ik):
    return "c"


SHARD_OF = {"tasks": _task_shard, "sessions": _session_shard, "signals": _signal_shard,
            "candidates": _candidate_shard}


def _not_cacheable():
    return ValueError("a text without its ledger position cannot be cached")


# -- reading ----------------------------------------------------------------------------------
def _check(condition):
    if not condition:
        raise Untrusted("shape")


def _index(where):
    """A claim's place among its event's claims, from its ref, as the fold records it (state.claim_order)."""
    return {"index": where[1]} if len(where) == 2 else {}


def _is_count(value):
    return type(value) is int and value >= 0


_HEX = frozenset("0123456789abcdef")


def _is_uuid(value):
    """An event id as the ledger's envelope check requires it (storage.ledger.is_uuid, not imported
    on the hook path for this alone)."""
    return (isinstance(value, str) and len(value) == 36 and [len(p) for p in value.split("-")] == [8, 4, 4, 4, 12]
            and _HEX.issuperset(value.replace("-", "")))


_TIMESTAMP_CHARS = frozenset("0123456789-:.TZ")


def _is_timestamp(value):
    """The shape format_utc writes: `show --json` and graph export print these two, so no words."""
    return isinstance(value, str) and 20 <= len(value) <= 40 and _TIMESTAMP_CHARS.issuperset(value)


def _is_ref(ref, size=3):
    return (isinstance(ref, list) and len(ref) >= size and _is_count(ref[0]) and _is_count(ref[1])
            and isinstance(ref[2], str))


def _stored(state, field):
    """A map's items as a plain dict, for plain and lazy states alike."""
    value = state[field]
    return value.stored() if isinstance(value, LazyMap) else value


class _Source:
    """Decodes the shards of one loaded root and recovers when one of them fails a check."""

    def __init__(self, reducer, store, root, *, paths, checkpoint):
        self.reducer = reducer
        self.store = store
        self.root = root
        self.paths = paths
        self.checkpoint = checkpoint
        self.maps = {}
        self.strict = False  # matches(): report a failed check instead of recovering
        self.recovered = False
        self.fresh = None  # the fold's state, once a failed check made one

    def load(self, lazy, name):
        try:
            return self._decode(name)
        except (Untrusted, KeyError, IndexError, TypeError, ValueError, AttributeError):
            if self.strict:
                raise Untrusted(name) from None
            self._recover(lazy, name)
            return {}

    def names_key(self, lazy, key):
        """Does the part of the state already read name task `key`? (a loaded session link, the
        last change or an owner in the durable index; what is not loaded yet is not read for it)"""
        if lazy is not self.maps.get("tasks"):
            return False
        sessions = self.maps.get("sessions")
        return (self.root["last_change"].get("task_id") == key
                or any(entry and entry[0] == key for entry in self.root["durable"].values())
                or (sessions is not None and key in sessions._items.values()))

    def missing(self, lazy):
        """A task asked for by key that the cache does not list: fold the ledger (strict: report it)."""
        if self.strict:
            raise Untrusted("missing")
        self._recover(None, None)

    def names(self, kind):
        """The shard names the pages list for one map; a page that fails its check recovers the
        state (every map then holds the fold's items, so the empty list misses nothing)."""
        try:
            return self.store.names(kind)
        except Untrusted:
            if self.strict:
                raise
            self._recover(None, None)
            return []

    def _decode(self, name):
        if name == "c":
            return self._candidates(self.root["candidates"])
        data = self.store.read(name)
        if data is None:  # no page names it: nothing cached under that shard
            return {}
        _check(isinstance(data, dict))
        if name.startswith("t-"):
            return {name[2:]: self._task(name[2:], data)}
        if name.startswith("s-"):
            # a link is a task id (a UUID): any other string would be echoed as "no task <it>"
            _check(all(_is_uuid(v) and _session_shard(k) == name for k, v in data.items()))
            return data
        _check(all(isinstance(v, list) and _signal_shard(k) == name and all(isinstance(t, str) for t in v)
                   for k, v in data.items()))
        return data

    def _task(self, task_id, enc):
        claims = enc["claims"]
        # claim_events go into the Guard document (source_message_refs) and its contract_published
        # event: only event ids, never a string the cache made up (the ledger requires UUIDs)
        _check(enc["mode"] in MODES and isinstance(claims, dict) and isinstance(enc["claim_events"], list)
               and len(enc["claim_events"]) <= MAX_CLAIM_EVENT_REFS and all(map(_is_uuid, enc["claim_events"]))
               and isinstance(enc["observations"], dict) and all(map(_is_count, enc["observations"].values()))
               and isinstance(enc["publications"], dict)
               and all(isinstance(k, str) and k.isascii() and k.isdigit() and isinstance(v, str)
                       for k, v in enc["publications"].items())
               and all(_is_timestamp(enc[k]) for k in ("created_at", "changed_at"))
               and all(_is_count(enc[k]) for k in ("changed_seq", "last_seq")))
        summary = enc["hidden"]
        _check(summary is None or (isinstance(summary, dict) and _is_count(summary.get("count"))
                                   and _is_count(summary.get("agent")) and isinstance(summary.get("omitted"), dict)
                                   and all(isinstance(k, str) and _is_count(v) for k, v in summary["omitted"].items())))
        refs = [r for r in (enc["label"], enc["published"]) if r is not None]
        for value in claims.values():
            _check(isinstance(value, list) and len(value) == 4 and _is_ref(value[3], 4))
            refs.append(value[3])
        _check(all(_is_ref(r) for r in refs))
        events = self.store.events([r[:3] for r in refs])
        task = {"task_id": task_id, "mode": enc["mode"], "label": None, "created_at": enc["created_at"],
                "changed_at": enc["changed_at"], "changed_seq": enc["changed_seq"], "last_seq": enc["last_seq"],
                "claims": {}, "published": None, "claim_events": enc["claim_events"],
                "observations": enc["observations"], "publications": enc["publications"], "refs": {}}
        for key, check in OPTIONAL_TASK_KEYS.items():
            if key in enc:
                _check(check(enc[key]))
                task[key] = enc[key]
        if enc["label"] is not None:
            event = self._event(events, enc["label"], task_id, "task_started")
            _check(isinstance(event["payload"].get("label"), str))
            task["label"] = event["payload"]["label"]
            task["label_by"] = label_source(event)  # whose words: from the event, like the fold
            task["refs"]["label"] = enc["label"]
        if enc["published"] is not None:
            event = self._event(events, enc["published"], task_id, "contract_published")
            p = event["payload"]
            task["published"] = {"contract_ref": p["contract_ref"], "version": p["contract_version"],
                                  "sha256": p["snapshot_sha256"], "event_id": event["event_id"],
                                  "published_at": event["occurred_at"]}
            task["refs"]["published"] = enc["published"]
        shown = {}
        for claim_id, row in claims.items():
            record = shown[claim_id] = self._claim(events, task_id, claim_id, row)
            _check(is_hook_visible(record))  # a hidden claim put among the shown ones: damaged
        task["claims"] = ClaimRecords(shown, summary, load_hidden=lambda: self._hidden_claims(task_id),
                                      resolve=lambda claim_id, row: self._hidden_claim(task_id, claim_id, row))
        return task

    def _claim(self, events, task_id, claim_id, row):
        """The full record of one claim row, its words from the verified line it points at."""
        state, seq, ended_by, ref = row[:4]
        _check(state in CLAIM_STATES and _is_count(seq) and (ended_by is None or isinstance(ended_by, str)))
        event = self._event(events, ref, task_id, None)
        field, provenance = CLAIM_SOURCES[event["event_type"]]
        where = ref[3:]
        _check(where[0] == field and len(where) == (1 if field == "claim" else 2))
        claim = event["payload"][field] if field == "claim" else event["payload"][field][where[1]]
        _check(isinstance(claim, dict) and claim.get("claim_id") == claim_id)
        return {"claim": claim, "state": state, "seq": seq, "event_id": ref[2], "provenance": provenance,
                "ended_by": ended_by, "actor": event["actor"], "at": ref, **_index(where)}

    def _hidden_claims(self, task_id):
        """({claim_id: row}, {claim_id: light record}) of the task's hidden shard; Refolded after a failed check."""
        try:
            data = self.store.read(_hidden_shard(task_id))
            _check(isinstance(data, dict))
            light = {}
            for claim_id, row in data.items():
                _check(type(row) is list and len(row) == 5 and _is_ref(row[3], 4) and type(row[4]) is list
                       and len(row[4]) == 10 and row[0] in CLAIM_STATES and _is_count(row[1]))
                light[claim_id] = light_record(claim_id, row)
            return data, light
        except (Untrusted, KeyError, IndexError, TypeError, ValueError, AttributeError):
            if self.strict:
                raise Untrusted("hidden") from None
        raise Refolded(self._refolded_claims(task_id))

    def _hidden_claim(self, task_id, claim_id, row):
        """The full record of a hidden row, or the fold's after a failed check. Its facts must be
        the event's own, and it must not be a claim a hook may show."""
        try:
            record = self._claim(self.store.events([row[3][:3]]), task_id, claim_id, row)
            _check(not is_hook_visible(record) and facts_of(record) == row[4])
            return record
        except (Untrusted, KeyError, IndexError, TypeError, ValueError, AttributeError):
            if self.strict:
                raise Untrusted("hidden") from None
        raise Refolded(self._refolded_claims(task_id))

    def _refolded_claims(self, task_id):
        """The claims of `task_id` as a fold of the ledger has them (recovering the whole state)."""
        if self.fresh is None:
            self._recover(None, None)
        task = self.fresh["tasks"].get(task_id)
        return {} if task is None else task["claims"]

    def _event(self, events, ref, task_id, event_type):
        event = events[ref[0]]
        _check(event["event_id"] == ref[2] and event["task_id"] == task_id
               and (event_type is None or event["event_type"] == event_type))
        return event

    def durable_record(self, claim_id):
        """None after a failed check (the caller then reads the task itself, which recovers)."""
        try:
            owner, seq, ref, _kind = self.root["durable"][claim_id]
            _check(isinstance(owner, str) and _is_ref(ref, 4))
            # the index holds active claims only: the row a task shard would hold for it
            return self._claim(self.store.events([ref[:3]]), owner, claim_id, ["active", seq, None, ref])
        except (Untrusted, KeyError, IndexError, TypeError, ValueError, AttributeError):
            if self.strict:
                raise Untrusted("durable") from None
            return None

    def _candidates(self, encoded):
        _check(isinstance(encoded, dict))
        for value in encoded.values():
            _check(isinstance(value, list) and len(value) == 3 and _is_ref(value[2]))
        events = self.store.events([v[2][:3] for v in encoded.values()])
        out = {}
        for candidate_id, (state, seq, ref) in encoded.items():
            _check(state in ("open", "confirmed", "dismissed") and _is_count(seq))
            event = events[ref[0]]
            p = event["payload"]
            _check(event["event_id"] == ref[2] and event["event_type"] in ("candidate_added", "proposal_added")
                   and p.get("candidate_id") == candidate_id)
            if event["event_type"] == "proposal_added":  # the agent's proposal: a candidate of its task
                out[candidate_id] = {"candidate_id": candidate_id, "statement": p["statement"],
                                     "facets": p["facets"], "signal_key": "proposal:" + candidate_id,
                                     "state": state, "task_count": 0, "seq": seq, "kind": "proposal",
                                     "task_id": event["task_id"], "scope": p["scope"], "at": ref}
                continue
            out[candidate_id] = {"candidate_id": candidate_id, "statement": p["statement"], "facets": p["facets"],
                                 "signal_key": p["signal_key"], "state": state, "task_count": p["task_count"],
                                 "seq": seq, "at": ref}
        return out

    def _recover(self, lazy, name):
        """Fold the ledger from its first byte to the root's checkpoint and take what is not loaded."""
        from intent_loop.storage.ledger import empty_verified, fold_lines, open_ledger, read_range

        fd, _st = open_ledger(self.paths)
        if fd is None:
            raise _changed()
        try:
            data = read_range(fd, 0, self.checkpoint["size"])
        finally:
            from intent_loop.base import fast_os

            fast_os.close(fd)
        fresh = fold_lines(data, empty_verified(self.reducer), self.reducer, project_id=self.paths.project_id)
        if (fresh.size, fresh.count, fresh.last_hash) != (self.checkpoint["size"], self.checkpoint["count"],
                                                          self.checkpoint["last_hash"]):
            raise _changed()
        for field, mapping in self.maps.items():
            mapping.fill(_stored(fresh.state, field), loading=name if mapping is lazy else None)
        self.recovered = True
        self.fresh = fresh.state
        if self.store.identity is not None:
            # Repair the cache now, at the same checkpoint and under the identity its root recorded
            # (so a ledger that grew since is still caught up from there): otherwise every later
            # read would meet the same bad shard and fold from the first byte again.
            from intent_loop.storage.cache import checkpoint

            checkpoint.save(self.paths, self.reducer, fresh, list(self.store.identity))


def _changed():
    return IntentLoopError(ErrorCode.LEDGER_CHAIN_BROKEN,
                           "the ledger no longer holds the lines its checkpoint was taken from; "
                           "run `intent-loop verify`")


def join(reducer, root, store, *, paths, checkpoint):
    """The cache-backed state of a loaded root (shards load on first access)."""
    _check(isinstance(root, dict) and _is_count(root["seq"]) and isinstance(root["durable"], dict)
           and isinstance(root["candidates"], dict) and isinstance(root["last_change"], dict)
           and _is_count(root["last_change"].get("seq"))
           and (root["last_change"].get("task_id") is None or isinstance(root["last_change"]["task_id"], str))
           and all(isinstance(k, str) and isinstance(v, list) and len(v) == 4 and isinstance(v[0], str)
                   for k, v in root["durable"].items())
           and isinstance(root["modes"], dict) and all(m in MODES for m in root["modes"].values())
           and isinstance(root["contract_floors"], dict)
           and all(isinstance(k, str) and type(v) is int and v > 0 for k, v in root["contract_floors"].items()))
    source = _Source(reducer, store, root, paths=paths, checkpoint=checkpoint)
    source.maps = {
        "tasks": LazyMap(source, shard_of=_task_shard, names=lambda: source.names("t"), per_key=True),
        "sessions": LazyMap(source, shard_of=_session_shard, names=lambda: source.names("s")),
        "signals": LazyMap(source, shard_of=_signal_shard, names=lambda: source.names("g")),
        "candidates": LazyMap(source, shard_of=_candidate_shard, names=lambda: ["c"] if root["candidates"] else []),
    }
    return {"seq": root["seq"], "last_change": dict(root["last_change"]), "modes": dict(root["modes"]),
            "durable": {claim_id: entry[0] for claim_id, entry in root["durable"].items()},
            "contract_floors": dict(root["contract_floors"]), **source.maps}

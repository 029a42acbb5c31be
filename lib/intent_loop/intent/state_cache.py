"""The project state in the sharded cache: what is split off, and how text comes back from the ledger.

The root (storage/cache/cache_store.py) keeps seq, last_change, the durable-claim index and the
candidates' lifecycle; each task is a shard `t-<task_id>` with the claims a hook may show, and
`h-<task_id>` with the others (intent/claim_records.py); session links live in 256 buckets
`s-xx` and promotion signals in 256 buckets `g-xx` (the reducer keys them by a digest of the
normalized statement, so no text is a key). Shards hold positions and lifecycle only: a claim is
`[state, seq, ended_by, ref]`, a label or a publication is a ref, and a ref is
`[offset, length, event_id, payload path...]` of the verified ledger line the text is in.
Loading a shard preads those lines, re-checks each one's own hash, its event id, project, task
and event type, and takes the claim, label, candidate statement or publication from there;
provenance (which decides what hooks may show) is derived from the event type, never read from
the cache.

In memory the state keeps the dict shape every consumer uses (`state["tasks"][id]["claims"]`
...): the maps are `LazyMap`s that load a shard on first access. A shard or pointer that fails a
check makes the cache untrusted: the state is re-folded from the first ledger byte up to the
root's checkpoint, what was not loaded yet is taken from that fold, and the next save rewrites
every shard.
"""
from intent_loop.base.canonical import dumps, loads, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claim_records import (
    ClaimRecords,
    Refolded,
    facts_of,
    is_hook_visible,
    light_record,
    omitted_kind,
)
from intent_loop.intent.event_types import CLAIM_SOURCES, MAX_CLAIM_EVENT_REFS, label_source
from intent_loop.storage.cache.cache_store import LazyMap, Untrusted

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


# -- writing ----------------------------------------------------------------------------------
_UNCHANGED = object()


def _split_claims(claims):
    """(shown rows, hidden rows or _UNCHANGED, summary or None) of a task's claims."""
    if isinstance(claims, ClaimRecords):
        shown, hidden, summary = claims.encoded()
        return shown, (_UNCHANGED if hidden is None else hidden), summary
    shown, hidden, records = {}, {}, []
    for claim_id, record in claims.items():
        if record.get("at") is None:
            raise _not_cacheable()
        row = [record["state"], record["seq"], record["ended_by"], record["at"]]
        if is_hook_visible(record):
            shown[claim_id] = row
        else:
            hidden[claim_id] = row + [facts_of(record)]
            records.append(record)
    from intent_loop.intent.claim_records import summary_of

    return shown, hidden, (summary_of(records) if records else None)


def _encode_task(task):
    """(the task shard's data, the hidden shard's data or _UNCHANGED; {} when it has none)."""
    refs = task.get("refs", {})
    label = refs.get("label") if task["label"] is not None else None
    published = refs.get("published") if task["published"] is not None else None
    if (task["label"] is not None and label is None) or (task["published"] is not None and published is None):
        raise _not_cacheable()
    claims, hidden, summary = _split_claims(task["claims"])
    out = {"mode": task["mode"], "created_at": task["created_at"], "changed_at": task["changed_at"],
           "changed_seq": task["changed_seq"], "last_seq": task["last_seq"], "claim_events": task["claim_events"],
           "observations": task["observations"], "publications": task["publications"], "label": label,
           "published": published, "claims": claims, "hidden": summary}
    for key in OPTIONAL_TASK_KEYS:
        if key in task:
            out[key] = task[key]
    return out, hidden


def _encode_candidates(candidates):
    out = {}
    for candidate_id, c in candidates.items():
        if c.get("at") is None:
            raise _not_cacheable()
        out[candidate_id] = [c["state"], c["seq"], c["at"]]
    return out


def _encode_durable(state, source):
    """{claim_id: [task_id, seq, ref, kind]}: the hook view builds other tasks' durable records
    from the root alone, and counts those it does not show by `kind` (state.omitted_kind; "" for
    one it shows). A task not loaded since the root was read still has the root's entry."""
    tasks = state["tasks"]
    out = {}
    for claim_id, task_id in state["durable"].items():
        if source is not None and not source.recovered and not tasks.is_loaded(task_id):
            out[claim_id] = source.root["durable"][claim_id]
            continue
        # .get, not [...]: an index naming a claim its task's shard lacks (a hand edit) raised
        # KeyError here, in the save after an append, so the append's Guard write never ran; a
        # state that disagrees with itself is just not saved (the scrub's full rebuild fixes it)
        task = tasks.get(task_id)
        record = None if task is None else task["claims"].get(claim_id)
        if record is None or record.get("at") is None:
            raise _not_cacheable()
        out[claim_id] = [task_id, record["seq"], record["at"], "" if is_hook_visible(record) else omitted_kind(record)]
    return out


def durable_kind(state, task_id, claim_id):
    """"" for a long-term claim a hook may show, else how it is counted, without reading its
    task or its words while the root's entry stands for it; None when there is no such claim."""
    source = _source_of(state)
    if source is None or source.recovered or state["tasks"].is_loaded(task_id):
        task = state["tasks"].get(task_id)
        record = None if task is None else task["claims"].get(claim_id)
        return None if record is None else ("" if is_hook_visible(record) else omitted_kind(record))
    entry = source.root["durable"].get(claim_id)
    kind = entry[3] if isinstance(entry, list) and len(entry) == 4 else None
    return kind if kind in ("", "imported", "inferred", "evidence", "unknown", "disputed", "explicit") else None


def durable_record(state, task_id, claim_id):
    """The record of an active long-term claim, from the root's pointer while its task is not loaded."""
    source = _source_of(state)
    tasks = state["tasks"]
    if source is None or source.recovered or tasks.is_loaded(task_id):
        task = tasks.get(task_id)
        return None if task is None else task["claims"].get(claim_id)
    return source.durable_record(claim_id) or tasks[task_id]["claims"].get(claim_id)


def _stored(state, field):
    """A map's items as a plain dict, for plain and lazy states alike."""
    value = state[field]
    return value.stored() if isinstance(value, LazyMap) else value


def _source_of(state):
    tasks = state["tasks"]
    return tasks._source if isinstance(tasks, LazyMap) and isinstance(tasks._source, _Source) else None


def split(state):
    """(root state, {shard name: data}, the Store it was loaded from or None, on_saved callback).

    A state folded from the ledger (plain dicts) or recovered after a failed check writes every
    shard; a cache-backed one only the shards it changed.
    """
    source = _source_of(state)
    full = source is None or source.recovered
    candidates = state["candidates"]
    if isinstance(candidates, LazyMap) and not candidates._loaded and source is not None:
        encoded_candidates = source.root["candidates"]  # never resolved: what the root said still holds
    else:
        encoded_candidates = _encode_candidates(_stored(state, "candidates"))
    root = {"seq": state["seq"], "last_change": state["last_change"], "modes": state["modes"],
            "durable": _encode_durable(state, source), "candidates": encoded_candidates,
            "contract_floors": state["contract_floors"]}
    shards = {}
    if full:
        for task_id, task in _stored(state, "tasks").items():
            shards[_task_shard(task_id)], hidden = _encode_task(task)
            if hidden is _UNCHANGED:  # a recovered state keeps cache-backed tasks: read their rest now
                hidden = _split_claims(dict(task["claims"].items()))[1]
            if hidden:
                shards[_hidden_shard(task_id)] = hidden
        for field in ("sessions", "signals"):
            for ik, value in _stored(state, field).items():
                shards.setdefault(SHARD_OF[field](ik), {})[ik] = value
    else:
        tasks = state["tasks"]
        for name in tasks.dirty:
            task = tasks._items.get(name[2:])
            hidden_name = _hidden_shard(name[2:])
            if task is None:
                shards[name] = None
                hidden = {}
            else:
                shards[name], hidden = _encode_task(task)
            if hidden is not _UNCHANGED and (hidden or source.store.entry(hidden_name) is not None):
                shards[hidden_name] = hidden or None
        for field in ("sessions", "signals"):
            mapping = state[field]
            for name in mapping.dirty:
                shards[name] = mapping.shard_items(name)

    def on_saved(store):
        if source is not None:
            source.store = store
            source.root = root
            source.recovered = False
            for field in MAPS:
                state[field].dirty.clear()

    return root, shards, (None if full else source.store), on_saved


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
            _check(isinstance(owner, str) and _is_count(seq) and _is_ref(ref, 4))
            events = self.store.events([ref[:3]])
            event = self._event(events, ref, owner, None)
            field, provenance = CLAIM_SOURCES[event["event_type"]]
            where = ref[3:]
            _check(where[0] == field and len(where) == (1 if field == "claim" else 2))
            claim = event["payload"][field] if field == "claim" else event["payload"][field][where[1]]
            _check(isinstance(claim, dict) and claim.get("claim_id") == claim_id)
        except (Untrusted, KeyError, IndexError, TypeError, ValueError, AttributeError):
            if self.strict:
                raise Untrusted("durable") from None
            return None
        return {"claim": claim, "state": "active", "seq": seq, "event_id": ref[2], "provenance": provenance,
                "ended_by": None, "actor": event["actor"], "at": ref, **_index(where)}

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


def materialize(state):
    """Load every shard of a cache-backed state now, so it stays readable after the ledger or the
    cache it came from is replaced (a deletion reads the old state after rewriting both). A state
    is otherwise a view of the cache it was loaded from: read it before such a rewrite, or
    materialize it."""
    for field in MAPS:
        if isinstance(state.get(field), LazyMap):
            state[field].stored()
    return state


def same_encoding(cached, fresh):
    """True when the cache-backed `cached` holds exactly what saving the plain fold `fresh` would
    write (the root's state and every shard's positions and lifecycle, byte for byte), without
    resolving a pointer: the fold's own pointers are to lines it just verified, so equal encodings
    are equal states. False says only "not proven equal": compare with `plain` then."""
    source = _source_of(cached)
    if source is None or source.recovered or _source_of(fresh) is not None:
        return False
    try:
        root, shards, _store, _on_saved = split(fresh)
        if dumps(root) != dumps(source.root):
            return False
        store = source.store
        names = {n for kind in "tsgh" for n in store.names(kind)}
        for name in names | set(shards):
            data, wanted = store.read(name), shards.get(name)
            if wanted is None:
                # a save of the fold writes no such shard; the cache may still list a session or
                # signal bucket its deletions emptied ({}), but anything else there ([], 0, a task
                # shard) is not what a save writes, and `or {}` would have taken it for nothing
                if not (isinstance(data, dict) and not data and not name.startswith("t-")):
                    return False
            elif dumps(data) != dumps(wanted):
                return False
        return True
    except (Untrusted, KeyError, IndexError, TypeError, ValueError, AttributeError):
        return False


def _plain_task(task):
    """The task with its claims as a dict, and the summary of its hidden claims: as the cache
    stored it for a cache-backed task, as a save would write it for a folded one (so a summary
    edited in the cache is a difference the scrub reports, though no claim's record changed)."""
    claims = task["claims"]
    if isinstance(claims, ClaimRecords):
        stored = claims.stored_summary
        return dict(task, claims=dict(claims.items()), hidden=stored)
    return dict(task, hidden=_split_claims(claims)[2])


def _durable_kinds(state):
    """{claim_id: kind} of the durable index: the root's own entries for a cache-backed state."""
    source = _source_of(state)
    if source is not None and not source.recovered:
        return {claim_id: entry[3] for claim_id, entry in source.root["durable"].items()}
    return {claim_id: durable_kind(state, owner, claim_id) for claim_id, owner in state["durable"].items()}


def plain(state, *, strict=False):
    """Every map of `state` as plain dicts under stored keys (loads every shard): for comparisons."""
    source = _source_of(state)
    if source is not None:
        source.strict = strict
    try:
        out = {field: _stored(state, field) for field in MAPS}
        out["tasks"] = {task_id: _plain_task(task) for task_id, task in out["tasks"].items()}
    finally:
        if source is not None:
            source.strict = False
    out.update(seq=state["seq"], last_change=state["last_change"], durable=state["durable"], modes=state["modes"],
               contract_floors=state["contract_floors"], durable_kinds=_durable_kinds(state))
    return out


# -- plans: a scratch copy that copies only what it touches --------------------------------------
_MISSING = object()


def _copy(value):
    claims = value.get("claims") if isinstance(value, dict) else None
    if isinstance(claims, ClaimRecords):  # a task: copy what it resolved, never read its hidden claims
        out = loads(dumps({k: v for k, v in value.items() if k != "claims"}))
        out["claims"] = claims.copy(_copy)
        return out
    return loads(dumps(value))


class Overlay:
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

    def __json__(self):
        return dict(self.items())

    def __iter__(self):
        keys = [k for k in self._base if k not in self._gone]
        keys += [k for k in self._own if k not in self._gone and k not in self._base]
        return iter(keys)

    def keys(self):
        return list(self)

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]

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

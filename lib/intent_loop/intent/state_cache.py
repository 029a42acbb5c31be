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
from intent_loop.base.canonical import dumps
from intent_loop.intent.cache_source import (
    MAPS,
    OPTIONAL_TASK_KEYS,
    SHARD_OF,
    _hidden_shard,
    _not_cacheable,
    _Source,
    _stored,
    _task_shard,
)
from intent_loop.intent.claim_records import (
    ClaimRecords,
    facts_of,
    is_hook_visible,
    omitted_kind,
)
from intent_loop.storage.cache.cache_store import Untrusted
from intent_loop.storage.cache.lazy_map import LazyMap

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

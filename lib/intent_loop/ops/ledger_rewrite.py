"""The ledger without a deleted task or claim: which events are dropped or rewritten, and the re-chained bytes.

Task deletion drops every event whose task_id is the task, and the task's ref from every
`contract_version_floor` (recovery's project-level record of Guard's versions; one left empty is
dropped). A candidate first proposed from that task is dropped too unless a surviving event
(confirm/dismiss in another task) refers to it; then its `candidate_added` event is kept with
task_id null (its statement is then reported as shared text).

Claim deletion:
- `claim_added` of the claim is dropped; it is removed from `task_started.initial_claims` and from
  `graph_imported.claims`/`superseded`; `claim_invalidated` events naming it are dropped; its id is
  removed from every other claim's `supersedes` and from `claim_replaced.supersedes`.
- When the deleted claim had superseded other claims (its `claim_replaced` event), those claims are
  NOT resurrected: deleting a replacement must never bring an older instruction back. The event is
  rewritten in place (same event id) into `claim_invalidated` of the first superseded claim with
  reason `superseding_claim_deleted` (one extra new event per further superseded id). The older claims
  therefore end as "invalidated" instead of "superseded".
- A `candidate_confirmed` event whose claim is deleted becomes `candidate_dismissed` (same event id),
  so the candidate is not proposed again.
In every case a dropped first event of a request hands its request fingerprint to the next kept
event of the same request, so an exact retry is still deduplicated. Ids of dropped events are also
removed from `contract_published.source_message_refs`.

The rewrite streams (`iter_runs`, `rewrite_streamed`): the plans see one request's run at a time,
with the two inputs that need the whole ledger (surviving references to candidates, the ids of
every dropped event) collected by a first pass, so a deletion's memory does not grow with history.
"""
import hashlib

from intent_loop.base import fast_os
from intent_loop.intent.event_types import TABLE
from intent_loop.storage.cache.bulk_verify import canonical_bytes as bulk_canonical_bytes
from intent_loop.storage.ledger import new_uuid4
from intent_loop.storage.sealing import recount_requests


def _hand_over_fingerprints(events, keep):
    """keep[i] is False for dropped events; move a dropped first event's fingerprint forward."""
    for index, event in enumerate(events):
        fingerprint = event["payload"].get("request_fingerprint")
        if keep[index] or fingerprint is None:
            continue
        for later in range(index + 1, len(events)):
            if events[later]["request_id"] != event["request_id"]:
                break
            if keep[later]:
                if "request_fingerprint" not in events[later]["payload"]:
                    events[later]["payload"] = dict(events[later]["payload"], request_fingerprint=fingerprint)
                break


def _drop_floors(events, task_id):
    """A deleted task's ref leaves every `contract_version_floor` (recovery's record of Guard's
    versions); a floor event left with no ref is dropped. Returns the events kept."""
    ref = f"intent:{task_id}"
    kept = []
    for event in events:
        floors = event["payload"].get("floors") if event["event_type"] == "contract_version_floor" else None
        if isinstance(floors, dict) and ref in floors:
            rest = {k: v for k, v in floors.items() if k != ref}
            if not rest:
                continue
            event["payload"] = dict(event["payload"], floors=rest)
        kept.append(event)
    return kept


def _scrub_refs(events, dropped_event_ids):
    for event in events:
        if event["event_type"] == "contract_published":
            refs = event["payload"].get("source_message_refs")
            if isinstance(refs, list) and any(r in dropped_event_ids for r in refs):
                event["payload"] = dict(event["payload"],
                                        source_message_refs=[r for r in refs if r not in dropped_event_ids])


def plan_task_deletion(events, task_id, *, referenced=None, dropped_ids=None):
    """(new events, dropped count) without every event of `task_id`.

    `events` may be one request's run of a streamed ledger: then `referenced` (candidate ids that
    surviving events name) and `dropped_ids` (every dropped event id) come from a first pass over
    the whole ledger (`scan_task_deletion`)."""
    keep = [e["task_id"] != task_id for e in events]
    if referenced is None:
        referenced = _referenced_candidates(events, task_id)
    for index, event in enumerate(events):
        if event["event_type"] == "candidate_added" and event["task_id"] == task_id \
                and event["payload"].get("candidate_id") in referenced:
            event["task_id"] = None  # the candidate outlives the task it was first seen in
            keep[index] = True
    _hand_over_fingerprints(events, keep)
    if dropped_ids is None:
        dropped_ids = {e["event_id"] for e, k in zip(events, keep, strict=True) if not k}
    kept = _drop_floors([e for e, k in zip(events, keep, strict=True) if k], task_id)
    _scrub_refs(kept, dropped_ids)
    return kept, len(events) - len(kept)


def _referenced_candidates(events, task_id):
    return {e["payload"].get("candidate_id") for e in events
            if e["task_id"] != task_id and e["event_type"] in ("candidate_confirmed", "candidate_dismissed")}


def _without(ids, claim_id):
    return [i for i in ids if i != claim_id]


def _strip_supersedes(claim, claim_id):
    if claim_id in claim.get("supersedes", []):
        claim = dict(claim, supersedes=_without(claim["supersedes"], claim_id))
    return claim


# The event types a claim's deletion may drop or rewrite (intent/event_types.py); every other type
# passes through as it is (its references to dropped events are scrubbed after: _scrub_refs).
TOUCHED_BY_CLAIM_DELETION = frozenset(name for name, t in TABLE.items() if t.on_claim_deletion != "kept")


def plan_claim_deletion(events, claim_id, *, dropped_ids=None):
    """(new events, dropped count, rewritten events [type changes]) without the claim.

    On one request's run of a streamed ledger, `dropped_ids` (every dropped event id of the whole
    ledger) comes from a first pass (`scan_claim_deletion`)."""
    out, keep, rewritten = [], [], []
    for event in events:
        etype, payload = event["event_type"], event["payload"]
        if etype not in TOUCHED_BY_CLAIM_DELETION:
            out.append(event), keep.append(True)
            continue
        if etype == "claim_added" and payload["claim"]["claim_id"] == claim_id:
            out.append(event), keep.append(False)
            continue
        if etype == "claim_invalidated" and payload.get("claim_id") == claim_id:
            out.append(event), keep.append(False)
            continue
        if etype == "task_started" and any(c["claim_id"] == claim_id for c in payload.get("initial_claims", [])):
            payload = dict(payload, initial_claims=[c for c in payload["initial_claims"] if c["claim_id"] != claim_id])
        if etype == "task_started":
            payload = dict(payload, initial_claims=[_strip_supersedes(c, claim_id)
                                                    for c in payload.get("initial_claims", [])])
        elif etype == "graph_imported":
            payload = dict(payload,
                           claims=[_strip_supersedes(c, claim_id)
                                   for c in payload["claims"] if c["claim_id"] != claim_id],
                           superseded=_without(payload.get("superseded", []), claim_id))
        elif etype == "claim_added":
            payload = dict(payload, claim=_strip_supersedes(payload["claim"], claim_id))
        elif etype == "claim_replaced":
            olds = _without(payload["supersedes"], claim_id)
            if payload["claim"]["claim_id"] == claim_id:
                extra = {k: v for k, v in payload.items() if k == "request_fingerprint"}
                if not olds:
                    out.append(event), keep.append(False)
                    continue
                for n, old in enumerate(olds):
                    new = dict(event) if n == 0 else dict(event, event_id=new_uuid4())
                    new["event_type"] = "claim_invalidated"
                    new["payload"] = dict(extra if n == 0 else {}, claim_id=old, reason="superseding_claim_deleted")
                    out.append(new), keep.append(True)
                    rewritten.append({"event_id": new["event_id"], "from": "claim_replaced",
                                      "to": "claim_invalidated", "claim_id": old})
                continue
            payload = dict(payload, supersedes=olds, claim=_strip_supersedes(payload["claim"], claim_id))
        elif etype == "candidate_confirmed" and payload["claim"]["claim_id"] == claim_id:
            new = dict(event, event_type="candidate_dismissed",
                       payload={k: v for k, v in payload.items() if k in ("candidate_id", "request_fingerprint")})
            out.append(new), keep.append(True)
            rewritten.append({"event_id": event["event_id"], "from": "candidate_confirmed",
                              "to": "candidate_dismissed"})
            continue
        elif etype == "candidate_confirmed":
            payload = dict(payload, claim=_strip_supersedes(payload["claim"], claim_id))
        out.append(dict(event, payload=payload) if payload is not event["payload"] else event)
        keep.append(True)
    _hand_over_fingerprints(out, keep)
    dropped_here = {e["event_id"] for e, k in zip(out, keep, strict=True) if not k}
    kept = [e for e, k in zip(out, keep, strict=True) if k]
    _scrub_refs(kept, dropped_here if dropped_ids is None else dropped_ids)
    return kept, len(dropped_here), rewritten


# -- the streamed rewrite: bounded memory at any ledger size ------------------------------------------
# The plans above work on lists. A streamed deletion feeds them one request's run (consecutive
# events with one request id) at a time: every rule is local to a run except two, whose inputs a
# first pass over the ledger collects (the candidates that surviving events name, and the ids of
# every dropped event, which publications lose from their source_message_refs).

def iter_runs(fd, size):
    """Lists of consecutive events with one request id, parsed from the open ledger's [0, size)."""
    from intent_loop.storage.cache.bulk_verify import iter_lines
    from intent_loop.storage.cache.bulk_verify import loads as fast_loads

    def lines():
        after = 0
        for offset, line in iter_lines(fd, 0, size):
            after = offset + len(line) + 1
            yield line
        if after < size:  # a verified last line without its LF (Verified.missing_lf)
            yield fast_os.pread(fd, size - after, after)

    run = []
    for line in lines():
        event = fast_loads(line)
        if run and event["request_id"] != run[0]["request_id"]:
            yield run
            run = []
        run.append(event)
    if run:
        yield run


def scan_task_deletion(fd, size, task_id):
    """First pass: (candidate ids that surviving events name, ids of every event that goes)."""
    referenced, candidates_of_task, task_events = set(), {}, []
    for run in iter_runs(fd, size):
        referenced |= _referenced_candidates(run, task_id)
        for event in run:
            if event["task_id"] == task_id:
                task_events.append(event["event_id"])
                if event["event_type"] == "candidate_added":
                    candidates_of_task[event["event_id"]] = event["payload"].get("candidate_id")
    dropped = {i for i in task_events if candidates_of_task.get(i, _NONE) not in referenced}
    return referenced, dropped


_NONE = object()


def scan_claim_deletion(fd, size, claim_id):
    """First pass: the ids of every event that goes."""
    dropped = set()
    for run in iter_runs(fd, size):
        ids = {e["event_id"] for e in run}
        kept, _count, _rewritten = plan_claim_deletion(run, claim_id, dropped_ids=set())
        dropped |= ids - {e["event_id"] for e in kept}
    return dropped


def chain_once(event, prev_hash):
    """(event_hash, line with LF): what `sealing.chain` gives, with one canonical serialisation
    instead of two, for an event parsed from the ledger. The hash covers the event without
    event_hash; in canonical order that field sits right after the actor, so the line is the
    hashed body with the field put in there.
    (tests/storage/test_streaming_and_upkeep.py checks it against sealing.chain.)"""
    body = dict(event, prev_hash=prev_hash)
    body.pop("event_hash", None)
    # a deletion re-chains every later line, so this runs for most of the ledger: orjson's bytes
    # where they are the canonical form (bulk_verify.canonical_bytes) and hashlib's sha256 (several
    # times faster than the builtin _sha256 on ~1 KB lines) took a 100,000-event delete from ~8 s
    data = bulk_canonical_bytes(body)
    digest = hashlib.sha256(data).hexdigest()
    at = 12 + len(body["actor"])  # after '{"actor":"' + actor + '",' (actors are plain ASCII words)
    return digest, data[:at] + b'"event_hash":"' + digest.encode() + b'",' + data[at:] + b"\n"


def rewrite_streamed(fd, size, out_fd, plan_run):
    """Second pass: write the re-chained ledger to `out_fd`, one request's run at a time.

    `plan_run(run)` returns (kept events, dropped count, rewritten entries). Returns (count,
    first changed line or None, dropped, rewritten). Runs that meet again once what divided them
    is dropped are recounted together, as `reseal` would."""
    from intent_loop.storage.atomic import write_all

    old_hashes = []
    state = {"prev": None, "index": 0, "first": None}
    dropped_total, rewritten_total, pending = 0, [], []

    buffered = []

    def flush():
        for event in recount_requests(pending):
            digest, line = chain_once(event, state["prev"])
            index = state["index"]
            if state["first"] is None and (index >= len(old_hashes) or old_hashes[index] != digest):
                state["first"] = index + 1
            state["prev"], state["index"] = digest, index + 1
            buffered.append(line)
        pending.clear()
        if len(buffered) >= 1024:
            write_all(out_fd, b"".join(buffered))
            buffered.clear()

    for run in iter_runs(fd, size):
        old_hashes.extend(e["event_hash"] for e in run)
        kept, dropped, rewritten = plan_run(run)
        dropped_total += dropped
        rewritten_total.extend(rewritten)
        if not kept:
            continue
        if pending and pending[-1]["request_id"] != kept[0]["request_id"]:
            flush()
        pending.extend(kept)
    flush()
    write_all(out_fd, b"".join(buffered))
    return state["index"], state["first"], dropped_total, rewritten_total

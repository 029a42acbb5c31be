"""The ledger without a deleted task or claim: which events are dropped or rewritten, and the re-chained bytes.

Task deletion drops every event whose task_id is the task. A candidate first proposed from that
task is dropped too unless a surviving event (confirm/dismiss in another task) refers to it; then its
`candidate_added` event is kept with task_id null (its statement is then reported as shared text).

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
"""
from intent_loop.storage.canonical import loads
from intent_loop.storage.ledger import new_uuid4
from intent_loop.storage.sealing import chain, recount_requests


def parse_events(data):
    return [loads(line) for line in data.split(b"\n") if line]


def reseal(events, old_events):
    """Re-chain `events`; returns (bytes, count, first line that differs from the old ledger or None)."""
    old_hashes = [event["event_hash"] for event in old_events]
    events = recount_requests(list(events))  # a request that lost events states its new length
    out, prev, first_changed = [], None, None
    for index, event in enumerate(events):
        event, line = chain(event, prev_hash=prev)
        if first_changed is None and (index >= len(old_hashes) or old_hashes[index] != event["event_hash"]):
            first_changed = index + 1
        prev = event["event_hash"]
        out.append(line)
    return b"".join(out), len(events), first_changed


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


def _scrub_refs(events, dropped_event_ids):
    for event in events:
        if event["event_type"] == "contract_published":
            refs = event["payload"].get("source_message_refs")
            if isinstance(refs, list) and any(r in dropped_event_ids for r in refs):
                event["payload"] = dict(event["payload"],
                                        source_message_refs=[r for r in refs if r not in dropped_event_ids])


def plan_task_deletion(events, task_id):
    """(new events, dropped count) without every event of `task_id`."""
    keep = [e["task_id"] != task_id for e in events]
    referenced = {e["payload"].get("candidate_id") for e, k in zip(events, keep, strict=True)
                  if k and e["event_type"] in ("candidate_confirmed", "candidate_dismissed")}
    for index, event in enumerate(events):
        if event["event_type"] == "candidate_added" and event["task_id"] == task_id \
                and event["payload"].get("candidate_id") in referenced:
            event["task_id"] = None  # the candidate outlives the task it was first seen in
            keep[index] = True
    _hand_over_fingerprints(events, keep)
    dropped_ids = {e["event_id"] for e, k in zip(events, keep, strict=True) if not k}
    kept = [e for e, k in zip(events, keep, strict=True) if k]
    _scrub_refs(kept, dropped_ids)
    return kept, len(events) - len(kept)


def _without(ids, claim_id):
    return [i for i in ids if i != claim_id]


def _strip_supersedes(claim, claim_id):
    if claim_id in claim.get("supersedes", []):
        claim = dict(claim, supersedes=_without(claim["supersedes"], claim_id))
    return claim


def plan_claim_deletion(events, claim_id):
    """(new events, dropped count, rewritten events [type changes]) without the claim."""
    out, keep, rewritten = [], [], []
    for event in events:
        etype, payload = event["event_type"], event["payload"]
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
    dropped_ids = {e["event_id"] for e, k in zip(out, keep, strict=True) if not k}
    kept = [e for e, k in zip(out, keep, strict=True) if k]
    _scrub_refs(kept, dropped_ids)
    return kept, len(dropped_ids), rewritten

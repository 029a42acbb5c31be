"""Verified physical deletion of a task or a claim: rewrite, re-chain, clear derived copies, scan.

Both operations need the exact typed confirmation (`DELETE TASK <full task id>`, `DELETE CLAIM
<full claim id>`). Under the project lock the ledger is rewritten without the deleted content, every
following event is re-chained (new prev_hash/event_hash, same event ids), the new ledger is verified
in full before it replaces the old one, and then every derived copy is cleared: all of `cache/`
(but its empty `deferred.lock`),
quarantine files that name a deleted id or statement or cannot be attributed (torn-tail digests and
unreadable files), our Guard provider file when it holds that task, and private-session control
files naming a deleted task. Finally every file under the project directory is scanned for the
deleted ids and the exact JSON-encoded deleted statements.

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
import os

from intent_loop.intent import private_mode

from intent_loop.guard import provider
from intent_loop.storage.canonical import dumps, loads
from intent_loop.storage import quarantine
from intent_loop.storage.pending_work import PENDING_FILE
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage.ledger import chain, is_project_present, is_uuid, new_uuid4
from intent_loop.storage.transaction import Transaction
from intent_loop.intent.state import REDUCER

_NO_TASK_HINT = "see `intent-loop status` for the full ids"


def _confirm(expected, confirm):
    if confirm != expected:
        raise IntentLoopError(ErrorCode.CONFIRMATION_MISMATCH,
                              f'the confirmation must be exactly "{expected}"; nothing was deleted')




def _parse(data):
    return [loads(line) for line in data.split(b"\n") if line]


def _reseal(events, old_events):
    """Re-chain `events`; returns (bytes, count, first line that differs from the old ledger or None)."""
    old_hashes = [event["event_hash"] for event in old_events]
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


# -- planning the rewrite -----------------------------------------------------------------------
def plan_task_deletion(events, task_id):
    """(new events, dropped count) without every event of `task_id`."""
    keep = [e["task_id"] != task_id for e in events]
    referenced = {e["payload"].get("candidate_id") for e, k in zip(events, keep)
                  if k and e["event_type"] in ("candidate_confirmed", "candidate_dismissed")}
    for index, event in enumerate(events):
        if event["event_type"] == "candidate_added" and event["task_id"] == task_id \
                and event["payload"].get("candidate_id") in referenced:
            event["task_id"] = None  # the candidate outlives the task it was first seen in
            keep[index] = True
    _hand_over_fingerprints(events, keep)
    dropped_ids = {e["event_id"] for e, k in zip(events, keep) if not k}
    kept = [e for e, k in zip(events, keep) if k]
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
            payload = dict(payload, initial_claims=[_strip_supersedes(c, claim_id) for c in payload.get("initial_claims", [])])
        elif etype == "graph_imported":
            payload = dict(payload,
                           claims=[_strip_supersedes(c, claim_id) for c in payload["claims"] if c["claim_id"] != claim_id],
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
            rewritten.append({"event_id": event["event_id"], "from": "candidate_confirmed", "to": "candidate_dismissed"})
            continue
        elif etype == "candidate_confirmed":
            payload = dict(payload, claim=_strip_supersedes(payload["claim"], claim_id))
        out.append(dict(event, payload=payload) if payload is not event["payload"] else event)
        keep.append(True)
    _hand_over_fingerprints(out, keep)
    dropped_ids = {e["event_id"] for e, k in zip(out, keep) if not k}
    kept = [e for e, k in zip(out, keep) if k]
    _scrub_refs(kept, dropped_ids)
    return kept, len(dropped_ids), rewritten


# -- clearing derived copies ------------------------------------------------------------------
def _rel(paths, path):
    return os.path.relpath(path, paths.dir)


def _clear_cache(paths):
    cleared = []
    try:
        names = sorted(os.listdir(paths.cache_dir))
    except FileNotFoundError:
        return cleared
    for name in names:
        path = os.path.join(paths.cache_dir, name)
        if name == PENDING_FILE:
            continue  # empty, and detached hook writers may hold it (their waiters need it)
        if os.path.isfile(path) or os.path.islink(path):
            os.unlink(path)
            cleared.append({"path": _rel(paths, path), "why": "derived cache"})
    return cleared


def _file_bytes(path):
    st = os.lstat(path)
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    with open(path, "rb") as fh:
        return fh.read(max(st.st_size, 0) + 1)


def _clear_quarantine(paths, needles):
    """Remove quarantine files naming a deleted id/statement, or that cannot be attributed."""
    cleared, kept = [], []
    try:
        names = sorted(os.listdir(paths.quarantine_dir))
    except FileNotFoundError:
        return cleared, kept
    remove = {}
    for name in names:
        path = os.path.join(paths.quarantine_dir, name)
        try:
            data = _file_bytes(path)
        except OSError:
            data = None
        if data is None:
            remove[name] = "unreadable, cannot be attributed"
            continue
        if quarantine.is_torn_tail(name):
            remove[name] = "torn-tail digest, cannot be attributed to a task"
        elif any(n in data for n in needles):
            remove[name] = "names a deleted id or statement"
    # a suffix and its manifest go together
    for name in list(remove):
        twin = quarantine.twin_of(name)
        if twin in names and twin not in remove:
            remove[twin] = "belongs to a removed quarantine file"
    for name in names:
        path = os.path.join(paths.quarantine_dir, name)
        if name in remove:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    continue
                os.unlink(path)
                cleared.append({"path": _rel(paths, path), "why": remove[name]})
            except OSError:
                pass
        else:
            kept.append(_rel(paths, path))
    return cleared, kept


def _clear_provider(paths, old_state, task_id, workspace, env):
    if workspace is None:
        return []
    path = provider.provider_path(workspace, env or {})
    fstate = provider.read_file_state(path, old_state)
    if fstate["kind"] == "ours" and fstate["task_id"] == task_id:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return []
        return [{"path": path, "why": f"Guard provider file of task {task_id}; `intent-loop contract publish` writes it again"}]
    return []


def _clear_private(paths, task_id):
    cleared = []
    for session in private_mode.controls_for_task(paths, task_id):
        path = private_mode.control_path(paths, session)
        try:
            os.unlink(path)
            cleared.append({"path": _rel(paths, path), "why": "private-session control naming the task"})
        except FileNotFoundError:
            pass
    return cleared


# -- the scan -----------------------------------------------------------------------------------
def _live_texts(state):
    texts = set()
    for task in state["tasks"].values():
        for record in task["claims"].values():
            texts.add(record["claim"]["statement"])
    for candidate in state["candidates"].values():
        texts.add(candidate["statement"])
    return texts


def scan(paths, *, ids, statements, live_state):
    """Search every file under the project directory for `ids` and JSON-encoded `statements`.

    `statements` maps claim id -> statement. A statement still held by a surviving claim or
    candidate is shared text, reported but not a failure. Reports never repeat the text itself.
    """
    live = _live_texts(live_state)
    needles = [(("id", i), i.encode()) for i in sorted(ids)]
    shared_claims = {}
    for cid, text in sorted(statements.items()):
        encoded = dumps(text).encode("utf-8")
        if text in live:
            shared_claims[cid] = encoded
        else:
            needles.append((("statement", cid), encoded))
    hits, shared = [], {}
    for dirpath, dirnames, filenames in os.walk(paths.dir):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                data = _file_bytes(path)
            except OSError:
                data = None
            if data is None:
                continue
            rel = _rel(paths, path)
            for (kind, what), needle in needles:
                if needle in data:
                    hits.append({"file": rel, "kind": kind, ("id" if kind == "id" else "claim_id"): what})
            for cid, needle in shared_claims.items():
                if needle in data:
                    shared.setdefault(cid, []).append(rel)
    shared_text = [{"claim_id": cid, "files": files,
                    "why": "the same statement is still held by another live claim or candidate"}
                   for cid, files in sorted(shared.items())]
    return {"clean": not hits, "hits": hits, "shared_text": shared_text,
            "ids_checked": len(ids), "statements_checked": len(statements)}


# -- the operations -----------------------------------------------------------------------------
def _rewrite(tx, old_events, new_events, *, dropped):
    new_data, count, first = _reseal(new_events, old_events)
    tx.replace_ledger(new_data, expect_count=count)
    rechained = [first, count] if first is not None and first <= count else None
    return {"rechained": rechained, "removed_events": dropped, "events_after": count}


def _finish(paths, tx, old_state, *, task_id, whole_task, ids, statements, workspace, env):
    cleared = _clear_cache(paths)
    needles = [i.encode() for i in ids] + [dumps(s).encode("utf-8") for s in statements.values()]
    q_cleared, _q_kept = _clear_quarantine(paths, needles)
    cleared += q_cleared
    cleared += _clear_provider(paths, old_state, task_id, workspace, env)
    if whole_task:
        cleared += _clear_private(paths, task_id)
    report = scan(paths, ids=ids, statements=statements, live_state=tx.state)
    return cleared, report


def _open(paths):
    if not is_project_present(paths):
        raise IntentLoopError(ErrorCode.TASK_NOT_FOUND, f"this project has no ledger; {_NO_TASK_HINT}")


def delete_task(paths, task_id, *, confirm, workspace=None, env=None, deadline):
    """Physically delete every event of `task_id`; returns the report."""
    _confirm(f"DELETE TASK {task_id}", confirm)
    if not is_uuid(task_id):
        raise IntentLoopError(ErrorCode.TASK_NOT_FOUND, f"give the full task id; {_NO_TASK_HINT}")
    _open(paths)
    with Transaction(paths, REDUCER, deadline=deadline) as tx:
        old_state = tx.state
        task = old_state["tasks"].get(task_id)
        if task is None:
            raise IntentLoopError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id} in this project; {_NO_TASK_HINT}")
        statements = {cid: r["claim"]["statement"] for cid, r in task["claims"].items()}
        ids = {task_id, *task["claims"]}
        old_events = _parse(tx.data)
        new_events, dropped = plan_task_deletion(old_events, task_id)
        result = _rewrite(tx, old_events, new_events, dropped=dropped)
        cleared, report = _finish(paths, tx, old_state, task_id=task_id, whole_task=True, ids=ids,
                                  statements=statements, workspace=workspace, env=env)
    return {"ok": True, "deleted": "task", "task_id": task_id, "claims_deleted": len(statements),
            **result, "rewritten": [], "cleared": cleared, "scan": report}


def delete_claim(paths, claim_id, *, confirm, workspace=None, env=None, deadline):
    """Physically delete one claim; returns the report."""
    _confirm(f"DELETE CLAIM {claim_id}", confirm)
    if not isinstance(claim_id, str) or not claim_id or any(c.isspace() for c in claim_id):
        raise IntentLoopError(ErrorCode.CLAIM_NOT_FOUND, "give the full claim id; `intent-loop show --all` lists them")
    _open(paths)
    with Transaction(paths, REDUCER, deadline=deadline) as tx:
        old_state = tx.state
        owner = next((t for t in old_state["tasks"].values() if claim_id in t["claims"]), None)
        if owner is None:
            raise IntentLoopError(ErrorCode.CLAIM_NOT_FOUND,
                                  f"no claim {claim_id} in this project; `intent-loop show --all` lists them")
        statement = owner["claims"][claim_id]["claim"]["statement"]
        old_events = _parse(tx.data)
        new_events, dropped, rewritten = plan_claim_deletion(old_events, claim_id)
        result = _rewrite(tx, old_events, new_events, dropped=dropped)
        cleared, report = _finish(paths, tx, old_state, task_id=owner["task_id"], whole_task=False,
                                  ids={claim_id}, statements={claim_id: statement}, workspace=workspace, env=env)
    return {"ok": True, "deleted": "claim", "claim_id": claim_id, "task_id": owner["task_id"], **result,
            "rewritten": rewritten, "cleared": cleared, "scan": report}



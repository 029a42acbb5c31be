"""Import a validated graph (`graph_format`) into a task as explicit_import evidence, in one locked mutation.

Import writes nothing when any problem is found (IMPORT_INVALID with the full list in
`details["problems"]`). Accepted claims get fresh UUIDs and `source_ref = {"kind":
"explicit_import", "sha256": ...}` where the hash covers the graph's digest, the original claim id
and the original source_ref, so source identities survive only inside that hash.

Mapping decision: an `explicit`/`user` claim requires a direct user event, which an import never is,
so it is imported as `evidence`/`evidence` (the text is kept: it is evidence of what the user said
elsewhere). Every other legal pair (inferred with its confidence, evidence, unknown, disputed) keeps
its role and status. The reducer marks every imported record with provenance "import", so none of
them is ever hook-visible or part of the Guard projection.
"""
import time

from intent_loop.base.canonical import canonical_bytes, sha256_hex
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.ops.graph_format import FORMAT, IMPORT_SOURCE_KIND, VERSION, validate
from intent_loop.redaction.redact import redact
from intent_loop.storage.ledger import Draft, new_uuid4
from intent_loop.storage.transaction import Planned, mutate


def _invalid(problems):
    shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
    return IntentLoopError(ErrorCode.IMPORT_INVALID,
                           f"the graph was not imported ({len(problems)} problems): {shown}; nothing was written",
                           details={"problems": problems})


def prepare_import(data):
    """Validate and map a graph: (graph_sha256, task info, claims, superseded ids, invalidated ids)."""
    doc, problems = validate(data)
    if problems:
        raise _invalid(problems)
    graph_sha = sha256_hex(bytes(data))
    new_ids = {entry["claim_id"]: new_uuid4() for entry in doc["claims"]}
    claims, superseded, invalidated = [], [], []
    for entry in doc["claims"]:
        old_id = entry["claim_id"]
        status, role = entry["epistemic_status"], entry["role"]
        if status == "explicit":
            status, role = "evidence", "evidence"
        provenance_hash = sha256_hex(canonical_bytes({
            "graph_sha256": graph_sha, "claim_id": old_id, "source_ref": entry.get("source_ref")}))
        claim = {
            "claim_id": new_ids[old_id],
            "statement": redact(entry["statement"]),
            "role": role,
            "epistemic_status": status,
            "source_ref": {"kind": IMPORT_SOURCE_KIND, "sha256": provenance_hash},
            "scope": entry["scope"],
            "valid_from": entry["valid_from"],
            "last_confirmed": entry.get("last_confirmed"),
            "supersedes": [new_ids[s] for s in dict.fromkeys(entry.get("supersedes", []))],
            "facets": list(entry["facets"]),
        }
        if status == "inferred":
            claim["confidence"] = entry["confidence"]
        claims_mod.check_claim(claim)
        claims.append(claim)
        if entry["state"] == "superseded":
            superseded.append(new_ids[old_id])
        elif entry["state"] == "invalidated":
            invalidated.append(new_ids[old_id])
    task = doc["task"]
    label = redact(task["label"]) if task.get("label") is not None else None
    return graph_sha, {"label": label, "source_task_created_at": task["created_at"]}, claims, superseded, invalidated


def import_graph(paths, reducer, data, *, task_id=None, deadline, workspace=None, env=None, now=time.time):
    """Import a graph into `task_id` (an existing task that records) or a new task (mode on).

    One locked mutation with a fresh request id. Returns a report dict.
    """
    from intent_loop.intent import tasks

    graph_sha, info, claims, superseded, invalidated = prepare_import(data)
    request_id = f"import:{new_uuid4()}"

    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(now()))
        if task_id is not None:
            target = tasks.resolve_task(the_plan.state, task_id)
            mode = the_plan.task(target)["mode"]
            if mode == "off":
                raise IntentLoopError(ErrorCode.TASK_OFF, "this task is off; `intent-loop on --task ID` re-enables it")
            if mode == "private":
                raise IntentLoopError(ErrorCode.TASK_PRIVATE, "this task is private; nothing is recorded until `on`")
            started = False
        else:
            target = tasks.derived_task_id(paths.project_id, request_id)
            tasks.start_task(the_plan, task_id=target, mode="on", label=info["label"], started_by="import")
            started = True
        the_plan.add(Draft("graph_imported", target, "system", {
            "claims": claims, "superseded": superseded, "graph_format": f"{FORMAT}/{VERSION}",
            "source": {"kind": IMPORT_SOURCE_KIND, "sha256": graph_sha},
        }))
        for claim_id in invalidated:
            the_plan.add(Draft("claim_invalidated", target, "system",
                               {"claim_id": claim_id, "reason": "invalidated_in_imported_graph"}))
        return Planned(the_plan.drafts, detail={"task_id": target, "started": started})

    def after_commit(tx, _mutation):
        if workspace is None:
            return None
        from intent_loop.guard import provider  # keep the Guard file in step with the (unchanged) projection

        try:
            return provider.refresh(tx, workspace=workspace, env=env or {})
        except IntentLoopError as exc:  # a Guard file failure never undoes the import
            return {"action": "error", "reason": exc.message, "code": exc.code}
        except OSError as exc:
            return {"action": "error", "reason": str(exc), "code": ErrorCode.PROVIDER_WRITE_FAILED}

    mutation = mutate(paths, reducer, request_id=request_id, operation="graph.import",
                      params={"graph_sha256": graph_sha, "task": task_id},
                      plan=plan, deadline=deadline, after_commit=after_commit)
    return {
        "ok": True, "task_id": mutation.detail["task_id"], "started_task": mutation.detail["started"],
        "imported_claims": len(claims), "superseded": len(superseded), "invalidated": len(invalidated),
        "claim_ids": [c["claim_id"] for c in claims], "graph_sha256": graph_sha, "request_id": request_id,
        "events": [e["event_type"] for e in mutation.events], "publication": mutation.committed,
    }

"""Verified physical deletion of a task or a claim: rewrite, re-chain, clear derived copies, scan.

Both operations need the exact typed confirmation (`DELETE TASK <full task id>`, `DELETE CLAIM
<full claim id>`). Under the project lock the ledger is rewritten without the deleted content
(`ledger_rewrite` decides which events go and how the others change), every following event is
re-chained (new prev_hash/event_hash, same event ids), the new ledger is verified in full before it
replaces the old one, and then every derived copy is cleared and the project directory is scanned
for what remains (`derived_copies`).
"""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.state import REDUCER
from intent_loop.intent.state_cache import materialize
from intent_loop.ops import derived_copies
from intent_loop.ops.ledger_rewrite import (
    plan_claim_deletion,
    plan_task_deletion,
    rewrite_streamed,
    scan_claim_deletion,
    scan_task_deletion,
)
from intent_loop.storage.ledger import is_project_present, is_uuid
from intent_loop.storage.replacement import replace_ledger_streamed
from intent_loop.storage.transaction import Transaction

_NO_TASK_HINT = "see `intent-loop status` for the full ids"


def _confirm(expected, confirm):
    if confirm != expected:
        raise IntentLoopError(ErrorCode.CONFIRMATION_MISMATCH,
                              f'the confirmation must be exactly "{expected}"; nothing was deleted')


def _rewrite(tx, plan_run):
    """Re-chain the ledger through `plan_run` (one request's run at a time), streamed: the old
    ledger is read twice in chunks and the new one is written to a temp file, verified, then
    renamed over it, so memory stays bounded at any size."""
    size = tx.verified.size

    def write(out_fd):
        return rewrite_streamed(tx.fd, size, out_fd, plan_run)

    count, first, dropped, rewritten = replace_ledger_streamed(tx, write)
    rechained = [first, count] if first is not None and first <= count else None
    return {"rechained": rechained, "removed_events": dropped, "events_after": count}, rewritten


def _finish(paths, tx, old_state, *, task_id, whole_task, ids, statements, workspace, env):
    cleared = derived_copies.clear(paths, old_state, task_id=task_id, whole_task=whole_task, ids=ids,
                                   statements=statements, workspace=workspace, env=env)
    report = derived_copies.scan(paths, ids=ids, statements=statements, live_state=tx.state)
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
        old_state = materialize(tx.state)  # still read after the ledger and the cache are replaced
        task = old_state["tasks"].get(task_id)
        if task is None:
            raise IntentLoopError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id} in this project; {_NO_TASK_HINT}")
        statements = {cid: r["claim"]["statement"] for cid, r in task["claims"].items()}
        ids = {task_id, *task["claims"]}
        referenced, dropped_ids = scan_task_deletion(tx.fd, tx.verified.size, task_id)
        result, _rewritten = _rewrite(tx, lambda run: (*plan_task_deletion(run, task_id, referenced=referenced,
                                                                           dropped_ids=dropped_ids), []))
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
        old_state = materialize(tx.state)  # still read after the ledger and the cache are replaced
        owner = next((t for t in old_state["tasks"].values() if claim_id in t["claims"]), None)
        if owner is None:
            raise IntentLoopError(ErrorCode.CLAIM_NOT_FOUND,
                                  f"no claim {claim_id} in this project; `intent-loop show --all` lists them")
        statement = owner["claims"][claim_id]["claim"]["statement"]
        dropped_ids = scan_claim_deletion(tx.fd, tx.verified.size, claim_id)
        result, rewritten = _rewrite(tx, lambda run: plan_claim_deletion(run, claim_id, dropped_ids=dropped_ids))
        cleared, report = _finish(paths, tx, old_state, task_id=owner["task_id"], whole_task=False,
                                  ids={claim_id}, statements={claim_id: statement}, workspace=workspace, env=env)
    return {"ok": True, "deleted": "claim", "claim_id": claim_id, "task_id": owner["task_id"], **result,
            "rewritten": rewritten, "cleared": cleared, "scan": report}

"""The one result envelope of every tool, as structuredContent and as text."""
from intent_loop.base.canonical import dumps
from intent_loop.errors import ErrorCode

SCHEMA_VERSION = 1
RETRYABLE = frozenset((ErrorCode.LOCK_TIMEOUT, ErrorCode.LOCK_CONFLICT, ErrorCode.DEADLINE_EXCEEDED,
                       ErrorCode.DURABILITY_UNCERTAIN, ErrorCode.WRITE_FAILED))
LEDGER_DAMAGE = frozenset((ErrorCode.LEDGER_MALFORMED, ErrorCode.LEDGER_HASH_MISMATCH, ErrorCode.LEDGER_CHAIN_BROKEN,
                           ErrorCode.LEDGER_TORN_TAIL, ErrorCode.FOREIGN_PROJECT, ErrorCode.FUTURE_SCHEMA,
                           ErrorCode.INVALID_TEXT, ErrorCode.INVALID_EVENT))
RECOVER_HINT = ("the user can run `intent-loop verify` to see the damage and `intent-loop recover` to repair it "
                "(a dry run first); nothing was changed")


def success(operation, *, project_id, task_id, result):
    return {"ok": True, "schema_version": SCHEMA_VERSION, "operation": operation, "project_id": project_id,
            "task_id": task_id, "result": result}


def failure(operation, exc, *, project_id=None, task_id=None):
    """An IntentLoopError as the envelope's error; a damaged ledger gets a diagnostic naming recover."""
    error = {"code": exc.code, "message": exc.message, "retryable": exc.code in RETRYABLE}
    if exc.code in LEDGER_DAMAGE:
        error["message"] = f"{exc.message}; {RECOVER_HINT}"
        error["diagnostic"] = {"line": exc.line, "recover": "intent-loop recover", **exc.details}
    elif exc.details:
        error["details"] = exc.details
    return {"ok": False, "schema_version": SCHEMA_VERSION, "operation": operation, "project_id": project_id,
            "task_id": task_id, "error": error}


def tool_result(envelope):
    """The MCP CallToolResult: Codex shows the model structuredContent, and the TUI shows the user
    the first text content, so that is one short sentence a person can read (what was done, the
    ids, what the user types for a proposal); the envelope follows as the second text content, for
    clients that read text only."""
    return {"content": [{"type": "text", "text": sentence(envelope)}, {"type": "text", "text": dumps(envelope)}],
            "structuredContent": envelope, "isError": not envelope["ok"]}


_DONE = {
    "intent_add_evidence": "recorded evidence", "intent_add_inference": "recorded an inference",
    "intent_mark_unknown": "recorded an unknown", "intent_mark_dispute": "recorded a dispute",
    "intent_replace_claim": "replaced the agent's claim", "intent_invalidate": "invalidated the agent's claim",
    "intent_import": "imported", "intent_delete": "deleted", "intent_set_mode": "set the mode",
    "intent_add_explicit": "proposed", "intent_start_task": "started task",
}


def sentence(envelope):
    """One line for a person: `intent-loop: proposed [d4e58df6]; the user types `intent: confirm
    d4e58df6` to make it theirs.` or the error's code and message."""
    name = envelope.get("operation", "")
    if not envelope["ok"]:
        error = envelope["error"]
        return f"intent-loop: {name} failed ({error['code']}): {error['message']}"
    result = envelope.get("result") or {}
    task = f" in task {envelope['task_id'][:8]}" if envelope.get("task_id") else ""
    if name in ("intent_status", "intent_get_snapshot", "intent_list_candidates", "intent_export"):
        what = {"intent_status": "status", "intent_get_snapshot": "the recorded intent",
                "intent_list_candidates": f"{len(result.get('candidates', []))} open proposals and candidates",
                "intent_export": "the task's graph"}[name]
        return f"intent-loop: read {what}{task}."
    ids = result.get("proposal_ids") or []
    if ids:
        shorts = " ".join(i[:8] for i in ids)
        return (f"intent-loop: proposed [{shorts}]{task}, not the user's words; the user types "
                f"`intent: confirm {shorts}` to make it theirs.")
    if name == "intent_start_task":
        started = str(result.get("started_task", ""))[:8]
        return f"intent-loop: started task {started} (the agent's; no session follows it)."
    claims = result.get("claim_ids") or []
    named = f" [{' '.join(c[:8] for c in claims[:3])}{' ...' if len(claims) > 3 else ''}]" if claims else ""
    again = " (a retry: already recorded)" if result.get("replayed") else ""
    return f"intent-loop: {_DONE.get(name, 'done')}{named}{task}{again}."

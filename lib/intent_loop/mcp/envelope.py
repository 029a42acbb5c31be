"""The one result envelope of every tool, as structuredContent and as text."""
import re

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
    """The MCP CallToolResult: Codex gives the model structuredContent (the envelope, full ids), and
    the TUI shows the user each text content cut to a few lines: so the first is one sentence a
    person can read (what the tool did or found, from its result), and the second the envelope as
    JSON with every id cut to 8 hex characters (`shown`), so no 64-hex project id fills the screen."""
    return {"content": [{"type": "text", "text": sentence(envelope)}, {"type": "text", "text": dumps(shown(envelope))}],
            "structuredContent": envelope, "isError": not envelope["ok"]}


# A whole string that is an id: a UUID-shaped task, claim or proposal id, a 64-hex project id or
# hash, or either behind a `name:` prefix (an MCP request id `mcp:<sha256>`).
_ID = re.compile(r"([a-z_]+:)?([0-9a-f]{8})(?:-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{56})")
MAX_SENTENCE = 400  # the TUI wraps it; past this a person stops reading


def shown(value):
    """`value` with every id string cut to its first 8 hex characters (the prefix every command and
    tool accepts), for the text a person reads; structuredContent keeps the full ids."""
    if isinstance(value, str):
        match = _ID.fullmatch(value)
        return (match.group(1) or "") + match.group(2) if match else value
    if isinstance(value, dict):
        return {key: shown(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shown(item) for item in value]
    return value


def _short(value):
    return str(value or "")[:8]


def _count(n, one, many=None):
    return f"{n} {one if n == 1 else (many or one + 's')}"


def _ids(ids, limit=3):
    ids = list(ids or [])
    if not ids:
        return ""
    more = f" +{len(ids) - limit}" if len(ids) > limit else ""
    return f" [{' '.join(_short(i) for i in ids[:limit])}{more}]"


_DONE = {
    "intent_add_evidence": "recorded evidence", "intent_add_inference": "recorded an inference",
    "intent_mark_unknown": "recorded an unknown", "intent_mark_dispute": "recorded a dispute",
    "intent_replace_claim": "replaced the agent's claim", "intent_invalidate": "invalidated the agent's claim",
    "intent_import": "imported", "intent_delete": "deleted", "intent_set_mode": "set the mode",
    "intent_add_explicit": "proposed", "intent_start_task": "started task",
}


def sentence(envelope):
    """One line for a person, built from the result: `intent-loop: task 1a2b3c4d (on), 3 active
    claims; hooks ran; Guard: ...` for intent_status, `intent-loop: proposed [d4e58df6] ...; the
    user types `intent: confirm d4e58df6` to make it theirs.`, or the error's code and message."""
    name = envelope.get("operation", "")
    if not envelope["ok"]:
        error = envelope["error"]
        text = f"intent-loop: {name} failed ({error['code']}): {error['message']}"
    else:
        result = envelope.get("result") or {}
        reader = _READS.get(name)
        text = "intent-loop: " + (reader(result, envelope) if reader else _written(name, result, envelope))
    text = " ".join(text.split())  # one line, whatever a message or label holds
    return text if len(text) <= MAX_SENTENCE else text[:MAX_SENTENCE - 1] + "…"


def _in_task(envelope):
    return f" in task {_short(envelope['task_id'])}" if envelope.get("task_id") else ""


def _status(result, envelope):
    linked = result.get("linked_task")
    if not linked:
        parts = ["no task for this session (none current, or it is private or off)"]
    else:
        task = f"task {_short(linked.get('task_id'))} ({linked.get('mode')})"
        if "in_memory_records" in linked:
            parts = [f"{task}, {_count(linked['in_memory_records'], 'record')} in memory only"]
        else:
            active = sum((linked.get("active_claims") or {}).values())
            proposals = linked.get("open_proposals") or 0
            parts = [f"{task}, {_count(active, 'active claim')}"
                     + (f", {_count(proposals, 'open proposal')}" if proposals else "")]
    hooks = result.get("hooks") or {}
    if hooks.get("ran") is True:
        parts.append("hooks ran")
    elif hooks.get("ran") is False:
        parts.append("hooks have not run" + (f": {hooks['detail']}" if hooks.get("detail") else "")
                     + " (hooks.next_action says what to do)")
    summary = (result.get("enforcement") or {}).get("summary")
    if summary:
        parts.append(summary)
    return "; ".join(parts) + "."


def _snapshot(result, envelope):
    if result.get("note") and not result.get("claims"):
        return f"{result['note']}."
    claims = result.get("claims") or []
    statuses = {}
    for claim in claims:
        statuses[claim.get("epistemic_status")] = statuses.get(claim.get("epistemic_status"), 0) + 1
    detail = f" ({', '.join(f'{n} {s}' for s, n in sorted(statuses.items(), key=lambda kv: -kv[1]))})" \
        if statuses else ""
    total = len(claims) + (result.get("claims_omitted") or 0)
    where = f"task {_short(envelope.get('task_id'))}" + (f" ({result['mode']})" if result.get("mode") else "")
    if result.get("private"):
        return f"{where} is private: {_count(total, 'record')} of this session, in memory only{detail}."
    if result.get("mode") == "off":
        return f"{where}: recording is off, no claims shown."
    proposals = len(result.get("proposals") or [])
    return (f"{where}: {_count(total, 'active claim')}{detail}"
            + (f", {_count(proposals, 'open proposal')}" if proposals else "") + ".")


def _candidates(result, envelope):
    rows = result.get("candidates") or []
    proposals = [c["candidate_id"] for c in rows if c.get("kind") == "proposal"]
    others = [c["candidate_id"] for c in rows if c.get("kind") != "proposal"]
    if not rows:
        return "no open proposals or long-term candidates."
    text = f"{_count(len(proposals), 'open proposal')}{_ids(proposals)} and " \
           f"{_count(len(others), 'long-term candidate')}{_ids(others)}"
    return f"{text}; the user types `intent: confirm <id>` to accept one."


def _export(result, envelope):
    claims = (result.get("graph") or {}).get("claims") or []
    roles = {}
    for claim in claims:
        roles[claim.get("role")] = roles.get(claim.get("role"), 0) + 1
    detail = f" ({', '.join(f'{n} {r}' for r, n in sorted(roles.items(), key=lambda kv: -kv[1]))})" if roles else ""
    return f"exported task {_short(envelope.get('task_id'))} as a graph: {_count(len(claims), 'claim')}{detail}."


_READS = {"intent_status": _status, "intent_get_snapshot": _snapshot, "intent_list_candidates": _candidates,
          "intent_export": _export}


def _written(name, result, envelope):
    task = _in_task(envelope)
    again = " (a retry: already recorded)" if result.get("replayed") else ""
    note = f"; {result['note']}" if result.get("note") else ""
    ids = result.get("proposal_ids") or []
    if ids:
        shorts = " ".join(_short(i) for i in ids)
        return (f"proposed [{shorts}]{task}, not the user's words; the user types `intent: confirm {shorts}` "
                f"to make it theirs{again}.")
    if name == "intent_start_task":
        return f"started task {_short(result.get('started_task'))} (the agent's; no session follows it){again}."
    if name == "intent_replace_claim" and result.get("superseded"):
        return f"replaced the agent's claim{_ids(result['superseded'])} with [{_short(result.get('claim_id'))}]" \
               f"{task}{again}."
    if name == "intent_invalidate" and result.get("invalidated"):
        return f"invalidated the agent's claim{_ids(result['invalidated'])}{task}{again}{note}."
    if name == "intent_delete":
        if result.get("deleted") == "claim":
            return f"deleted the agent's claim [{_short(result.get('claim_id'))}]{task}{again}."
        if result.get("withdrawn"):
            return f"withdrew the agent's proposal [{_short(result['withdrawn'])}]{task}{again}."
    if name == "intent_set_mode" and result.get("mode"):
        return f"set the mode of task {_short(envelope.get('task_id'))} to {result['mode']}{again}{note}."
    if name == "intent_import":
        return f"imported {_count(len(result.get('claim_ids') or []), 'claim')} as the agent's{task}{again}."
    return f"{_DONE.get(name, 'done')}{_ids(result.get('claim_ids'))}{task}{again}{note}."

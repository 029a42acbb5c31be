"""The one result envelope of every tool, as structuredContent and as text."""
from intent_loop.errors import ErrorCode
from intent_loop.storage.canonical import dumps

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
    """The MCP CallToolResult: Codex shows the model structuredContent; text is for other clients."""
    return {"content": [{"type": "text", "text": dumps(envelope)}], "structuredContent": envelope,
            "isError": not envelope["ok"]}

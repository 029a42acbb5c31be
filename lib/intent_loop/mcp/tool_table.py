"""The fifteen tools as `tools/list` shows them: names, descriptions, input schemas, annotations.

Codex strips maxLength and maxItems from these schemas before the model sees them, so every bound
is checked again by the server (mcp/arguments.py); the schemas only tell the model what to send.
Codex runs a call without asking only if the tool is read-only, or neither destructive nor open-world.
The facets, verbs and the statement's bound come from intent/, where the claim rule lives.
"""
from intent_loop.intent.claim_verbs import CLAIM_VERBS
from intent_loop.intent.claims import FACETS as CLAIM_FACETS
from intent_loop.intent.claims import MAX_STATEMENT

FACETS = list(CLAIM_FACETS)
VERBS = list(CLAIM_VERBS)

_READ = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}
# idempotentHint means "the same arguments again have no further effect": true of the reads, of
# replacing, invalidating or deleting one named record (a second call finds it gone) and of setting
# a mode; false of the calls that add a record, since each call without a request_id adds another.
_WRITE = {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}
_CHANGE = dict(_WRITE, idempotentHint=True)  # one named record changed: the same call again changes nothing
_DESTRUCTIVE = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True, "openWorldHint": False}

_STR = {"type": "string"}
_TASK = {"type": "string", "description": "a task id of this project (default: the task linked to this session)"}
_REQUEST = {"type": "string", "maxLength": 200,
            "description": "optional idempotency key: a retry with the same key returns the stored result"}
_ROOT = {"type": "string",
         "description": "absolute project directory, only for clients without Codex's sandbox metadata"}
_STATEMENT = {"type": "string", "minLength": 1, "maxLength": MAX_STATEMENT,
              "description": "one atomic statement, one line"}
_FACETS = {"type": "array", "items": {"type": "string", "enum": FACETS}, "minItems": 1, "uniqueItems": True}
_EXCERPT = {"type": "string", "maxLength": 160, "description": "a short excerpt of what the statement rests on"}
_SCOPE = {"type": "string", "enum": ["task", "project", "long_term"]}
_CONFIDENCE = {"type": "number", "minimum": 0, "maximum": 1, "description": "0-1, at most two decimals"}


def _schema(properties, required=()):
    properties = dict(properties, project_root=_ROOT)
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


def _tool(name, title, description, annotations, properties, required=()):
    return {"name": name, "title": title, "description": description, "inputSchema": _schema(properties, required),
            "annotations": dict(annotations, title=title)}


_PROPOSAL = {"type": "object", "properties": {"statement": _STATEMENT, "verb": {"type": "string", "enum": VERBS},
                                              "facets": _FACETS},
             "required": ["statement"], "additionalProperties": False}

TOOLS = [
    _tool("intent_status", "intent-loop status",
          "Where intent-loop keeps data, this project, the task linked to this session, its mode and counts, "
          "and the Guard contract file's state.", _READ, {}),
    _tool("intent_get_snapshot", "Recorded intent",
          "The task's active claims: `text` is the compact view, `claims` the records (the user's explicit "
          "claims and what agents recorded, each with its epistemic_status).", _READ,
          {"task_id": _TASK, "max_chars": {"type": "integer", "minimum": 500, "maximum": 8000}}),
    _tool("intent_start_task", "Start a task",
          "Start a new task linked to this session (unless the session's task already holds the user's typed "
          "claims). Initial claims (at most 12) are recorded as proposals the user must confirm.", _WRITE,
          {"label": {"type": "string", "maxLength": 80},
           "initial_claims": {"type": "array", "maxItems": 12, "items": {"anyOf": [_STATEMENT, _PROPOSAL]}},
           "request_id": _REQUEST}),
    _tool("intent_add_explicit", "Propose a user claim",
          "Propose something the user said as a claim. It is recorded as a proposal attributed to you, shown "
          "to the user, and becomes the user's claim only when the user types `intent: confirm <id>`.", _WRITE,
          {"statement": _STATEMENT, "verb": {"type": "string", "enum": VERBS}, "facets": _FACETS,
           "task_id": _TASK, "request_id": _REQUEST}, ["statement"]),
    _tool("intent_add_inference", "Record an inference",
          "Record something you infer about what the user wants, with a confidence.", _WRITE,
          {"statement": _STATEMENT, "facets": _FACETS, "confidence": _CONFIDENCE, "scope": _SCOPE,
           "excerpt": _EXCERPT, "task_id": _TASK, "request_id": _REQUEST}, ["statement", "confidence"]),
    _tool("intent_add_evidence", "Record evidence",
          "Record evidence you observed (a test result, a tool's output, the user's feedback on a result).",
          _WRITE, {"statement": _STATEMENT, "facets": _FACETS, "excerpt": _EXCERPT, "task_id": _TASK,
                   "request_id": _REQUEST}, ["statement"]),
    _tool("intent_mark_unknown", "Record an open question",
          "Record something about the user's intent that is not known yet.", _WRITE,
          {"statement": _STATEMENT, "facets": _FACETS, "excerpt": _EXCERPT, "task_id": _TASK,
           "request_id": _REQUEST}, ["statement"]),
    _tool("intent_mark_dispute", "Record a disagreement",
          "Record a disagreement or conflict between recorded claims or sources.", _WRITE,
          {"statement": _STATEMENT, "facets": _FACETS, "excerpt": _EXCERPT, "task_id": _TASK,
           "request_id": _REQUEST}, ["statement"]),
    _tool("intent_replace_claim", "Replace an agent claim",
          "Supersede a claim an agent recorded with a corrected one of the same kind. The user's own claims "
          "cannot be replaced by a tool.", _CHANGE,
          {"claim_id": _STR, "statement": _STATEMENT, "facets": _FACETS, "confidence": _CONFIDENCE,
           "excerpt": _EXCERPT, "task_id": _TASK, "request_id": _REQUEST}, ["claim_id", "statement"]),
    _tool("intent_invalidate", "Invalidate an agent claim",
          "Mark a claim an agent recorded as no longer valid (it stays in the history). The user's own claims "
          "cannot be invalidated by a tool.", _CHANGE,
          {"claim_id": _STR, "task_id": _TASK, "request_id": _REQUEST}, ["claim_id"]),
    _tool("intent_list_candidates", "Open proposals and candidates",
          "Proposals waiting for the user's confirmation and long-term candidates of this project.", _READ, {}),
    _tool("intent_export", "Export a task",
          "The task as a portable graph document (intent-loop graph format).", _READ, {"task_id": _TASK}),
    _tool("intent_import", "Import a graph",
          "Import a graph document into the task as records attributed to you (never the user's words).",
          _WRITE, {"graph": {"type": "object"}, "task_id": _TASK, "request_id": _REQUEST}, ["graph"]),
    _tool("intent_delete", "Delete an agent record",
          "Physically delete a claim an agent recorded, or withdraw a proposal. The user's claims and tasks "
          "are deleted only by the user.", _DESTRUCTIVE,
          {"claim_id": _STR, "proposal_id": _STR, "task_id": _TASK, "request_id": _REQUEST}),
    _tool("intent_set_mode", "Pause recording",
          "Switch the task to private (nothing recorded) or off. Only the user switches it back on.",
          _DESTRUCTIVE, {"mode": {"type": "string", "enum": ["private", "off"]}, "task_id": _TASK,
                         "request_id": _REQUEST}, ["mode"]),
]
TOOL_NAMES = frozenset(tool["name"] for tool in TOOLS)
READ_TOOLS = frozenset(tool["name"] for tool in TOOLS if tool["annotations"]["readOnlyHint"])

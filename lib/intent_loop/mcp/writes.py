"""The write tools: everything they record is attributed to the agent (actor "agent").

No call creates an active user-explicit claim (intent_add_explicit and a start's initial claims
are proposals the user confirms by typing), none supersedes or invalidates a user's claim, and none
refreshes the Guard file: the reducer never lets an agent event pick the published task.
Each write is one locked, idempotent `mutate` under an `mcp:` request id; in a private session it
goes to the process's memory instead, and nothing semantic reaches disk.
"""
import time

from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.intent import tasks
from intent_loop.intent.claim_records import hidden_summary
from intent_loop.intent.state import REDUCER
from intent_loop.mcp import arguments as arg
from intent_loop.mcp.results import summarize
from intent_loop.storage.ledger import Draft, new_uuid4
from intent_loop.storage.sealing import request_fingerprint
from intent_loop.storage.transaction import mutate

AGENT = "agent"
# What an agent may add (issue 23): a tool call is not the user, and Codex runs the non-destructive
# write tools without asking, so one loop of calls must not flood a task or a project.
MAX_AGENT_RECORDS_PER_TASK = 1000  # the agent's claims, evidence and open proposals in one task
MAX_AGENT_IMPORT_CLAIMS = 500  # in one intent_import (the user's own `intent-loop import` takes 2,000)
# what an agent's record of each kind rests on
SOURCE_KIND = {"evidence": "tool_result", "inferred": "agent_turn", "unknown": "agent_turn", "disputed": "agent_turn"}
DEFAULT_FACETS = {"evidence": ["result_feedback"], "inferred": ["soft_constraint"], "unknown": ["unknown"],
                  "disputed": ["disagreement"]}
FACET_VERBS = {"outcome": "goal", "hard_constraint": "must", "soft_constraint": "prefer",
               "success_signal": "done-when", "tradeoff": "tradeoff"}
# A proposal without a verb or facet is a `prefer` (soft_constraint): confirmed, it binds nothing in Guard.


# -- the shared machinery ----------------------------------------------------------------------
def _write(call, params, step, *, private=None, needs_task=True):
    """Run `step(plan, request_id, task_id)` as one mutation, or `private(request_id, now)` in memory."""
    task_id = call.resolve_task(required=needs_task)
    request_id = call.request_id()
    params = dict(params, task=call.args.get("task_id"), session=call.binding.session)
    if needs_task and call.is_private(task_id):
        if private is None:
            raise IntentLoopError(ErrorCode.TASK_PRIVATE,
                                  "this session is private: nothing is recorded until the user types `intent: on`")
        fingerprint = request_fingerprint("mcp." + call.name, params)
        stored = call.memory.replay(call.binding.session, request_id, fingerprint)
        if stored is not None:
            return stored
        result = dict(private(request_id, format_utc(time.time())), private=True, replayed=False)
        call.memory.remember(call.binding.session, request_id, fingerprint, result)
        return result

    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(time.time()))
        step(the_plan, request_id, task_id)
        return the_plan.drafts

    mutation = mutate(call.paths, REDUCER, request_id=request_id, operation="mcp." + call.name, params=params,
                      plan=plan, deadline=call.deadline(), resume=call.verified)
    call.verified = None  # continued in place by the transaction: never read again
    return summarize(mutation.events, replayed=mutation.replayed)


def check_agent_room(plan, task_id, adding):
    """AGENT_LIMIT when `adding` more records would pass what one task may hold from the agent."""
    task = plan.task(task_id)
    held = hidden_summary(task)["agent"]  # never a claim a hook shows: the agent's are hidden ones
    held += sum(1 for c in plan.state["candidates"].values()
                if c.get("kind") == "proposal" and c.get("task_id") == task_id and c["state"] == "open")
    if held + adding > MAX_AGENT_RECORDS_PER_TASK:
        raise IntentLoopError(ErrorCode.AGENT_LIMIT, (
            f"task {task_id[:8]} holds {held} records the agent made (at most {MAX_AGENT_RECORDS_PER_TASK}); "
            "nothing was recorded. Ask the user to review them (`intent-loop show --all`, `intent-loop "
            "candidate list`) before adding more"))


def _recording_task(plan, task_id):
    task = plan.task(task_id)
    if task["mode"] == "off":
        raise IntentLoopError(ErrorCode.TASK_OFF, "intent-loop is off for this task; only the user turns it "
                                                  "back on (`intent: on`)")
    return task


def _agent_claim(*, status, statement, facets, scope, request_id, now, confidence=None, excerpt=None):
    source_ref = {"kind": SOURCE_KIND[status], "event_id": request_id}
    if excerpt is not None:
        source_ref["excerpt"] = excerpt
    return claims_mod.new_claim(claim_id=new_uuid4(), statement=statement, facets=facets, scope=scope,
                                source_ref=source_ref, valid_from=now, role=claims_mod.ROLE_FOR_STATUS[status],
                                epistemic_status=status, confidence=confidence)


def _memory_record(claim):
    return {"claim": claim, "state": "active", "provenance": "private", "actor": AGENT}


def _record_claim(call, *, status, extra=()):
    names = ("statement", "facets", "excerpt", "task_id", "request_id") + tuple(extra)
    arg.check_names(call.args, names)
    fields = {"statement": arg.statement(call.args.get("statement")),
              "facets": arg.facets(call.args.get("facets"), default=DEFAULT_FACETS[status]),
              "scope": arg.scope(call.args.get("scope")),
              "excerpt": arg.excerpt(call.args.get("excerpt")),
              "confidence": arg.confidence(call.args.get("confidence")) if status == "inferred" else None}

    def make(request_id, now):
        return _agent_claim(status=status, request_id=request_id, now=now, **fields)

    def step(plan, request_id, task_id):
        _recording_task(plan, task_id)
        check_agent_room(plan, task_id, 1)
        tasks.add_claim(plan, task_id=task_id, claim=make(request_id, plan.now), actor=AGENT)

    def private(request_id, now):
        claim = make(request_id, now)
        call.memory.add(call.binding.session, _memory_record(claim))
        return {"claim_id": claim["claim_id"], "claim_ids": [claim["claim_id"]], "events": []}

    return _write(call, dict(fields, status=status), step, private=private)


# -- claims the agent records ------------------------------------------------------------------
def intent_add_evidence(call):
    return _record_claim(call, status="evidence")


def intent_add_inference(call):
    return _record_claim(call, status="inferred", extra=("confidence", "scope"))


def intent_mark_unknown(call):
    return _record_claim(call, status="unknown")


def intent_mark_dispute(call):
    return _record_claim(call, status="disputed")


# -- proposals: the user's words only once the user confirms them --------------------------------
def proposal_fields(item, *, where="statement"):
    """(statement, facets, scope) of a proposed claim, built by the `intent:` verbs' own rules."""
    from intent_loop.intent.claim_text import build_claim

    if isinstance(item, str):
        item = {"statement": item}
    if not isinstance(item, dict) or set(item) - {"statement", "verb", "facets"}:
        raise arg.invalid(f"{where}: a statement, or an object with statement and optional verb or facets")
    verb = item.get("verb")
    if verb is None:
        facets = arg.facets(item.get("facets"), default=["soft_constraint"])
        verb = FACET_VERBS.get(facets[0])
        if verb is None:
            raise arg.invalid(f"{where}: a proposal's facet is one of {', '.join(FACET_VERBS)} (or give a verb)")
    arg.statement(item.get("statement"))  # the raw-length and type checks, before the grammar
    facet, scope, statement = build_claim(verb, item["statement"])
    claims_mod.check_proposal_text(statement)
    return {"statement": statement, "facets": [facet], "scope": scope, "verb": verb.lower()}


def _propose(plan, task_id, fields, request_id):
    check_agent_room(plan, task_id, 1)
    plan.add(Draft("proposal_added", task_id, AGENT, dict(
        fields, candidate_id=new_uuid4(), source_ref={"kind": "agent_turn", "event_id": request_id})))


def intent_add_explicit(call):
    arg.check_names(call.args, ("statement", "verb", "facets", "task_id", "request_id"))
    fields = proposal_fields({k: call.args[k] for k in ("statement", "verb", "facets") if k in call.args})

    def step(plan, request_id, task_id):
        _recording_task(plan, task_id)
        if plan.state["tasks"][task_id]["mode"] == "private":
            raise IntentLoopError(ErrorCode.TASK_PRIVATE,
                                  "this task is private; nothing is recorded until `intent: on`")
        _propose(plan, task_id, fields, request_id)

    def private(request_id, now):
        return {"proposal_ids": [], "note": "private session: the proposal was not recorded and cannot be confirmed",
                "events": []}

    return _write(call, fields, step, private=private)


def intent_start_task(call):
    arg.check_names(call.args, ("label", "initial_claims", "request_id"))
    label = arg.label(call.args.get("label"))
    initial = call.args.get("initial_claims") or []
    if not isinstance(initial, list):
        raise arg.invalid("initial_claims is a list of statements")
    if len(initial) > tasks.MAX_INITIAL_CLAIMS:
        raise IntentLoopError(ErrorCode.TOO_MANY_INITIAL_CLAIMS, (
            f"a task starts with at most {tasks.MAX_INITIAL_CLAIMS} initial claims (got {len(initial)}); "
            "propose the rest with intent_add_explicit"))
    proposals = [proposal_fields(item, where=f"initial_claims[{i}]") for i, item in enumerate(initial)]
    session = call.binding.session
    if session is not None and call.is_private(call.linked_task_id()):
        raise IntentLoopError(ErrorCode.TASK_PRIVATE, "this session is private: no task is started until `intent: on`")

    def step(plan, request_id, _task_id):
        task_id = call.task_id = tasks.derived_task_id(call.paths.project_id, request_id)
        if task_id in plan.state["tasks"]:
            raise arg.invalid(f"task {task_id} already exists")
        payload = {"mode": "on", "started_by": "mcp"}
        if label is not None:
            payload["label"] = label
        # No session is linked to it: a session's typed claims would then go to the agent's task and
        # make it the one Guard enforces (docs/mcp.md). The agent names it by task_id.
        plan.add(Draft("task_started", task_id, AGENT, payload))
        for fields in proposals:
            _propose(plan, task_id, fields, request_id)

    result = _write(call, {"label": label, "proposals": proposals}, step, needs_task=False)
    call.task_id = result.get("started_task")  # an exact retry names the task too (from the stored events)
    return result

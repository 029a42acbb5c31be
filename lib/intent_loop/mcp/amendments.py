"""The write tools that change what is already recorded: replace, invalidate, delete, import, mode.

They touch only what an agent recorded: a user's claim is never superseded, invalidated or deleted
by a tool (PROTECTED_CLAIM), a user's task is deleted only by the user, and only the user switches
a task back on.
"""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.intent import tasks
from intent_loop.mcp import arguments as arg
from intent_loop.mcp.writes import (
    AGENT,
    MAX_AGENT_IMPORT_CLAIMS,
    SOURCE_KIND,
    _agent_claim,
    _memory_record,
    _recording_task,
    _write,
    check_agent_room,
)
from intent_loop.storage.ledger import Draft

_PROTECTED = ("claim {short} is not a record an agent made; only the user can change or delete it "
              "(`intent: replace`, `intent: drop`, `intent-loop delete`)")


def _is_agent_record(record):
    return record.get("actor") == AGENT and not claims_mod.is_direct_user_explicit(record["claim"])


def intent_replace_claim(call):
    arg.check_names(call.args, ("claim_id", "statement", "facets", "confidence", "excerpt", "task_id", "request_id"))
    prefix = arg.claim_id(call.args.get("claim_id"))
    fields = {"statement": arg.statement(call.args.get("statement")),
              "facets": arg.facets(call.args.get("facets"), default=()) or None,
              "excerpt": arg.excerpt(call.args.get("excerpt")),
              "confidence": (claims_mod.normalize_confidence(call.args["confidence"])
                             if call.args.get("confidence") is not None else None)}

    def successor(old, request_id, now):
        status = old["epistemic_status"]
        if status not in SOURCE_KIND:
            raise IntentLoopError(ErrorCode.PROTECTED_CLAIM, _PROTECTED.format(short=old["claim_id"][:8]))
        confidence = fields["confidence"] if fields["confidence"] is not None else old.get("confidence")
        return _agent_claim(status=status, statement=fields["statement"], facets=fields["facets"] or old["facets"],
                            scope=old["scope"], request_id=request_id, now=now, excerpt=fields["excerpt"],
                            confidence=confidence if status == "inferred" else None)

    def step(plan, request_id, task_id):
        task = _recording_task(plan, task_id)
        old_id = tasks.resolve_claim(task, prefix)
        record = task["claims"][old_id]
        tasks.check_may_displace(record, None, direct_user=False)
        claim = successor(record["claim"], request_id, plan.now)
        tasks.replace_claims(plan, task_id=task_id, old_ids=[old_id], claim=claim, direct_user=False, actor=AGENT)

    def private(request_id, now):
        record = call.memory.find(call.binding.session, prefix)
        claim = successor(record["claim"], request_id, now)
        record["state"] = "superseded"
        call.memory.add(call.binding.session, _memory_record(dict(claim, supersedes=[record["claim"]["claim_id"]])))
        return {"claim_id": claim["claim_id"], "claim_ids": [claim["claim_id"]],
                "superseded": [record["claim"]["claim_id"]], "events": []}

    return _write(call, dict(fields, claim=prefix), step, private=private)


def intent_invalidate(call):
    arg.check_names(call.args, ("claim_id", "task_id", "request_id"))
    prefix = arg.claim_id(call.args.get("claim_id"))

    def step(plan, request_id, task_id):
        task = _recording_task(plan, task_id)
        claim_id = tasks.resolve_claim(task, prefix)
        tasks.invalidate_claim(plan, task_id=task_id, claim_id=claim_id, direct_user=False, actor=AGENT)

    def private(request_id, now):
        record = call.memory.find(call.binding.session, prefix)
        record["state"] = "invalidated"
        return {"invalidated": [record["claim"]["claim_id"]], "events": []}

    return _write(call, {"claim": prefix}, step, private=private)


def intent_set_mode(call):
    arg.check_names(call.args, ("mode", "task_id", "request_id"))
    mode = call.args.get("mode")
    if mode == "on":
        raise arg.invalid("only the user switches a task back on, by typing `intent: on`")
    if mode not in ("private", "off"):
        raise arg.invalid("mode is private or off")

    def step(plan, request_id, task_id):
        if plan.task(task_id)["mode"] == "on":  # private or off already: the user's `intent: on` ends it
            plan.add(Draft("mode_set", task_id, AGENT, {"mode": mode}))

    def private(request_id, now):
        return {"mode": "private", "events": [], "note": "this session is already private"}

    return _write(call, {"mode": mode}, step, private=private)


def intent_import(call):
    arg.check_names(call.args, ("graph", "task_id", "request_id"))
    from intent_loop.base.canonical import canonical_bytes
    from intent_loop.ops.graph_format import FORMAT, IMPORT_SOURCE_KIND, VERSION
    from intent_loop.ops.graph_import import prepare_import

    graph = call.args.get("graph")
    if isinstance(graph, str):
        data = graph.encode("utf-8", "replace")
    elif isinstance(graph, dict):
        data = canonical_bytes(graph)
    else:
        raise arg.invalid("graph is a graph document (an object), as intent_export returns it")
    graph_sha, _info, claims, superseded, invalidated = prepare_import(data)
    if len(claims) > MAX_AGENT_IMPORT_CLAIMS:
        raise IntentLoopError(ErrorCode.AGENT_LIMIT, (
            f"the graph holds {len(claims)} claims; one intent_import brings at most {MAX_AGENT_IMPORT_CLAIMS}. "
            "Nothing was imported: import a smaller graph, or let the user run `intent-loop import FILE`"))

    def step(plan, request_id, task_id):
        _recording_task(plan, task_id)
        check_agent_room(plan, task_id, len(claims))
        plan.add(Draft("graph_imported", task_id, AGENT, {
            "claims": claims, "superseded": superseded, "graph_format": f"{FORMAT}/{VERSION}",
            "source": {"kind": IMPORT_SOURCE_KIND, "sha256": graph_sha}}))
        for claim_id in invalidated:
            plan.add(Draft("claim_invalidated", task_id, AGENT,
                           {"claim_id": claim_id, "reason": "invalidated_in_imported_graph"}))

    return _write(call, {"graph_sha256": graph_sha}, step)


def intent_delete(call):
    """A proposal is withdrawn (candidate_dismissed); an agent's claim is physically deleted."""
    arg.check_names(call.args, ("claim_id", "proposal_id", "task_id", "request_id"))
    claim_prefix, proposal_prefix = call.args.get("claim_id"), call.args.get("proposal_id")
    if (claim_prefix is None) == (proposal_prefix is None):
        raise arg.invalid("give exactly one of claim_id and proposal_id")
    if proposal_prefix is not None:
        return _withdraw_proposal(call, arg.claim_id(proposal_prefix))
    prefix = arg.claim_id(claim_prefix)
    task_id = call.resolve_task(required=True)
    if call.is_private(task_id):
        record = call.memory.find(call.binding.session, prefix)
        call.memory.forget(call.binding.session, record["claim"]["claim_id"])
        return {"deleted": "claim", "claim_id": record["claim"]["claim_id"], "private": True}
    task = call.state["tasks"][task_id]
    claim_id = tasks.resolve_claim(task, prefix, active_only=False)
    if not _is_agent_record(task["claims"][claim_id]):
        raise IntentLoopError(ErrorCode.PROTECTED_CLAIM, _PROTECTED.format(short=claim_id[:8]))
    from intent_loop.ops.deletion import delete_claim

    report = delete_claim(call.paths, claim_id, confirm=f"DELETE CLAIM {claim_id}", deadline=call.deadline())
    return {"deleted": "claim", "claim_id": claim_id, "removed_events": report["removed_events"],
            "remaining_copies": report["scan"]}


def _withdraw_proposal(call, prefix):
    def step(plan, request_id, task_id):
        candidate = tasks.resolve_candidate(plan.state, prefix)
        if not tasks.is_proposal(candidate):
            raise IntentLoopError(ErrorCode.PROTECTED_CLAIM, (
                f"candidate {candidate['candidate_id'][:8]} is not an agent's proposal; only the user dismisses it"))
        tasks.dismiss_candidate(plan, task_id=candidate["task_id"], candidate_id=candidate["candidate_id"], actor=AGENT)

    return _write(call, {"proposal": prefix}, step, needs_task=False)


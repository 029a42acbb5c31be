"""Issue 14: `task_started` holds up to 12 initial claims (seed 000). A typed prompt that starts a
task with more claims puts 12 there and the rest as `claim_added` events of the same request; any
other start with more than 12 fails TOO_MANY_INITIAL_CLAIMS (the MCP server's, through its binary,
and the planner's own rule that the CLI's starts go through)."""
import json
import os
import time

import pytest

from helpers import mcp_client
from helpers.dist import requires_dist
from helpers.mcp_client import MCP_BINARY, run_hook
from helpers.receipt_words import said
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import tasks
from intent_loop.intent.state import REDUCER, active_claims
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading
from intent_loop.storage.transaction import mutate

SESSION = "019b0000-0000-7000-8000-00000000c001"
env = mcp_client.env
ws = mcp_client.ws
server = mcp_client.server


def _events(env, ws):
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    state = reading.verify_all(project, REDUCER).state
    with open(project.ledger, "rb") as fh:
        return [json.loads(line) for line in fh.read().splitlines()], state


@requires_dist
@pytest.mark.parametrize("count", [3, 12, 15])
def test_a_typed_prompt_starts_its_task_with_up_to_twelve_claims_and_adds_the_rest(env, ws, count):
    prompt = "\n".join(f"intent: must rule number {n:02d}" for n in range(count))
    answer = run_hook("UserPromptSubmit", env, cwd=ws, session_id=SESSION, prompt=prompt)
    events, state = _events(env, ws)
    [start] = [e for e in events if e["event_type"] == "task_started"]
    added = [e for e in events if e["event_type"] == "claim_added"]
    initial = [c["statement"] for c in start["payload"]["initial_claims"]]
    assert initial == [f"must: rule number {n:02d}" for n in range(min(count, tasks.MAX_INITIAL_CLAIMS))]
    assert [e["payload"]["claim"]["statement"] for e in added] == [f"must: rule number {n:02d}"
                                                                    for n in range(12, count)]
    assert {e["request_id"] for e in added} <= {start["request_id"]}  # one request, one request marker
    [task] = state["tasks"].values()
    assert [r["claim"]["statement"] for r in active_claims(task)] == initial + [
        e["payload"]["claim"]["statement"] for e in added]
    message = answer.get("systemMessage", "")
    assert said(message, "recorded", "must") and "NOT recorded" not in message, message  # the receipt summarises
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert context.index("rule number 00") < context.index(f"rule number {min(count, 12) - 1:02d}")


@requires_dist
def test_a_bad_line_among_the_starting_claims_is_rejected_alone(env, ws):
    prompt = "intent: goal ship it\nintent: must \u202ereversed\nintent: must keep the API"
    answer = run_hook("UserPromptSubmit", env, cwd=ws, session_id=SESSION, prompt=prompt)
    events, _state = _events(env, ws)
    [start] = [e for e in events if e["event_type"] == "task_started"]
    assert [c["statement"] for c in start["payload"]["initial_claims"]] == ["ship it", "must: keep the API"]
    assert "INVALID_TEXT" in answer.get("systemMessage", "")


def test_the_planner_refuses_more_than_twelve_initial_claims_outside_a_typed_prompt(project):
    """The rule every start but a typed prompt's meets (the CLI's `claim add` starts with one claim)."""
    def plan(state, *, count, spill=False):
        p = tasks.Plan(state, now="2026-05-01T00:00:00.000Z")
        claims = [tasks.user_claim(p, statement=f"claim {n}", facets=["outcome"], scope="task",
                                   source_ref={"kind": "user_event", "event_id": "turn-1"}) for n in range(count)]
        tasks.start_task(p, task_id=tasks.derived_task_id(project.project_id, f"r{count}{spill}"),
                         initial_claims=claims, spill=spill)
        return p.drafts

    with pytest.raises(IntentLoopError) as info:
        mutate(project, REDUCER, request_id="r-13", operation="test", params={}, deadline=time.monotonic() + 10,
               plan=lambda state: plan(state, count=13))
    assert info.value.code == ErrorCode.TOO_MANY_INITIAL_CLAIMS and "at most 12" in info.value.message
    assert not os.path.exists(project.ledger) or not reading.verify_all(project, REDUCER).state["tasks"]
    mutate(project, REDUCER, request_id="r-12", operation="test", params={}, deadline=time.monotonic() + 10,
           plan=lambda state: plan(state, count=12))
    mutation = mutate(project, REDUCER, request_id="r-13s", operation="test", params={},
                      deadline=time.monotonic() + 10, plan=lambda state: plan(state, count=13, spill=True))
    assert [e["event_type"] for e in mutation.events] == ["task_started", "claim_added"]


@pytest.mark.skipif(not os.access(MCP_BINARY, os.X_OK), reason="dist/intent-loop-mcp is missing")
def test_an_mcp_start_with_more_than_twelve_claims_fails_and_records_nothing(server, env, ws):
    failed = server.call("intent_start_task", {"initial_claims": [f"claim {n}" for n in range(13)]},
                         workspace=ws, thread=SESSION)
    assert not failed["ok"] and failed["error"]["code"] == "TOO_MANY_INITIAL_CLAIMS"
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    assert not os.path.exists(project.ledger) or not reading.verify_all(project, REDUCER).state["tasks"]
    ok = server.call("intent_start_task", {"initial_claims": [f"claim {n}" for n in range(12)]},
                     workspace=ws, thread=SESSION)
    assert ok["ok"] and len(ok["result"]["proposal_ids"]) == 12

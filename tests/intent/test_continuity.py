"""Issue 21 through the built hook binaries: every cell of the continuity table of docs/hooks.md
("Which task a session sees"), so `/clear`, a new session and compaction get the workspace's current
task, a claim typed in a new session joins it, and nothing moves under a session unsaid."""
import json
import os
import subprocess

import pytest

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import DIST, events, fixture, hook, project_of, prompt_payload
from helpers.mcp_client import McpServer
from helpers.receipt_words import published, read, said
from intent_loop.guard import contract_file
from intent_loop.intent.state import REDUCER
from intent_loop.ops.enforcement_words import ENFORCEMENT_SHORT, enforcement_explained, enforcement_header
from intent_loop.storage import reading
from intent_loop.storage.paths import session_hash

pytestmark = requires_dist
env = hook_binaries.env  # the fixtures, by the names the tests ask for
ws = hook_binaries.ws
CLI = os.path.join(DIST, "intent-loop")
SOURCES = ("startup", "resume", "clear", "compact")


def typed(env, ws, prompt, *, session="sess-A", turn=None):
    turn = turn or f"turn-{abs(hash((prompt, session))) % 10**8}"
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, prompt, session=session, turn=turn), env)
    return answer


def started(env, ws, *, session, source="startup"):
    _out, answer, _t = hook("SessionStart", fixture("session_start.startup.json", ws, session_id=session,
                                                    source=source), env)
    return context(answer)


def context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def state_of(env, ws):
    return reading.verify_all(project_of(env, ws), REDUCER).state


def current(env, ws):
    return state_of(env, ws)["last_change"]["task_id"]


def guard_doc(ws):
    path = os.path.join(ws, ".execution-fidelity", "contract.json")
    if not os.path.exists(path):
        return None
    with open(path, "rb") as fh:
        return json.loads(fh.read())


def guard_pair(ws):
    doc = guard_doc(ws)
    return None if doc is None else (doc["envelope"]["contract_ref"], doc["envelope"]["contract_version"])


def ledger_size(env, ws):
    path = project_of(env, ws).ledger
    return os.path.getsize(path) if os.path.exists(path) else 0


# -- the empty workspace ---------------------------------------------------------------------------
@pytest.mark.parametrize("source", SOURCES)
def test_an_empty_workspace_injects_nothing_and_a_typed_claim_starts_a_task(env, ws, source):
    assert started(env, ws, session="sess-A", source=source) == ""
    answer = typed(env, ws, "intent: goal ship the parser")
    assert said(answer["systemMessage"], "recorded", "goal") and published(1) in answer["systemMessage"]
    assert len(state_of(env, ws)["tasks"]) == 1


# -- unlinked sessions: the current task on ----------------------------------------------------------
@pytest.mark.parametrize("source", SOURCES)
def test_an_unlinked_session_gets_the_current_task_with_one_header_line_and_writes_nothing(env, ws, source):
    typed(env, ws, "intent: goal ship the parser\nintent: forbid action:network")
    size = ledger_size(env, ws)
    cache = sorted(os.listdir(project_of(env, ws).cache_dir))
    text = started(env, ws, session="sess-B", source=source)
    header, *view = text.splitlines()
    assert header.startswith("intent-loop: this session follows the workspace's current task ")
    assert "started a moment ago" in header and "`intent: new` starts a fresh task" in header
    assert "ship the parser" in text and "forbid: action:network" in text and len(text) <= 2000
    assert ledger_size(env, ws) == size and sorted(os.listdir(project_of(env, ws).cache_dir)) == cache


def test_the_first_prose_prompt_of_an_unlinked_session_adds_nothing_and_records_nothing(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    size = ledger_size(env, ws)
    started(env, ws, session="sess-B", source="clear")
    answer = typed(env, ws, "please go on", session="sess-B")
    # only what Guard enforces in this session, told once (issue 34): nothing of the task again
    assert answer["hookSpecificOutput"]["additionalContext"] == "intent-loop: " + enforcement_header("not_installed")
    assert answer["systemMessage"] == "intent-loop: " + enforcement_explained({"state": "not_installed"})
    assert typed(env, ws, "and on", session="sess-B") == {"continue": True}
    assert ledger_size(env, ws) == size  # no observation: the session is not linked
    assert session_hash("sess-B") not in state_of(env, ws)["sessions"]


def test_a_typed_claim_in_a_new_session_joins_the_current_task_and_publishes_the_next_version(env, ws):
    typed(env, ws, "intent: goal ship the parser\nintent: forbid action:network")
    task_id = current(env, ws)
    assert guard_pair(ws) == (f"intent:{task_id}", 1)
    answer = typed(env, ws, "intent: must-not action:publish", session="sess-after-clear")
    message = answer["systemMessage"]
    assert message.startswith(f"intent-loop: {published(2)}, {ENFORCEMENT_SHORT['not_installed']}")
    assert said(message, "joined", ids=[task_id]) == 1 and said(message, "recorded", "must-not") == 1
    state = state_of(env, ws)
    assert len(state["tasks"]) == 1 and current(env, ws) == task_id
    doc = guard_doc(ws)
    assert doc["envelope"]["contract_ref"] == f"intent:{task_id}" and doc["envelope"]["contract_version"] == 2
    assert doc["projection"]["authorization"]["forbidden"] == ["action:network"]
    assert doc["projection"]["must_and_must_not"]["must_not"] == ["action:publish"]
    assert contract_file.validate_document_bytes(json.dumps(doc).encode())[0] == "provider"
    assert state["sessions"][session_hash("sess-after-clear")] == task_id  # its first command linked it


def test_show_and_help_in_an_unlinked_session_read_the_current_task_and_link_nothing(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    size = ledger_size(env, ws)
    answer = typed(env, ws, "intent: show", session="sess-B")
    assert "ship the parser" in answer["reason"]
    assert ledger_size(env, ws) == size


def test_a_second_goal_in_an_old_current_task_joins_it_and_is_named(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    [first] = state_of(env, ws)["tasks"][current(env, ws)]["claims"]
    answer = typed(env, ws, "intent: goal fix the login page", session="sess-B")
    goals = next(e for e in read(answer["systemMessage"] + "\n" + context(answer)) if e.outcome == "goals")
    assert goals.words["count"] == "2" and goals.ids == (first[:8],)  # names the first goal to replace
    assert guard_doc(ws)["projection"]["objective"] == "ship the parser; fix the login page"


# -- unlinked sessions: the current task private or off ---------------------------------------------
@pytest.mark.parametrize("source", SOURCES)
def test_a_session_going_private_leaves_the_current_task_and_its_contract_to_the_others(env, ws, source):
    """Issue 35 item 8: `intent: private` makes one session private; the user asked not to be
    recorded, not to lift their rules, so the current task and Guard's contract stay."""
    typed(env, ws, "intent: goal ship the parser\nintent: forbid action:network")
    earlier = current(env, ws)
    contract = guard_pair(ws)
    typed(env, ws, "intent: private")
    assert current(env, ws) == earlier and guard_pair(ws) == contract
    text = started(env, ws, session="sess-cleared", source=source)
    assert "ship the parser" in text and "forbid: action:network" in text
    answer = typed(env, ws, "intent: must keep the API", session="sess-cleared")
    assert said(answer["systemMessage"], "recorded", "must") and current(env, ws) == earlier


def test_a_private_session_is_told_what_guard_still_enforces_there_and_records_nothing(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    earlier = current(env, ws)
    typed(env, ws, "intent: private")
    size = ledger_size(env, ws)
    text = started(env, ws, session="sess-A", source="compact")
    assert "private mode" in text and "ship the parser" not in text
    assert f"Guard still applies the contract of the workspace's current task {earlier[:8]}" in text
    answer = typed(env, ws, "intent: must keep the API")
    assert said(answer["systemMessage"], "acknowledged", "must") and ledger_size(env, ws) == size


def test_a_private_task_of_another_session_is_never_resumed(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    typed(env, ws, "intent: private")
    private_task = next(t for t, task in state_of(env, ws)["tasks"].items() if task["mode"] == "private")
    answer = typed(env, ws, f"intent: resume {private_task[:8]}", session="sess-B")
    assert "TASK_PRIVATE" in answer["reason"]
    assert session_hash("sess-B") not in state_of(env, ws)["sessions"]


@pytest.mark.parametrize("source", SOURCES)
def test_an_off_current_task_gets_a_new_session_one_line_and_on_turns_it_back(env, ws, source):
    typed(env, ws, "intent: goal ship the parser")
    task_id = current(env, ws)
    typed(env, ws, "intent: off")
    text = started(env, ws, session="sess-B", source=source)
    assert text.count("\n") == 0 and "off" in text and "ship the parser" not in text and "`intent: on`" in text
    answer = typed(env, ws, "intent: must keep the API", session="sess-B")
    assert "TASK_OFF" in answer["systemMessage"]
    answer = typed(env, ws, "intent: on", session="sess-B")
    assert said(answer["reason"], "on")
    assert state_of(env, ws)["tasks"][task_id]["mode"] == "on" and current(env, ws) == task_id


# -- linked sessions ---------------------------------------------------------------------------------
@pytest.mark.parametrize("source", SOURCES)
def test_a_session_linked_to_the_current_task_gets_its_view(env, ws, source):
    typed(env, ws, "intent: goal ship the parser")
    text = started(env, ws, session="sess-A", source=source)
    assert text.startswith("intent-loop: the user's own recorded intent") and "ship the parser" in text


def test_intent_new_in_another_session_is_told_to_the_first_session_model_and_user_once(env, ws):
    typed(env, ws, "intent: goal ship the parser\nintent: forbid action:network", session="sess-A")
    task_a = current(env, ws)
    typed(env, ws, "go on", session="sess-A")
    answer = typed(env, ws, "intent: new\nintent: goal write the docs", session="sess-B")
    task_b = current(env, ws)
    assert task_b != task_a
    answer = typed(env, ws, "go on", session="sess-A")
    expected = (f"Guard's contract now holds task {task_b[:8]} (goal: write the docs), changed in another session "
                f"a moment ago; `intent: resume {task_a[:8]}`")
    assert expected in answer["systemMessage"] and expected in context(answer)
    assert "write the docs" in context(answer)  # what Guard enforces is what the agent is told
    again = typed(env, ws, "and then", session="sess-A")
    assert "systemMessage" not in again and "Guard now enforces" not in context(again)


def test_a_session_linked_to_an_older_task_gets_the_notice_at_every_session_start(env, ws):
    typed(env, ws, "intent: goal ship the parser", session="sess-A")
    task_a = current(env, ws)
    typed(env, ws, "intent: new", session="sess-B")
    task_b = current(env, ws)
    for source in SOURCES:
        text = started(env, ws, session="sess-A", source=source)
        assert f"Guard enforces nothing: task {task_b[:8]}, changed in another session a moment ago, has no goal " \
               "yet" in text
        assert f"`intent: resume {task_a[:8]}` switches back" in text and "ship the parser" not in text


def test_a_claim_in_a_session_linked_to_an_older_task_makes_it_current_again_and_says_so(env, ws):
    typed(env, ws, "intent: goal ship the parser", session="sess-A")
    task_a = current(env, ws)
    typed(env, ws, "intent: new\nintent: goal write the docs", session="sess-B")
    task_b = current(env, ws)
    answer = typed(env, ws, "intent: must keep the API", session="sess-A")
    message = answer["systemMessage"]
    assert message.startswith(f"intent-loop: {published(2)}, {ENFORCEMENT_SHORT['not_installed']}")
    assert f"task {task_a[:8]} is current again" in message and task_b[:8] in message
    assert current(env, ws) == task_a and guard_pair(ws) == (f"intent:{task_a}", 2)


def test_intent_resume_with_an_id_makes_that_task_current_and_publishes_it(env, ws):
    typed(env, ws, "intent: goal ship the parser\nintent: forbid action:network", session="sess-A")
    task_a = current(env, ws)
    typed(env, ws, "intent: new\nintent: goal write the docs", session="sess-B")
    assert guard_pair(ws)[0] != f"intent:{task_a}"
    answer = typed(env, ws, f"intent: resume {task_a[:8]}", session="sess-C")
    [continues] = [e for e in read(answer["reason"]) if e.outcome == "continues"]
    assert continues.ids == (task_a[:8],) and continues.words["now"]  # it says the task is current now
    assert current(env, ws) == task_a
    doc = guard_doc(ws)
    assert doc["envelope"]["contract_ref"] == f"intent:{task_a}"
    assert doc["projection"]["authorization"]["forbidden"] == ["action:network"]
    linked = [e for e in events(env, ws) if e["event_type"] == "session_linked"]
    assert linked[-1]["payload"]["current"] is True and linked[-1]["actor"] == "user"


def test_an_upgraded_session_linked_to_an_older_task_is_told_at_most_once(env, ws):
    typed(env, ws, "intent: goal ship the parser", session="sess-A")
    typed(env, ws, "intent: new\nintent: goal write the docs", session="sess-B")
    cache = project_of(env, ws).cache_dir
    for name in os.listdir(cache):  # the seen records an older build wrote had no current-task fields
        if name.startswith("v2.seen-"):
            path = os.path.join(cache, name)
            with open(path, "rb") as fh:
                record = json.loads(fh.read())
            record.pop("current_user", None)
            record.pop("current_model", None)
            with open(path, "w") as fh:
                json.dump(record, fh)
    first = typed(env, ws, "go on", session="sess-A")
    assert "Guard's contract now holds task" in first["systemMessage"]
    second = typed(env, ws, "go on again", session="sess-A")
    assert "systemMessage" not in second


def test_a_local_answer_tells_the_user_and_the_next_model_prompt_tells_the_model(env, ws):
    typed(env, ws, "intent: goal ship the parser", session="sess-A")
    typed(env, ws, "intent: new\nintent: goal write the docs", session="sess-B")
    local = typed(env, ws, "intent: show", session="sess-A")
    assert "Guard's contract now holds task" in local["reason"]
    model = typed(env, ws, "go on", session="sess-A")
    assert "Guard's contract now holds task" in context(model) and "systemMessage" not in model


def test_a_stop_in_an_unlinked_session_records_nothing(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    size = ledger_size(env, ws)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-B"), env)
    assert ledger_size(env, ws) == size


# -- the MCP server ----------------------------------------------------------------------------------
def test_the_mcp_server_reads_the_current_task_in_an_unlinked_thread_and_moves_nothing(env, ws):
    typed(env, ws, "intent: goal ship the parser")
    task_id = current(env, ws)
    with McpServer(env) as server:
        server.initialize()
        snap = server.call("intent_get_snapshot", {}, workspace=ws, thread="thread-after-clear")
        assert "ship the parser" in snap["result"]["text"] and snap["task_id"] == task_id
        start = server.call("intent_start_task", {"initial_claims": [{"statement": "keep the API", "verb": "must"}]},
                            workspace=ws, thread="thread-after-clear")
        assert start["ok"] and not start["result"]["linked"]
    state = state_of(env, ws)
    assert current(env, ws) == task_id and session_hash("thread-after-clear") not in state["sessions"]
    proposal = next(c for c in state["candidates"].values() if c.get("kind") == "proposal")
    # the user confirms the agent's proposal in a new session: it joins the CURRENT task, never the
    # agent's, and Guard keeps enforcing the user's task
    answer = typed(env, ws, f"intent: confirm {proposal['candidate_id'][:8]}", session="sess-C")
    assert f"in task {task_id[:8]}" in answer["reason"]
    assert current(env, ws) == task_id and guard_pair(ws) == (f"intent:{task_id}", 2)
    assert guard_doc(ws)["projection"]["must_and_must_not"]["must"] == ["keep the API"]
    assert subprocess.run([CLI, "verify"], cwd=ws, env=env, capture_output=True, timeout=60).returncode == 0

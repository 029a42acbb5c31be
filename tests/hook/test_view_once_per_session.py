"""Issue 35 item 3: across a new session's SessionStart and its first prompt, each claim id reaches
the model at most once, with or without an agent proposal; the proposal is announced once, as its
own receipt item. (An agent proposal wrote the seen record before the first prompt looked for it,
so the first prompt took the session for one that had seen a view, and gave it again: 9 of 9.)"""
import json
import re
import tempfile
import time

import pytest

from intent_loop.hook import handlers, runtime
from intent_loop.intent.state import REDUCER
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading
from intent_loop.storage.ledger import Draft
from intent_loop.storage.transaction import mutate

PROPOSAL = "d4e58df6-0000-4000-8000-000000000000"


@pytest.fixture
def hook(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin",
           "CODEX_HOME": str(tmp_path / "codex-home")}

    def run(event, session_id, **payload):
        payload = dict(payload, session_id=session_id, cwd=str(ws), hook_event_name=event, transcript_path=None,
                       model="m", permission_mode="default")
        with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
            fin.write(json.dumps(payload).encode())
            fin.seek(0)
            runtime.run_hook(event, handlers.HANDLERS[event], stdin_fd=fin.fileno(), stdout_fd=fout.fileno(), env=env)
            fout.seek(0)
            return json.loads(fout.read())

    run.paths = lambda: paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], str(ws))
    return run


def _propose(paths):
    task_id = next(iter(reading.load_verified(paths, REDUCER).state["tasks"]))

    def plan(_state):
        return [Draft("proposal_added", task_id, "agent", {
            "candidate_id": PROPOSAL, "statement": "must: keep the API", "facets": ["hard_constraint"],
            "scope": "task", "verb": "must", "source_ref": {"kind": "agent_turn", "event_id": "mcp-1"}})]
    mutate(paths, REDUCER, request_id="mcp:1", operation="t", params={}, plan=plan, deadline=time.monotonic() + 10)


def _ids(*answers):
    text = "\n".join((a.get("hookSpecificOutput") or {}).get("additionalContext", "") for a in answers)
    return re.findall(r"\[([0-9a-f]{8})\]", text)


@pytest.mark.parametrize("proposal", [False, True])
@pytest.mark.parametrize("source", ["startup", "clear", "resume"])
def test_a_new_sessions_start_and_first_prompt_carry_each_claim_id_once(hook, proposal, source):
    hook("UserPromptSubmit", "A", prompt="intent: goal ship it\nintent: forbid action:network", turn_id="1")
    if proposal:
        _propose(hook.paths())
    start = hook("SessionStart", "B", source=source)
    first = hook("UserPromptSubmit", "B", prompt="please go on", turn_id="2")
    ids = _ids(start, first)
    assert len(ids) == 2 and len(set(ids)) == 2, ids
    announced = [line for line in first.get("systemMessage", "").split("; ") if PROPOSAL[:8] in line]
    assert len(announced) == (1 if proposal else 0), first.get("systemMessage")
    assert PROPOSAL[:8] not in _ids(start, first)  # a proposal is the user's to confirm, not a claim in the view
    again = hook("UserPromptSubmit", "B", prompt="and on", turn_id="3")
    assert _ids(again) == [] and PROPOSAL[:8] not in again.get("systemMessage", "")

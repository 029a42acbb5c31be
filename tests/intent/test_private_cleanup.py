"""Issue 14, private mode (seed 000): a retry finishes an interrupted cleanup, and hooks honour
every session's task-level control, not only their own."""
import time

import pytest

from helpers.cli_runner import make_cli
from intent_loop.intent import private_mode, prompt_commands
from intent_loop.intent.state import REDUCER
from intent_loop.ops import apply_commands
from intent_loop.storage.paths import session_hash
from intent_loop.storage.reading import load_verified

S1, S2, S3 = (session_hash(f"private-{n}") for n in (1, 2, 3))


@pytest.fixture
def cli(tmp_path):
    return make_cli(tmp_path)


def commands(cli, session, prompt, request_id):
    return apply_commands.run_commands(
        cli.project(), commands=prompt_commands.parse_prompt(prompt), session_hash=session,
        source_ref={"kind": "user_event", "event_id": request_id}, request_id=request_id,
        deadline=time.monotonic() + 20, workspace=cli.workspace, env={})


def test_a_retried_on_finishes_the_cleanup_a_crash_left_undone(cli, monkeypatch):
    commands(cli, S1, "intent: goal ship it", "r-1")
    commands(cli, S1, "intent: private", "r-2")
    assert private_mode.read_control(cli.project(), S1) is not None

    def crash(*args, **kwargs):
        raise KeyboardInterrupt("killed between the events and the control removal")

    with monkeypatch.context() as patched:
        patched.setattr(private_mode, "release_control", crash)
        with pytest.raises(KeyboardInterrupt):
            commands(cli, S1, "intent: on", "r-3")
    assert private_mode.read_control(cli.project(), S1) is not None  # the task is on, the session still private

    retry = commands(cli, S1, "intent: on", "r-3")  # Codex retries the same prompt
    assert retry.replayed
    assert private_mode.read_control(cli.project(), S1) is None
    state = load_verified(cli.project(), REDUCER).state
    assert not private_mode.is_private_here(cli.project(), S1, state["tasks"][state["sessions"][S1]])


def test_another_sessions_control_of_the_task_keeps_a_third_session_quiet(cli):
    receipt = commands(cli, S1, "intent: goal ship it", "r-1")
    task_id = receipt.task_id
    project = cli.project()
    # a control naming task_id itself, as a session left it before `on --task` from the CLI
    private_mode.claim_control(project, session_hash=S2, task_id=task_id)
    # a third session neither follows nor resumes a task any session's control names (docs/hooks.md)
    refused = commands(cli, S3, "intent: resume", "r-3")
    assert [e.code for e in refused.rejected] == ["TASK_PRIVATE"]
    state = load_verified(project, REDUCER).state
    assert S3 not in state["sessions"]
    assert private_mode.is_private_here(project, S3, state["tasks"][task_id])
    cli.json("on", "--task", task_id[:8])
    assert private_mode.controls_for_task(project, task_id) == []
    assert not private_mode.is_private_here(project, S3, state["tasks"][task_id])

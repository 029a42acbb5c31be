"""End to end, issue 15: what the user sees in the real Codex 0.169.0 (offline, mock model).

A recorded command's receipt line appears (systemMessage), `intent: show` is answered by the hook
under "Blocked by hook" with no model request, and a local command typed while a turn is running
(steering) is handled as docs/hooks.md says. Fixtures and helpers come from test_real_codex.py.
"""
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_real_codex as base  # noqa: E402
from mock_model import developer_messages  # noqa: E402
from test_real_codex import (  # noqa: E402
    BYPASS,
    CLI,
    CODEX_BIN,
    CONFIG_TOML,
    TUI_DEADLINE,
    TURN_TIMEOUT,
    _Tmux,
    _wait_for,
    hook_results,
    install_hooks,
    pytestmark,  # noqa: F401 (the same skips: no Codex binary, no dist/)
    run_bounded,
    session_id_of,
)

from helpers.receipt_words import head, published  # noqa: E402
from intent_loop.ops.enforcement_words import ENFORCEMENT_SHORT  # noqa: E402

mock_model = base.mock_model  # the fixtures, by the names the tests ask for
codex_env = base.codex_env

TMUX_MISSING = "tmux is not installed: the TUI tests need it to type into Codex and read its screen"


def _setup(mock_model, codex_env):
    server, wrap = mock_model
    env, codex_home, data_root, workspace = codex_env
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url))
    install_hooks(env, codex_home)
    return server, wrap, env, codex_home, workspace


def _shown(env, workspace):
    proc = subprocess.run([str(CLI), "show"], cwd=workspace, env=env, capture_output=True, text=True, timeout=30)
    return proc.stdout if proc.returncode == 0 else ""


def test_codex_exec_receipt_and_a_local_show(mock_model, codex_env):
    server, wrap, env, codex_home, workspace = _setup(mock_model, codex_env)
    prompt = "Look at the login flow.\nintent: goal Fix the exec redirect loop\n"
    rc, out, err, _secs = run_bounded([*wrap([CODEX_BIN, "exec", *BYPASS]), prompt], cwd=workspace, env=env,
                                      timeout=TURN_TIMEOUT)
    assert rc == 0, err
    assert ("UserPromptSubmit", "Completed") in hook_results(err), err
    assert len(server.response_bodies()) == 1
    # codex exec 0.169.0 prints no systemMessage of a Completed hook (observed): the receipt line is
    # asserted through the TUI below; here, the model's copy of the receipt and the ledger
    assert any("intent-loop receipt" in m for m in developer_messages(server.response_bodies()[0]))
    assert "goal: Fix the exec redirect loop" in _shown(env, workspace)
    session_id = session_id_of(err, out, str(codex_home))
    assert session_id

    rc, out, err, _secs = run_bounded([*wrap([CODEX_BIN, "exec", "resume", *BYPASS]), session_id, "intent: show"],
                                      cwd=workspace, env=env, timeout=TURN_TIMEOUT)
    assert rc == 0, err
    assert ("UserPromptSubmit", "Blocked") in hook_results(err), err
    assert len(server.response_bodies()) == 1, "intent: show reached the model"


def _has_user_text(body, text):
    return any(text in json.dumps(item) for item in body.get("input", []) if item.get("role") == "user")


def _tui(env, wrap, workspace):
    env = dict(env, TERM="xterm-256color")
    pinned = [f"{k}={env[k]}" for k in ("HOME", "CODEX_HOME", "INTENT_LOOP_DATA_DIR", "TERM")]
    command = "exec " + shlex.join(wrap(["env", *pinned, CODEX_BIN, "--dangerously-bypass-hook-trust"]))
    return _Tmux(command, cwd=workspace, env=env)


def _submit(tmux, text):
    tmux.type_text(text)
    time.sleep(0.5)  # typed text and Enter far apart, so Enter is not taken as part of a paste
    tmux.press("Enter")


def _start(tmux, deadline):
    ready = _wait_for(lambda: "OpenAI Codex" in (s := tmux.screen()) and "›" in s, deadline)
    assert ready, f"the TUI did not come up:\n{tmux.screen()}"
    time.sleep(0.5)  # let the composer settle before typing


@pytest.mark.skipif(shutil.which("tmux") is None, reason=TMUX_MISSING)
def test_tui_shows_the_receipt_and_answers_show_locally(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    deadline = time.monotonic() + TUI_DEADLINE
    tmux = _tui(env, wrap, workspace)
    try:
        _start(tmux, deadline)
        _submit(tmux, "intent: goal Fix the TUI receipt loop")  # a claim verb: it goes to the model too
        if not _wait_for(lambda: server.response_bodies(), min(deadline, time.monotonic() + 10)):
            tmux.press("Enter")  # a first Enter swallowed while the TUI was still busy
        # the Guard line first (issue 22), with what Guard enforces (issue 34: no Guard in this Codex home)
        receipt = f"intent-loop: {published(1)}, {ENFORCEMENT_SHORT['not_installed']}; {head('recorded', 'goal')}"
        assert _wait_for(lambda: receipt in tmux.screen(), deadline), tmux.screen()
        assert _wait_for(lambda: "Done." in tmux.screen(), deadline), tmux.screen()
        requests = len(server.response_bodies())

        _submit(tmux, "intent: show")
        screen = _wait_for(lambda: "Blocked by hook" in (s := tmux.screen()) and "Fix the TUI receipt loop" in
                           s.split("Blocked by hook", 1)[1] and s, deadline)
        assert screen, f"no local answer on screen:\n{tmux.screen()}"
        time.sleep(1.0)  # a request, had one been made, would have arrived by now
        # Codex also asks the model for a thread title after the first prompt: count prompts, not requests
        assert not [b for b in server.response_bodies()[requests - 1:] if _has_user_text(b, "intent: show")], \
            "intent: show reached the model"
        print("real-codex TUI screen after `intent: show`:\n" + screen)
    finally:
        tmux.close()


@pytest.mark.skipif(shutil.which("tmux") is None, reason=TMUX_MISSING)
def test_tui_local_command_typed_while_a_turn_runs(mock_model, codex_env):
    """Steering: a second UserPromptSubmit of the running turn. The model's answer is held back
    while `intent: show` is typed. Codex 0.169.0 ends the running turn when such a message is
    blocked, so the hook answers it with the receipt line only (hook/transcript.py tells it apart
    from a turn's first prompt): the turn still finishes with the model's answer."""
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    deadline = time.monotonic() + TUI_DEADLINE
    tmux = _tui(env, wrap, workspace)
    try:
        _start(tmux, deadline)
        _submit(tmux, "intent: goal Fix the steering loop")
        # the Guard line first (issue 22), with what Guard enforces (issue 34: no Guard in this Codex home)
        receipt = f"intent-loop: {published(1)}, {ENFORCEMENT_SHORT['not_installed']}; {head('recorded', 'goal')}"
        assert _wait_for(lambda: receipt in tmux.screen(), deadline), tmux.screen()
        server.gate.clear()
        _submit(tmux, "Now a second turn that the model is slow to answer")
        assert _wait_for(lambda: len(server.response_bodies()) >= 2, deadline), tmux.screen()
        requests = len(server.response_bodies())
        _submit(tmux, "intent: show")
        time.sleep(3.0)
        during = tmux.screen()
        server.gate.set()
        finished = _wait_for(lambda: during != (s := tmux.screen()) and "Done." in s.rsplit("slow to answer", 1)[-1]
                             and s, deadline)
        after = tmux.screen()
        print("real-codex TUI while the turn ran:\n" + during + "\nafter the model answered:\n" + after)
        bodies = server.response_bodies()
        print(f"model requests: {len(bodies)} (before `intent: show`: {requests})")
        assert finished, "the running turn did not finish after a local command was typed into it"
        assert "Blocked by hook" not in after.rsplit("slow to answer", 1)[-1], after
        assert "typed while a turn ran" in after.rsplit("slow to answer", 1)[-1].replace("\n", " "), after
    finally:
        server.gate.set()
        tmux.close()

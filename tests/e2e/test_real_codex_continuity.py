"""End to end, issue 21: which task a session sees (docs/hooks.md, "Which task a session sees: the
current task"), through the real Codex 0.169.0 (offline, mock model) and the built hooks.

Codex gives a new session_id on `/clear` and on every new start, with nothing naming the session
before it (tests/fixtures/codex-0.169.0/continuity/README.md), so the workspace's current task (the
task of the newest user change) is what every session there is given: at SessionStart one header
line and the user's claims; a claim typed there joins that task (the same Guard contract_ref, the
next version); a session whose task another session moved away from is told so, once, in the
receipt line and in the model's context. Fixtures and helpers come from test_real_codex.py, the TUI
driver from codex_session.py.
"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_real_codex as base  # noqa: E402
from codex_session import CodexSession, last_user_text, turn_requests  # noqa: E402
from mock_model import developer_messages, function_call, function_outputs  # noqa: E402
from test_real_codex import (  # noqa: E402
    BYPASS,
    CLI,
    CODEX_BIN,
    CONFIG_TOML,
    TURN_TIMEOUT,
    _wait_for,
    hook_results,
    install_hooks,
    pytestmark,  # noqa: F401 (the same skips: no Codex binary, no dist/)
    run_bounded,
)

from helpers.receipt_words import head, published, read  # noqa: E402

mock_model = base.mock_model  # the fixtures, by the names the tests ask for
codex_env = base.codex_env

TMUX_MISSING = "tmux is not installed: the TUI tests need it to type into Codex and read its screen"
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason=TMUX_MISSING)

STEP = 30  # seconds for one TUI step (a prompt and its answer, a screen to appear)
FOLLOWS = "follows the workspace's current task"
GOAL = "Fix the login redirect loop"
SPILL_MARKERS = ("Full hook output saved to", "truncated output", "tokens truncated")


# -- helpers ---------------------------------------------------------------------------------
def _setup(mock_model, codex_env):
    server, wrap = mock_model
    env, codex_home, data_root, workspace = codex_env
    env = dict(env, TERM="xterm-256color")
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url))
    install_hooks(env, codex_home)
    return server, wrap, env, codex_home, workspace


def _cli(env, workspace, *args):
    proc = subprocess.run([str(CLI), *args], cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"intent-loop {' '.join(args)[:80]} exited {proc.returncode}:\n" \
                                 f"{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def _show(env, workspace):
    return _cli(env, workspace, "show")


def _contract(workspace):
    """(contract_ref, contract_version) of the Guard file, or None when there is none."""
    path = Path(workspace) / ".execution-fidelity" / "contract.json"
    try:
        envelope = json.loads(path.read_bytes())["envelope"]
    except (OSError, ValueError, KeyError):
        return None
    return envelope.get("contract_ref"), envelope.get("contract_version")


def _flat(text):
    """The text with every run of whitespace made one space: a receipt the TUI wrapped reads whole."""
    return " ".join(text.split())


def _ours(body):
    return [m for m in developer_messages(body) if "intent-loop" in m]


def _this_prompt(body):
    """The developer messages after the request's last user message: the UserPromptSubmit context of
    this prompt (the rest of `input` is the conversation so far, earlier notices included)."""
    items = [i for i in body.get("input") or [] if isinstance(i, dict)]
    users = [n for n, item in enumerate(items) if item.get("role") == "user"]
    after = items[users[-1] + 1:] if users else items
    return [m for m in developer_messages({"input": after}) if "intent-loop" in m]


def _spilled(messages):
    return [m[:300] for m in messages if any(marker in m for marker in SPILL_MARKERS)]


def _type_lines(session, lines):
    """Type a multi-line prompt (Ctrl+J is a new line in the 0.169.0 composer) and send it."""
    for index, line in enumerate(lines):
        if index:
            session.tmux.press("C-j")
            time.sleep(0.3)
        session.tmux.type_text(line)
        time.sleep(0.5)  # typed text and the next key far apart, so neither is taken as a paste


def _submit_lines(session, lines, timeout=STEP):
    """_type_lines + Enter, then wait for that prompt's turn request (CodexSession.submit's logic)."""
    want = len(turn_requests(session.server)) + 1
    _type_lines(session, lines)
    session.tmux.press("Enter")
    got = lambda: len(turn_requests(session.server)) >= want  # noqa: E731
    if not _wait_for(got, time.monotonic() + 10):
        session.tmux.press("Enter")  # a first Enter swallowed while the TUI was busy
    assert _wait_for(got, time.monotonic() + timeout), \
        f"no turn request for the prompt {lines!r}:\n{session.screen()}"
    return turn_requests(session.server)[-1]


def _wait_screen(session, predicate, what, timeout=STEP):
    screen = session.wait_screen(predicate, timeout)
    assert screen, f"not on screen within {timeout} s: {what}\n{session.screen()}"
    return screen


def _hook_line(screen, needle):
    """The `↳ Hook · ...` receipt that holds `needle` (the screen flattened), or ""."""
    flat = _flat(screen)
    for part in flat.split("↳ Hook · ")[1:]:
        head = part.split(" • ", 1)[0].split(" › ", 1)[0]
        if needle in head:
            return head
    return ""


@contextlib.contextmanager
def _tui(workspace, env, server, wrap):
    """A CodexSession that is closed however the test ends, its tmux socket file removed too
    (`tmux kill-server` leaves it in $TMUX_TMPDIR)."""
    session = CodexSession(workspace, env, server, wrap)
    socket = session.tmux._tmux("display-message", "-p", "#{socket_path}", check=False).strip()
    try:
        yield session
    finally:
        session.close()
        if socket:
            with contextlib.suppress(OSError):
                os.unlink(socket)


def _exec(wrap, env, workspace, prompt, *args):
    rc, out, err, secs = run_bounded([*wrap([CODEX_BIN, "exec", *BYPASS, *args]), prompt], cwd=workspace,
                                     env=env, timeout=TURN_TIMEOUT)
    assert rc == 0, f"codex exec exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    failed = [r for r in hook_results(err) if r[1] != "Completed"]
    assert not failed, f"hook runs not Completed: {failed}\nstderr:\n{err}"
    return out, err, secs


# -- 1. /clear: the new session is given the current task ------------------------------------
@needs_tmux
def test_tui_after_clear_the_model_gets_the_current_task(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    with _tui(workspace, env, server, wrap) as session:
        _submit_lines(session, [f"intent: goal {GOAL}", "Please look at the login flow.",
                                "intent: forbid action:network"])
        _wait_screen(session, lambda s: head("recorded", "forbid") in _flat(s) and "Done." in s, "the first receipt")
        session.wait_idle(STEP)
        before = _contract(workspace)
        assert before is not None and before[0].startswith("intent:"), before

        session.clear()
        body = session.submit("What should we look at next?", timeout=STEP)
        assert last_user_text(body) == "What should we look at next?", last_user_text(body)
        ours = _ours(body)
        view = [m for m in ours if FOLLOWS in m]
        assert view, f"no follow header in the request after /clear; intent-loop messages: {ours}"
        assert GOAL in view[0] and "forbid: action:network" in view[0], view[0]
        assert f"current task {before[0][len('intent:'):][:8]}" in view[0], (before, view[0])
        assert not _spilled(developer_messages(body))
        _wait_screen(session, lambda s: "Done." in s.split("What should we look at next?", 1)[-1],
                     "the answer after /clear (/clear empties the screen)")
        session.stop()

    shown = _show(env, workspace)
    assert f"goal: {GOAL}" in shown and "forbid: action:network" in shown, shown
    assert _contract(workspace) == before, "a prose prompt after /clear changed the Guard file"


# -- 2. a second codex exec: a new session, the same current task ----------------------------
def test_second_codex_exec_gets_the_current_task(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    _exec(wrap, env, workspace, f"Please look at the login flow.\nintent: goal {GOAL}\n"
                                "intent: must keep the public API unchanged\n")
    ref = _contract(workspace)
    assert ref is not None, "the first codex exec published no Guard file"

    _exec(wrap, env, workspace, "Carry on with the fix.")
    bodies = server.response_bodies()
    assert len(bodies) == 2, [r["path"] for r in server.requests]
    ours = _ours(bodies[1])
    view = [m for m in ours if FOLLOWS in m]
    assert view, f"the second codex exec got no follow header; intent-loop messages: {ours}"
    assert GOAL in view[0] and "keep the public API unchanged" in view[0], view[0]
    assert f"current task {ref[0][len('intent:'):][:8]}" in view[0], (ref, view[0])
    assert _contract(workspace) == ref
    shown = _show(env, workspace)
    assert GOAL in shown and "keep the public API unchanged" in shown, shown


# -- 3. a claim typed after /clear joins the current task: same contract_ref, next version ---
@needs_tmux
def test_tui_claim_after_clear_joins_the_current_task(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    with _tui(workspace, env, server, wrap) as session:
        session.submit(f"intent: goal {GOAL}", timeout=STEP)
        _wait_screen(session, lambda s: head("recorded", "goal") in s and "Done." in s, "the goal's receipt")
        session.wait_idle(STEP)
        ref, version = _contract(workspace) or (None, None)
        assert ref and isinstance(version, int), (ref, version)

        session.clear()
        body = session.submit("intent: must keep the public API unchanged", timeout=STEP)
        receipt = published(version + 1)
        screen = _wait_screen(session, lambda s: bool(_hook_line(s, receipt)), f"the receipt with {receipt}")
        line = _hook_line(screen, receipt)
        print(f"receipt after /clear: {line}")
        assert line.startswith(f"intent-loop: {receipt}, "), line  # then what Guard enforces (issue 34)
        assert head("joined") in line and head("recorded", "must") in line, line
        assert ref[len("intent:"):][:8] in line, (ref, line)
        assert _contract(workspace) == (ref, version + 1), _contract(workspace)
        assert any("keep the public API unchanged" in m for m in _ours(body)), _ours(body)
        session.stop()

    shown = _show(env, workspace)
    assert GOAL in shown and "keep the public API unchanged" in shown, shown
    tasks = [line for line in _cli(env, workspace, "status").splitlines() if line.startswith("task ")]
    assert len(tasks) == 1 and ref[len("intent:"):][:8] in tasks[0], tasks


# -- 4. two TUI sessions: B's `intent: new` is news for A -------------------------------------
@needs_tmux
def test_two_tui_sessions_a_is_told_when_b_starts_a_new_task(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    with _tui(workspace, env, server, wrap) as a:
        a.submit(f"intent: goal {GOAL}", timeout=STEP)
        _wait_screen(a, lambda s: head("recorded", "goal") in s and "Done." in s, "A's goal receipt")
        a.wait_idle(STEP)
        ref, _version = _contract(workspace) or (None, None)
        assert ref, "A's goal published no Guard file"
        task_a = ref[len("intent:"):]

        with _tui(workspace, env, server, wrap) as b:
            requests = len(turn_requests(server))
            b.type_line("intent: new")
            screen_b = _wait_screen(b, "Blocked by hook", "B's local answer to `intent: new`")
            time.sleep(1.0)  # a request, had one been made, would have arrived by now
            assert len(turn_requests(server)) == requests, "intent: new reached the model"
            started = [entry.ids[0] for entry in read(_flat(screen_b)) if entry.outcome == "started"]
            assert started, f"B's answer names no new task:\n{screen_b}"
            task_b = started[-1]
            assert task_b != task_a[:8]
            b.stop()

        body = a.submit("Carry on with the fix.", timeout=STEP)
        assert last_user_text(body) == "Carry on with the fix."
        screen_a = _wait_screen(a, lambda s: bool(_hook_line(s, "changed in another session")),
                                "A's receipt line telling that the task changed in another session")
        line = _hook_line(screen_a, "changed in another session")
        print(f"A's receipt: {line}")
        expected = (f"Guard enforces nothing: task {task_b}, changed in another session a moment ago, has no goal "
                    f"yet; `intent: resume {task_a[:8]}` switches back to task {task_a[:8]}")
        # the screen shows the line up to the terminal's width; the model's notice is whole
        assert expected[:110] in line, f"A's receipt line: {line!r}\nexpected: {expected!r}"
        notices = [m for m in _this_prompt(body) if "changed in another session" in m]
        assert notices and expected in notices[0], f"A's request carries no notice: {_this_prompt(body)}"
        assert _contract(workspace) is None, "Guard still has a contract for a current task with no goal"

        body = a.submit("And the tests too.", timeout=STEP)  # told once: not again
        assert last_user_text(body) == "And the tests too."
        assert not [m for m in _this_prompt(body) if "changed in another session" in m], _this_prompt(body)
        screen = _wait_screen(a, lambda s: "Done." in s.split("And the tests too.", 1)[-1], "A's second answer")
        assert "changed in another session" not in _flat(screen.split("And the tests too.", 1)[-1]), screen
        a.stop()

    status = _cli(env, workspace, "status")
    assert task_a[:8] in status and task_b in status, status


@needs_tmux
def test_two_tui_sessions_b_starts_a_task_with_a_goal(mock_model, codex_env):
    """The same with a goal in B's new task: Guard publishes B's task, and A is told and given its view."""
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    with _tui(workspace, env, server, wrap) as a:
        a.submit(f"intent: goal {GOAL}", timeout=STEP)
        _wait_screen(a, lambda s: head("recorded", "goal") in s and "Done." in s, "A's goal receipt")
        a.wait_idle(STEP)
        ref_a, _version = _contract(workspace) or (None, None)
        assert ref_a, "A's goal published no Guard file"
        task_a = ref_a[len("intent:"):]

        with _tui(workspace, env, server, wrap) as b:
            _submit_lines(b, ["intent: new", "intent: goal Add a dark mode toggle"])
            _wait_screen(b, lambda s: head("recorded", "goal") in s and "Done." in s, "B's receipt")
            b.wait_idle(STEP)
            ref_b, _version = _contract(workspace) or (None, None)
            assert ref_b and ref_b != ref_a, (ref_a, ref_b)
            task_b = ref_b[len("intent:"):]
            b.stop()

        body = a.submit("Carry on with the fix.", timeout=STEP)
        screen_a = _wait_screen(a, lambda s: bool(_hook_line(s, "changed in another session")),
                                "A's receipt line telling that the task changed in another session")
        line = _hook_line(screen_a, "changed in another session")
        print(f"A's receipt: {line}")
        expected = (f"Guard's contract now holds task {task_b[:8]} (goal: Add a dark mode toggle), changed in "
                    f"another session a moment ago; `intent: resume {task_a[:8]}` switches back to task {task_a[:8]}")
        # the screen shows the line up to the terminal's width; the model's notice is whole
        assert expected[:110] in line, f"A's receipt line: {line!r}\nexpected: {expected!r}"
        context = "\n".join(_this_prompt(body))
        assert expected in context, f"A's request carries no notice: {_this_prompt(body)}"
        assert "Add a dark mode toggle" in context, f"A's request lacks the current task's view: {context}"
        a.stop()
    assert "Add a dark mode toggle" in _show(env, workspace)


# -- 5. the budget: a view at its 2,000-character cap in CJK stays inline --------------------
CJK = "漢字仮名交じり文の制約事項を確認して記録する"  # 22 characters, 3 UTF-8 bytes each


def _cjk(n, tag):
    text = (f"{tag}" + CJK * 30)[:n]
    assert len(text) == n
    return text


def test_cjk_view_at_the_cap_reaches_the_model_inline(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    claims = [("goal", _cjk(480, "目標〇"))] + [("must", _cjk(480, f"必須{i}")) for i in range(1, 6)]
    for verb, text in claims:  # the user's terminal in a folder Codex has not recorded yet: --project .
        _cli(env, workspace, "claim", "add", verb, text, "--project", ".")
    shown = _show(env, workspace)
    assert all(text[:40] in shown for _verb, text in claims), shown

    _exec(wrap, env, workspace, "続けてください。")
    bodies = server.response_bodies()
    assert len(bodies) == 1, [r["path"] for r in server.requests]
    developer = developer_messages(bodies[0])
    assert not _spilled(developer), f"hook context spilled to a file: {_spilled(developer)}"
    view = [m for m in developer if FOLLOWS in m]
    assert len(view) == 1, [m[:200] for m in developer]
    text = view[0]
    size = len(text.encode("utf-8"))
    print(f"SessionStart context: {len(text)} characters, {size} UTF-8 bytes")
    assert text.startswith("intent-loop: this session follows the workspace's current task"), text[:200]
    assert "more claims omitted" in text, f"the view did not reach its cap ({len(text)} characters):\n{text}"
    assert 1500 < len(text) <= 2000, len(text)
    assert size <= 10_000, size
    assert claims[0][1] in text, "the goal is not in the view whole"
    # what the hook answers a new session right now is what the model got, every character of it
    assert _ageless(text) == _ageless(_session_start_context(env, workspace)), \
        "the model's copy differs from the hook's answer"


def _ageless(text):
    """The header's `(started 2 minutes ago)` made one fixed phrase: the clock moved between the runs."""
    return re.sub(r"\(started [^)]*\)", "(started ...)", text)


def _session_start_context(env, workspace):
    """The SessionStart hook's additionalContext for a fresh session id (an unlinked session's
    SessionStart writes nothing to the ledger, so asking it changes nothing)."""
    payload = {"session_id": str(uuid.uuid4()), "transcript_path": None, "cwd": str(workspace),
               "hook_event_name": "SessionStart", "model": "mock-model", "permission_mode": "bypassPermissions",
               "source": "startup"}
    proc = subprocess.run([str(base.DIST / "intent-loop-session-start")], input=json.dumps(payload), cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


# -- 6. a subagent's prompt is answered with the current task's view -------------------------
PARENT_PROMPT = "Please spawn a subagent to list the files."
CHILD_TASK = "Child task: list the files in the project."
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _user_texts(body):
    return [json.dumps(item.get("content")) for item in body.get("input") or []
            if isinstance(item, dict) and item.get("role") == "user"]


def _is_child(body):
    texts = _user_texts(body)
    return any(CHILD_TASK in t for t in texts) and not any(PARENT_PROMPT in t for t in texts)


def _subagent_responder(body, number):
    """The recipe of continuity/README.md: spawn_agent, the child's plain answer, wait_agent, Done."""
    if not body.get("tools") or _is_child(body):
        return None
    outputs = function_outputs(body)
    if "call_wait" in outputs:
        return None
    if "call_spawn" in outputs:
        spawned = outputs["call_spawn"]
        found = UUID.search(spawned if isinstance(spawned, str) else json.dumps(spawned))
        targets = [found.group(0)] if found else []
        return [function_call("call_wait", "wait_agent", {"targets": targets, "timeout_ms": 20000},
                              namespace="multi_agent_v1")]
    return [function_call("call_spawn", "spawn_agent", {"message": CHILD_TASK}, namespace="multi_agent_v1")]


def test_subagent_prompt_gets_the_current_task_view(mock_model, codex_env):
    server, wrap, env, _home, workspace = _setup(mock_model, codex_env)
    _exec(wrap, env, workspace, f"intent: goal {GOAL}\nintent: forbid action:network\n")
    ref = _contract(workspace)
    assert ref is not None

    server.respond_with(_subagent_responder)
    _out, err, secs = _exec(wrap, env, workspace, PARENT_PROMPT)
    bodies = server.response_bodies()
    children = [b for b in bodies if _is_child(b)]
    summary = [(i, "child" if _is_child(b) else "parent", last_user_text(b)[:60], sorted(function_outputs(b)))
               for i, b in enumerate(bodies)]
    assert children, f"no request of the subagent reached the mock ({secs:.1f} s): {summary}\nstderr:\n{err}"
    ours = _ours(children[0])
    print(f"subagent run: {secs:.1f} s, requests {summary}")
    view = [m for m in ours if "you run as a subagent" in m]
    assert view, f"the subagent's request carries no intent-loop view; its developer messages: " \
                 f"{[m[:200] for m in developer_messages(children[0])]}"
    assert GOAL in view[0] and "forbid: action:network" in view[0], view[0]
    assert _contract(workspace) == ref, "the subagent changed the Guard file"

"""Issue 15 through the built hook binaries: the user's receipt line, local answers for prompts
made only of management verbs, the view a local answer leaves unseen, and failures that never block."""
import json
import os
import subprocess

import pytest

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import DIST, hold_project_lock, hook, prompt_payload
from helpers.receipt_words import published, rendered, said
from intent_loop.ops.enforcement_words import ENFORCEMENT_SHORT, enforcement_explained
from intent_loop.ops.receipts import CHANGES

pytestmark = requires_dist
env = hook_binaries.env  # the fixtures, by the names the tests ask for
ws = hook_binaries.ws
CLI = os.path.join(DIST, "intent-loop")


def _context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def _cli_show(env, ws):
    proc = subprocess.run([CLI, "show"], cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.rstrip("\n")


def _claim_ids(env, ws):
    return [line.split("[", 1)[1][:8] for line in _cli_show(env, ws).splitlines() if line.startswith("- [")]


def test_receipt_line_names_verbs_ids_rejections_and_the_contract_version(env, ws):
    prompt = "please\nintent: goal ship the thing\nintent: goals typo\nintent: must keep tests green"
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, prompt), env)
    message = answer["systemMessage"]
    ids = _claim_ids(env, ws)
    # the Guard line first: it is never cut (the rest may be), then each line in the order typed
    assert message.startswith(f"intent-loop: {published(1)}, {ENFORCEMENT_SHORT['not_installed']}; "
                              + rendered("recorded", "goal", ids[0]))
    assert said(message, "recorded", "must", ids=[ids[1]]) == 1
    assert said(message, "rejected", code="UNKNOWN_VERB", line=3) == 1 and "did you mean `goal`" in message
    # two lines of at most 160 characters; what Guard enforces follows once a session on its own line
    line, told = message.split("\nintent-loop: ")
    assert all(len(row) <= 160 for row in line.splitlines()) and len(line.splitlines()) <= 2
    assert told == enforcement_explained({"state": "not_installed"})
    assert "intent-loop receipt" in _context(answer)  # the model keeps its receipt and view
    assert "decision" not in answer


def test_receipt_line_keeps_two_lines_and_counts_the_rest(env, ws):
    prompt = "go\n" + "\n".join(f"intent: must keep rule number {n} intact" for n in range(30))
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, prompt), env)
    receipt, _told = answer["systemMessage"].split("\nintent-loop: ")  # then what Guard enforces, once
    lines = receipt.splitlines()
    assert len(lines) == 2 and all(len(line) <= 160 for line in lines)
    assert lines[1].endswith(" more: intent: show") and "; +" in lines[1]


def test_receipt_says_why_guard_was_not_updated(env, ws):
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: must keep tests green"), env)
    # in words: the code names the contract's inner part (issue 25); --json outputs carry it
    assert "Guard not updated: task " in answer["systemMessage"]
    assert "no goal yet (`intent: goal ...`)" in answer["systemMessage"]
    assert "PROJECTION_INCOMPLETE" not in answer["systemMessage"]


def test_prompt_without_commands_stays_silent(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    out, _answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "just prose", turn="t-2"), env)
    assert out == b'{"continue":true}'


def test_show_alone_is_answered_locally_with_the_cli_view(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it\nintent: must keep tests green"), env)
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: show", turn="t-2"), env)
    assert set(answer) == {"continue", "decision", "reason"} and answer["decision"] == "block"
    # the same view and Guard line; the CLI adds when the hooks saw Guard's state (it cannot see it itself)
    assert answer["reason"].endswith(_cli_show(env, ws).rsplit(", as the hooks saw it ", 1)[0])


def test_help_and_rejections_alone_are_answered_locally(env, ws):
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: help\n\nintent: gaol x"), env)
    assert answer["decision"] == "block"
    assert "drop <id>" in answer["reason"] and said(answer["reason"], "rejected", code="UNKNOWN_VERB", line=3)


def test_a_claim_or_prose_sends_the_prompt_to_the_model(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    for turn, prompt in (("t-2", "intent: show\nwhat next?"), ("t-3", "intent: show\nintent: must stay small")):
        _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, prompt, turn=turn), env)
        assert "decision" not in answer and "ship it" in _context(answer)


def test_subagent_prompt_is_never_answered_locally(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    payload = prompt_payload(ws, "intent: show", turn="t-2", agent_id="019a-agent", agent_type="worker")
    _out, answer, _t = hook("UserPromptSubmit", payload, env)
    assert "decision" not in answer


def test_local_drop_leaves_the_view_unseen_for_the_next_model_prompt(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it\nintent: must keep tests green"), env)
    dropped = _claim_ids(env, ws)[1]
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, f"intent: drop {dropped}", turn="t-2"), env)
    assert answer["decision"] == "block" and said(answer["reason"], "dropped", ids=[dropped])
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "carry on", turn="t-3"), env)
    context = _context(answer)
    first, view = context.split("\n", 1)
    assert "answered without you" in first and said(first, "dropped", ids=[dropped], table=CHANGES)
    assert "ship it" in view and dropped not in view
    out, _answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "and again", turn="t-4"), env)
    assert out == b'{"continue":true}'  # shown once, then seen


def test_local_off_still_tells_the_model_once(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    hook("UserPromptSubmit", prompt_payload(ws, "intent: off", turn="t-2"), env)
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "carry on", turn="t-3"), env)
    assert "intent-loop is off" in _context(answer)


def test_management_prompt_that_fails_mid_way_lets_the_prompt_through(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    holder = hold_project_lock(env, ws, seconds=4)
    try:
        _out, answer, elapsed = hook("UserPromptSubmit", prompt_payload(ws, "intent: show", turn="t-lock"), env)
    finally:
        holder.communicate(timeout=20)
    assert set(answer) == {"continue", "systemMessage", "hookSpecificOutput"}
    assert "1 command NOT recorded (LOCK_TIMEOUT)" in answer["systemMessage"]
    assert elapsed < 5


def test_commands_cut_off_by_the_hook_deadline_are_named_not_dropped(monkeypatch, env, ws):
    """The hook's own 2 s alarm (HookDeadline, which no handler catches) still answers with the
    commands that were NOT recorded, in the receipt line and the model's context."""
    import os
    import time as time_mod

    from intent_loop.hook import handlers, runtime
    from intent_loop.ops import apply_commands

    def slow(*args, **kwargs):
        time_mod.sleep(5)

    monkeypatch.setattr(apply_commands, "run_commands", slow)
    payload = prompt_payload(ws, "go\nintent: goal ship it\nintent: must keep tests", turn="t-slow")
    read_fd, write_fd = os.pipe()
    out_r, out_w = os.pipe()
    os.write(write_fd, json.dumps(payload).encode())
    os.close(write_fd)
    started = time_mod.monotonic()
    runtime.run_hook("UserPromptSubmit", handlers.user_prompt_submit, stdin_fd=read_fd, stdout_fd=out_w,
                     env=env, deadline_seconds=0.5)
    os.close(out_w)
    answer = json.loads(os.read(out_r, 1 << 16))
    assert time_mod.monotonic() - started < 2
    assert answer["systemMessage"].startswith("intent-loop: 2 commands NOT recorded (DEADLINE_EXCEEDED)")
    assert answer["hookSpecificOutput"]["additionalContext"] == answer["systemMessage"]


def _rollout(tmp_path, turn, *, user_message_in_turn):
    """A Codex 0.169.0 session log as the real TUI writes it (see the steering e2e test): the
    session's preamble user message, then the turn's start, then its user message once accepted."""
    import json

    def line(kind, payload):
        return json.dumps({"timestamp": "2026-12-01T12:07:59.306Z", "type": kind, "payload": payload})

    rows = [line("session_meta", {"id": "s"}),
            line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                                  "text": "<environment_context>"}]}),
            line("event_msg", {"type": "task_started", "turn_id": turn}),
            line("turn_context", {"turn_id": turn, "cwd": "/w"})]
    if user_message_in_turn:
        rows.append(line("response_item", {"type": "message", "role": "user",
                                           "content": [{"type": "input_text", "text": "the turn's first prompt"}]}))
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_a_local_command_typed_while_its_turn_runs_goes_on_with_the_receipt_only(env, ws, tmp_path):
    """Steering: a block would end the running turn in Codex 0.169.0, so no block here."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    log = _rollout(tmp_path, "t-2", user_message_in_turn=True)
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: show", turn="t-2", transcript_path=log),
                            env)
    assert "decision" not in answer and "reason" not in answer
    assert "typed while a turn ran" in answer["systemMessage"]


@pytest.mark.parametrize("log", ["first_prompt", "missing", "garbage", "fifo", "directory"])
def test_a_turns_first_prompt_is_still_answered_locally(env, ws, tmp_path, log):
    """The turn's own start with no user message yet, an absent log or one we cannot read."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it"), env)
    if log == "first_prompt":
        path = _rollout(tmp_path, "t-2", user_message_in_turn=False)
    else:
        path = str(tmp_path / f"{log}.jsonl")
        if log == "garbage":
            (tmp_path / "garbage.jsonl").write_bytes(b'\xff{"not json t-2 "user" "message"\n' * 3)
        elif log == "fifo":  # nobody ever writes it: opening it must not wait for a writer
            os.mkfifo(path)
        elif log == "directory":
            os.mkdir(path)
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: show", turn="t-2", transcript_path=path),
                            env)
    assert answer["decision"] == "block"


@pytest.mark.parametrize("verb", ["approve", "confirm", "dismiss", "drop"])
def test_a_locally_answered_change_reaches_the_models_next_change_note(env, ws, verb):
    """The receipts-as-data drift (issue 22): approve, confirm and dismiss answered locally never
    reached the model's change note, while drop did."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it\nintent: ask action:publish", turn="t1"), env)
    ids = _claim_ids(env, ws)
    if verb in ("confirm", "dismiss"):
        from helpers.mcp_client import McpServer

        with McpServer(env) as server:
            server.initialize()
            proposed = server.call("intent_add_explicit", {"statement": "keep the API", "verb": "must"},
                                   workspace=ws, thread="sess-1")
        target = proposed["result"]["proposal_ids"][0][:8]
    else:
        target = ids[1] if verb == "approve" else ids[0]
    local = hook("UserPromptSubmit", prompt_payload(ws, f"intent: {verb} {target}", turn="t2"), env)[1]
    assert local.get("decision") == "block", local
    answer = hook("UserPromptSubmit", prompt_payload(ws, "please go on", turn="t3"), env)[1]
    note = _context(answer).split("\n", 1)[0]
    assert note.startswith("intent-loop: the user changed the recorded intent in prompts answered without you")
    outcomes = {"approve": "approved", "confirm": "confirmed", "dismiss": "dismissed", "drop": "dropped"}
    assert said(note, outcomes[verb], ids=[target], table=CHANGES) == 1


@pytest.mark.parametrize("line, told", [
    ("- intent: goal ship it", "inside a list"), ("* intent: must keep the API", "inside a list"),
    ("+ intent: forbid action:network", "inside a list"), ("1. intent: goal ship it", "inside a list"),
    ("12) intent: goal ship it", "inside a list"), ("   - intent: goal ship it", "inside a list"),
    ("`intent: goal ship it`", "wrapped in backticks"), ("> intent: goal ship it", None),
])
def test_a_near_command_line_is_never_run_and_always_told(env, ws, line, told):
    """Issue 25: pasted text must not become commands, and an intended line is never ignored unsaid."""
    prompt = f"Here is the plan:\n{line}\nThanks"
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, prompt, turn="t-near"), env)
    assert "decision" not in answer  # the prompt goes on to the model
    assert not os.path.exists(os.path.join(env["INTENT_LOOP_DATA_DIR"], "projects"))  # nothing recorded
    if told is None:  # a quoted line is prose, silently
        assert answer == {"continue": True}
    else:
        message = answer["systemMessage"]
        assert said(message, "rejected", code="NEAR_COMMAND", line=2) and told in message, message
        assert "type it" in message

"""Claude Code 2.1.332's own payloads (tests/fixtures/claude-code-2.1.332/, captured with a probe plugin)
through the built hooks, with the variables Claude Code sets (tests/fixtures/replay/claude_code.jsonl:
`claude -p` new, background task and fork sessions, then the TUI's start-up, `/clear` and `/compact`;
one prompt, step 7, is the background session's prompt with typed text in place of the captured one).
CI sees a difference between the hosts here without starting either."""
import json
import os
import subprocess

import pytest

from helpers.dist import requires_dist
from helpers.receipt_words import read
from helpers.replay_golden import normalize
from intent_loop.guard.acceptance import validate_provider_document
from intent_loop.intent.prompt_scan import injected_by
from intent_loop.ops.enforcement_words import ENFORCEMENT_HEADERS, ENFORCEMENT_SHORT

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "dist", "intent-loop")
SEQUENCE = os.path.join(ROOT, "tests", "fixtures", "replay", "claude_code.jsonl")
NOTIFICATION = os.path.join(ROOT, "tests", "fixtures", "claude-code-2.1.332", "print",
                            "p6_background.user_prompt_submit.2.json")
GOAL = "Fix the login redirect loop"


@pytest.fixture(scope="module")
def replayed():
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    done = subprocess.run([CLI, "replay", "--json", SEQUENCE], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    doc = json.loads(done.stdout)
    return doc, [step["answer"] for step in doc["steps"]]


def _context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


@requires_dist
def test_a_background_tasks_notification_records_none_of_its_lines_and_says_so(replayed):
    doc, answers = replayed
    notification = answers[5]
    projection = doc["provider"]["projection"]
    assert "INJECTED" not in json.dumps(projection)  # the model's `intent: must-not` never reaches Guard
    assert "<task-notification>" in notification["systemMessage"]  # the user is told which mark
    assert _context(notification).startswith("intent-loop: ") and "<task-notification>" in _context(notification)
    # what the user typed next in that session is recorded: only the marked prompt lost its commands
    assert projection["authorization"]["forbidden"] == ["action:network"]
    assert projection["objective"] == GOAL
    assert validate_provider_document(doc["provider"]) == []


@requires_dist
@pytest.mark.parametrize("step,source", [(8, "fork"), (12, "clear"), (14, "compact")])
def test_every_new_context_claude_code_opens_gets_the_current_tasks_view(replayed, step, source):
    doc, answers = replayed
    assert doc["steps"][step]["event"] == "SessionStart"
    assert GOAL in _context(answers[step]), source


@requires_dist
def test_the_answers_match_the_golden_and_are_objects_claude_code_honours(replayed):
    doc, answers = replayed
    with open(SEQUENCE[: -len(".jsonl")] + ".golden.json") as fh:
        golden = json.load(fh)
    assert [{"event": s["event"], "exit_code": s["exit_code"], "answer": normalize(s["answer"])}
            for s in doc["steps"]] == golden
    for step, answer in zip(doc["steps"], answers, strict=True):
        assert step["ok"] and answer["continue"] is True
        assert set(answer) <= {"continue", "hookSpecificOutput", "systemMessage", "decision", "reason"}


def test_the_captured_notification_is_marked_and_a_typed_prompt_is_not():
    with open(NOTIFICATION) as fh:
        payload = json.load(fh)
    assert injected_by(payload, payload["prompt"]) == "<task-notification>"
    typed = "Please look at <task-notification> handling in src/.\nintent: goal Fix it"
    assert injected_by({}, typed) is None  # a tag inside a line is the user's text
    assert injected_by({}, "Summary:\n  <task-notification>\nintent: goal x") == "<task-notification>"
    assert injected_by({"source": "user"}, "intent: goal x") is None
    assert injected_by({"source": "scheduled"}, "intent: goal x") == "source: scheduled"


@requires_dist
def test_a_claude_code_session_is_told_that_nothing_on_this_host_enforces_the_rules(replayed):
    """Guard 0.2.2 runs only under Codex: the receipt's Guard line and the model's header say so,
    whatever Guard's state in Codex; the Guard file is published all the same, for Codex sessions."""
    doc, answers = replayed
    assert ENFORCEMENT_SHORT["other_host"] in answers[1]["systemMessage"]
    assert ENFORCEMENT_HEADERS["other_host"] in _context(answers[1])
    assert all(ENFORCEMENT_SHORT[state] not in json.dumps(answers) for state in ("enforced", "reminders"))
    assert doc["provider"] is not None


@requires_dist
def test_log_says_in_which_host_each_session_joined_and_stores_no_raw_session_id(tmp_path):
    from intent_loop.cli.history import HOST_WORDS

    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    done = subprocess.run([CLI, "replay", "--json", "--keep", str(tmp_path), SEQUENCE], capture_output=True,
                          text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    [kept] = [p for p in tmp_path.iterdir() if p.name.startswith("replay-")]
    log = subprocess.run([CLI, "log", "--json", "--project", str(kept / "workspace")], capture_output=True, text=True,
                         env=dict(env, INTENT_LOOP_DATA_DIR=str(kept / "data")), timeout=60)
    assert log.returncode == 0, log.stderr
    joined = [entry for entry in json.loads(log.stdout)["entries"] if HOST_WORDS["claude-code"] in entry["what"]]
    assert len(joined) == 2  # the first session started the task, the background one joined it
    ledger = next((kept / "data" / "projects").glob("*/ledger.jsonl")).read_text()
    with open(SEQUENCE) as fh:
        session_ids = {json.loads(line)["payload"]["session_id"] for line in fh}
    assert '"host":"claude-code"' in ledger and not any(sid in ledger for sid in session_ids)


@requires_dist
def test_a_claude_code_session_is_told_once_what_does_not_protect_its_intent(replayed):
    """No OS sandbox by default, and a messaging socket the agent's shell can write prompts into
    (docs/security.md): said at each new session's start, not again after a compaction."""
    from intent_loop.ops.enforcement_words import EXPOSURES

    doc, answers = replayed
    starts = {index: answers[index].get("systemMessage", "") for index, step in enumerate(doc["steps"])
              if step["event"] == "SessionStart" and index > 0}
    assert all(EXPOSURES["claude_code"] in text for index, text in starts.items() if index != 14), starts
    assert EXPOSURES["claude_code"] not in starts[14]  # the compaction of a session already told


@pytest.mark.parametrize("prompt, mark", [
    ("<cross-session-message from=\"peer\">deploy\nintent: drop all</cross-session-message>", "<cross-session-message"),
    ("<teammate-message teammate_id=\"t1\">x\nintent: allow action:network", "<teammate-message"),
    ("<channel source=\"slack\">hi\nintent: off</channel>", "<channel"),
    ("# /loop tick — check the build\nintent: goal x", "# /loop tick"),
    ("The following one-shot scheduled task was missed: x\nintent: goal y",
     "The following one-shot scheduled task was missed"),
    ("<channels> are a topic\nintent: goal x", None),
    ("plain words\nintent: goal x", None),
])
def test_every_mark_claude_code_puts_on_a_prompt_it_wrote_is_recognised(prompt, mark):
    assert injected_by({"prompt_id": "p"}, prompt) == mark


@requires_dist
def test_typed_in_one_host_is_in_the_other_hosts_next_session(tmp_path):
    """tests/fixtures/replay/cross_host.jsonl: the real payloads of both hosts in one workspace and one
    store. A goal and a forbid typed in Codex reach Claude Code's next session; a must typed in
    Claude Code reaches Codex's resumed session and Claude Code's; one contract holds all three."""
    cross = os.path.join(ROOT, "tests", "fixtures", "replay", "cross_host.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    done = subprocess.run([CLI, "replay", "--json", cross], capture_output=True, text=True, env=env, timeout=180)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    answers = [step["answer"] for step in doc["steps"]]
    assert [step["event"] for step in doc["steps"]][3] == "SessionStart"
    assert GOAL in _context(answers[3]) and "action:network" in _context(answers[3])  # Codex -> Claude Code
    assert "keep the public API unchanged" in _context(answers[6])  # Claude Code -> Codex (resume)
    assert "keep the public API unchanged" in _context(answers[8])  # and Claude Code's own resume
    projection = doc["provider"]["projection"]
    assert projection["objective"] == GOAL and projection["authorization"]["forbidden"] == ["action:network"]
    assert projection["must_and_must_not"]["must"] == ["keep the public API unchanged"]
    with open(cross[: -len(".jsonl")] + ".golden.json") as fh:
        assert [{"event": s["event"], "exit_code": s["exit_code"], "answer": normalize(s["answer"])}
                for s in doc["steps"]] == json.load(fh)


@requires_dist
def test_the_moved_task_notice_crosses_hosts():
    """tests/fixtures/replay/cross_host_moved.jsonl: a Claude Code session's task; then `intent: new`
    typed in Codex makes another task current; the Claude Code session's next prompt is told, the
    user and the model, which task the contract holds now and how to switch back."""
    moved = os.path.join(ROOT, "tests", "fixtures", "replay", "cross_host_moved.jsonl")
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    done = subprocess.run([CLI, "replay", "--json", moved], capture_output=True, text=True, env=env, timeout=180)
    doc = json.loads(done.stdout)
    answers = [step["answer"] for step in doc["steps"]]
    started = [entry for entry in read(answers[3]["systemMessage"]) if entry.outcome == "started"]
    [first] = [entry.ids[0] for entry in read(answers[1]["systemMessage"]) if entry.outcome == "recorded"]
    new_task = started[0].ids[0]
    for text in (answers[4]["systemMessage"], _context(answers[4])):
        assert new_task in text and "Ship the billing export" in text, text
    assert doc["provider"]["projection"]["objective"] == "Ship the billing export"
    assert first not in json.dumps(doc["provider"])  # the first task's claim left the contract

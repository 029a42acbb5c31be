"""Replay the fixture corpus through dist/intent-loop replay and compare with the golden answers."""
import json
import os
import subprocess

import pytest

from helpers.dist import requires_dist
from helpers.receipt_words import head, published, said
from helpers.replay_golden import normalize
from intent_loop.guard.acceptance import validate_provider_document
from intent_loop.launch.binaries import BINARIES, HOOKS
from intent_loop.ops.enforcement_words import ENFORCEMENT_SHORT, enforcement_explained
from intent_loop.ops.receipts import CHANGES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "dist")
CLI = os.path.join(DIST, "intent-loop")
REPLAY_DIR = os.path.join(ROOT, "tests", "fixtures", "replay")
SEQUENCES = sorted(n[:-6] for n in os.listdir(REPLAY_DIR) if n.endswith(".jsonl"))
ALL_BINARIES = tuple(binary.name for binary in BINARIES)

pytestmark = requires_dist

def replay(name, env=None):
    proc = subprocess.run([CLI, "replay", "--json", os.path.join(REPLAY_DIR, name + ".jsonl")],
                          capture_output=True, text=True, env=env, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def results():
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    return {name: replay(name, env) for name in SEQUENCES}


def test_corpus_has_the_required_sequences():
    assert {"real_session", "commands_session", "subagent", "subagent_with_task", "hostile",
            "receipts_and_local_answers"} <= set(SEQUENCES)
    for name in SEQUENCES:
        assert os.path.exists(os.path.join(REPLAY_DIR, name + ".golden.json")), name


@pytest.mark.parametrize("name", SEQUENCES)
def test_answers_match_golden(results, name):
    code, doc = results[name]
    assert code == 0, doc
    with open(os.path.join(REPLAY_DIR, name + ".golden.json")) as fh:
        golden = json.load(fh)
    got = [{"event": s["event"], "exit_code": s["exit_code"], "answer": normalize(s["answer"])} for s in doc["steps"]]
    assert got == golden
    assert doc["ledger"]["ok"] is True
    if doc["provider"] is not None:
        assert validate_provider_document(doc["provider"]) == []


@pytest.mark.parametrize("name", SEQUENCES)
def test_every_answer_is_one_object_codex_accepts(results, name):
    _code, doc = results[name]
    for step in doc["steps"]:
        answer = step["answer"]
        assert step["ok"] and step["exit_code"] == 0
        assert set(answer) <= {"continue", "hookSpecificOutput", "systemMessage", "decision", "reason"}
        assert answer["continue"] is True
        if "decision" in answer:  # a local answer (issue 15): the block and its reason only
            assert step["event"] == "UserPromptSubmit" and answer["decision"] == "block"
            assert set(answer) == {"continue", "decision", "reason"}
        if step["event"] == "Stop":
            assert answer == {"continue": True}
        if "hookSpecificOutput" in answer:
            assert answer["hookSpecificOutput"]["hookEventName"] == step["event"]
            assert set(answer["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}


def test_real_session_without_commands_answers_continue_only(results):
    _code, doc = results["real_session"]
    assert [s["answer"] for s in doc["steps"]] == [{"continue": True}] * len(doc["steps"])
    assert doc["ledger"]["events"] == 0 and doc["provider"] is None


def test_commands_session_publishes_a_valid_contract(results):
    _code, doc = results["commands_session"]
    provider = doc["provider"]
    assert provider is not None and validate_provider_document(provider) == []
    projection = provider["projection"]
    assert projection["objective"] == "fix rounding of totals in checkout"
    assert projection["must_and_must_not"]["must_not"] == ["action:install_local"]
    assert projection["completion_evidence"] == [{"requirement": "totals match the ledger to the cent",
                                                  "acceptable_sources": ["test"]}]
    assert "Tools: web" not in json.dumps(projection)  # the rejected rule never reaches Guard
    message = doc["steps"][3]["answer"]["systemMessage"]
    assert message.startswith(f"intent-loop: {published(2)}, {ENFORCEMENT_SHORT['not_installed']}")
    assert said(message, "rejected", code="RULE_SYNTAX", line=1) == 1


def test_receipts_and_local_answers(results):
    _code, doc = results["receipts_and_local_answers"]
    answers = [s["answer"] for s in doc["steps"]]
    receipt = answers[1]["systemMessage"]
    assert receipt.startswith(f"intent-loop: {published(1)}, {ENFORCEMENT_SHORT['not_installed']}; "
                              + head("recorded", "goal"))
    assert said(receipt, "recorded", "goal") == 1 and said(receipt, "rejected", code="UNKNOWN_VERB") == 1
    # the receipt line in at most two lines; what Guard enforces follows once a session, on its own line
    line, told = receipt.split("\nintent-loop: ")
    assert len(line.splitlines()) <= 2 and told == enforcement_explained({"state": "not_installed"})
    assert "hookSpecificOutput" in answers[1] and "decision" not in answers[1]  # prose: the model gets it
    shown = answers[3]
    assert shown["decision"] == "block" and "goal: fix rounding of totals in checkout" in shown["reason"]
    assert said(answers[4]["reason"], "rejected", code="UNKNOWN_VERB") and "drop <id>" in answers[4]["reason"]
    assert "withdrawn" in answers[5]["reason"]
    note = answers[6]["hookSpecificOutput"]["additionalContext"]
    assert "answered without you" in note and said(note, "off", table=CHANGES) == 1
    assert "goal: fix rounding" in answers[9]["hookSpecificOutput"]["additionalContext"]
    assert "decision" not in answers[11]  # the work failed mid-way: the prompt goes on, and says so
    assert "NOT recorded (LOCK_TIMEOUT)" in answers[11]["systemMessage"]
    assert answers[11]["hookSpecificOutput"]["additionalContext"] == answers[11]["systemMessage"]
    assert set(answers[13]) == {"continue", "hookSpecificOutput"}  # a subagent's `intent: show` is never
    assert "you run as a subagent" in answers[13]["hookSpecificOutput"]["additionalContext"]  # answered locally


def test_subagent_prompt_records_nothing(results):
    _code, doc = results["subagent"]
    assert doc["ledger"]["events"] == 0 and doc["provider"] is None
    _code, doc = results["subagent_with_task"]
    projection = doc["provider"]["projection"]
    assert projection["objective"] == "fix the login form"
    assert projection["authorization"]["forbidden"] == []
    answer = doc["steps"][2]["answer"]  # the subagent reads its parent's view; its lines recorded nothing
    assert set(answer) == {"continue", "hookSpecificOutput"}
    assert "fix the login form" in answer["hookSpecificOutput"]["additionalContext"]


def test_hostile_inputs_fail_open_and_record_nothing(results):
    _code, doc = results["hostile"]
    assert doc["ledger"] == dict(doc["ledger"], ok=True, events=0)
    assert doc["provider"] is None


def test_replay_flags_a_binary_that_answers_garbage(tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    for name in (hook.name for hook in HOOKS):
        script = dist / name
        script.write_text("#!/bin/sh\ncat >/dev/null\necho not json\n")
        script.chmod(0o755)
    seq = tmp_path / "s.jsonl"
    seq.write_text(json.dumps({"event": "Stop", "payload": {"cwd": "/x", "session_id": "s"}}) + "\n")
    proc = subprocess.run([CLI, "replay", "--json", "--dist", str(dist), str(seq)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["steps"][0]["ok"] is False


def test_replay_rejects_a_malformed_sequence(tmp_path):
    seq = tmp_path / "bad.jsonl"
    seq.write_text('{"event": "Nope", "payload": {}}\n')
    proc = subprocess.run([CLI, "replay", str(seq)], capture_output=True, text=True)
    assert proc.returncode == 2 and "INVALID_ARGUMENT" in proc.stderr


def test_replay_keep_leaves_the_workspace(tmp_path):
    code = subprocess.run([CLI, "replay", "--json", "--keep", str(tmp_path),
                           os.path.join(REPLAY_DIR, "commands_session.jsonl")],
                          capture_output=True, text=True).returncode
    assert code == 0
    kept = [p for p in tmp_path.iterdir() if p.name.startswith("replay-")]
    assert len(kept) == 1
    assert (kept[0] / "workspace" / ".execution-fidelity" / "contract.json").is_file()


def test_demo_runs_end_to_end():
    proc = subprocess.run([CLI, "demo", "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["ledger"]["ok"] is True
    assert validate_provider_document(doc["provider"]) == []
    versions = [v["version"] for v in doc["versions"]]
    assert versions == list(range(1, len(versions) + 1)) and len(versions) >= 2
    assert doc["provider"]["envelope"]["contract_version"] == versions[-1]
    lines = [c["line"] for c in doc["claims"]]
    assert any("scope include: src/checkout/ and tests/checkout/" in line for line in lines)
    assert not any(line.endswith("scope include: src/checkout/") for line in lines)
    assert any("RULE_SYNTAX" in (s["answer"].get("systemMessage") or "") for s in doc["steps"])
    text = subprocess.run([CLI, "demo"], capture_output=True, text=True, timeout=120)
    assert text.returncode == 0 and "contract version history" in text.stdout


def test_continuity_payloads_of_the_real_codex_follow_the_current_task(results):
    """Codex 0.169.0's own payloads (tests/fixtures/codex-0.169.0/continuity/): after `/clear`, `/fork`,
    `/new` and `/compact` every new session id gets the task back, and a claim typed after `/clear`
    joins it: the same contract, one version up."""
    code, doc = results["continuity"]
    assert code == 0
    answers = [s["answer"] for s in doc["steps"]]
    for index in (2, 5, 6, 7):  # SessionStart: clear, fork, new (source startup), compact
        context = answers[index]["hookSpecificOutput"]["additionalContext"]
        assert context.startswith("intent-loop: this session follows the workspace's current task ")
        assert "Fix the login redirect loop" in context and "forbid: action:network" in context
    assert said(answers[3]["systemMessage"], "joined") == said(answers[3]["systemMessage"], "recorded", "must") == 1
    assert answers[3]["systemMessage"].startswith(f"intent-loop: {published(2)}, {ENFORCEMENT_SHORT['not_installed']}")
    assert answers[4] == {"continue": True}  # nothing new since: no context, no receipt
    assert "you run as a subagent" in answers[8]["hookSpecificOutput"]["additionalContext"]
    projection = doc["provider"]["projection"]
    assert doc["provider"]["envelope"]["contract_version"] == 2
    assert projection["must_and_must_not"]["must"] == ["keep the public API unchanged"]
    assert projection["authorization"]["forbidden"] == ["action:network"]

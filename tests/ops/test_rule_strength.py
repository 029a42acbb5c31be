"""Each rule's real strength, in its receipt (issue 34 item 3), and a refused rule line that the
model must report first (item 5): outcomes through the receipt table, words from ops/."""
import time

import pytest

from helpers.cli_runner import make_cli
from intent_loop.intent import prompt_commands
from intent_loop.ops import apply_commands
from intent_loop.ops.enforcement_words import rule_strength
from intent_loop.ops.receipts import model_receipt, refused_rule_note


def _run(cli, prompt, n=1):
    return apply_commands.run_commands(
        cli.project(), commands=prompt_commands.parse_prompt(prompt), session_hash="a" * 64,
        source_ref={"kind": "user_event", "event_id": f"turn-{n}"}, request_id=f"strength-{n}",
        deadline=time.monotonic() + 20, workspace=cli.workspace, env={}, observation={"char_count": 9})


@pytest.mark.parametrize(("line", "verb", "kind"), [
    ("intent: forbid action:network", "forbid", "(Guard can block it)"),
    ("intent: must-not tool:web_fetch", "must-not", "(Guard can block it)"),
    ("intent: ask action:write", "ask", "(Guard can pause it)"),
    ("intent: forbid never push to main", "forbid", "(prose: a reminder only)"),
    ("intent: forbid command-prefix:rm -rf", "forbid", "`action:delete` covers `sudo rm -rf`"),
    ("intent: forbid command-prefix:git push --force", "forbid", "`action:publish` covers"),
    ("intent: forbid command-prefix:make deploy", "forbid", "an `action:` rule covers its variants"),
])
def test_a_rule_receipt_says_what_guard_does_with_it(tmp_path, line, verb, kind):
    receipt = _run(make_cli(tmp_path), "intent: goal ship\n" + line)
    entry = next(e for e in receipt.entries if e.verb == verb)
    assert entry.outcome == "recorded" and kind in entry.text()
    assert entry.extra["strength"] == rule_strength(verb, line.split(f"{verb} ", 1)[1])


def test_a_requirement_or_goal_receipt_says_nothing_of_strength(tmp_path):
    receipt = _run(make_cli(tmp_path), "intent: goal ship\nintent: must keep the API")
    assert all(e.extra.get("strength", "") == "" for e in receipt.entries)


def test_a_refused_rule_line_beside_prose_tells_the_model_to_say_so_first(tmp_path):
    receipt = _run(make_cli(tmp_path), "please start\nintent: goal ship\nintent: forbid action:netwrk")
    refused = [e for e in receipt.entries if e.outcome == "rejected"]
    assert [(e.line, e.verb, e.code) for e in refused] == [(3, "forbid", "RULE_SYNTAX")]
    note = refused_rule_note(receipt.entries)
    assert note.startswith("intent-loop: the user's rule was NOT recorded (line 3 (`forbid`): RULE_SYNTAX")
    assert "Start your reply" in note and "line 3" in model_receipt(receipt.entries)
    # a refused goal or a prose-only prompt is not a rule: no such instruction
    assert refused_rule_note([e for e in receipt.entries if e.outcome != "rejected"]) is None


def test_in_a_claude_code_session_a_structured_rule_is_blocked_only_in_codex_sessions(tmp_path):
    """Guard does not run under Claude Code (docs/hosts.md): a receipt there never says Guard blocks
    the rule, only that it does in Codex sessions; prose stays a reminder on both hosts."""
    cli = make_cli(tmp_path)
    receipt = apply_commands.run_commands(
        cli.project(), commands=prompt_commands.parse_prompt(
            "intent: goal ship\nintent: forbid action:network\nintent: forbid never push"),
        session_hash="b" * 64, source_ref={"kind": "user_event", "event_id": "turn-c"}, request_id="strength-c",
        deadline=time.monotonic() + 20, workspace=cli.workspace, env={}, host="claude-code")
    structured, prose = [e for e in receipt.entries if e.verb == "forbid"]
    assert structured.extra["strength"] == rule_strength("forbid", "action:network", host="claude-code")
    assert rule_strength("forbid", "action:network") not in structured.text()
    assert prose.extra["strength"] == rule_strength("forbid", "never push")

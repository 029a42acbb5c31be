"""Receipts are data (ops/receipts.py): every verb and every outcome through every rendering (the
user's receipt line, the model's receipt, a local answer, the change note, the CLI's words), so a
new outcome cannot silently drop out of the change note again (approve, confirm and dismiss did)."""
import time

import pytest

from intent_loop.hook import prompt_answer
from intent_loop.intent import prompt_commands
from intent_loop.intent.claim_verbs import CLAIM_VERBS, MANAGE_VERBS
from intent_loop.intent.state import REDUCER
from intent_loop.ops import apply_commands, receipts
from intent_loop.ops.receipts import CHANGES, OUTCOMES, Entry
from intent_loop.storage import reading
from intent_loop.storage.ledger import Draft
from intent_loop.storage.paths import session_hash
from intent_loop.storage.transaction import mutate

SESSION = session_hash("receipt-entries")
_turns = iter(range(10**6))
# The outcomes that change nothing recorded: the model's change note leaves them out on purpose.
NOT_CHANGES = {"goals", "replayed", "rejected"}
IDS = ("1a2b3c4d", "5e6f7a8b")


def run(project, workspace, prompt, *, session=SESSION):
    turn = next(_turns)
    return apply_commands.run_commands(
        project, commands=prompt_commands.parse_prompt(prompt), session_hash=session,
        source_ref={"kind": "user_event", "event_id": f"turn-{turn}"}, request_id=f"entries-{turn}",
        deadline=time.monotonic() + 20, workspace=workspace, env={})


def state_of(project):
    return reading.verify_all(project, REDUCER).state


def test_every_outcome_is_either_a_change_or_deliberately_not_one():
    assert set(OUTCOMES) == set(CHANGES) | NOT_CHANGES and not set(CHANGES) & NOT_CHANGES


@pytest.mark.parametrize("outcome", sorted(OUTCOMES))
def test_every_outcome_renders_in_every_place(outcome):
    verb = "confirm" if outcome == "confirmed" else "goal"
    entry = Entry(3, verb, outcome, IDS, code="RULE_SYNTAX" if outcome == "rejected" else None,
                  reason="write it again" if outcome == "rejected" else None, label=' "parser"',
                  ages="started 2 days ago", count=2, now="", rule="action:publish", task="9f8e7d6c", what="proposal")
    words = entry.text()
    assert "{" not in words and "}" not in words and words.strip() == words and words
    [item] = receipts.user_items([entry])
    assert words in item and (item.startswith("line 3 ") if outcome == "rejected" else item == words)
    assert receipts.model_receipt([entry]) == f"intent-loop receipt:\n- line 3: {words}"
    line = prompt_answer.receipt_line(receipts.user_items([entry]))
    assert line.startswith(prompt_answer.PREFIX)
    if outcome in CHANGES:
        [text] = prompt_answer.change_texts([entry.change()])
        note = prompt_answer.change_note([text])
        named = CHANGES[outcome].count("{") - ("{verb}" in CHANGES[outcome])
        assert text in note and all(short in note for short in IDS[:named])
    else:
        assert not entry.is_change


def test_an_unknown_outcome_is_a_bug_not_a_silent_line():
    with pytest.raises(ValueError):
        Entry(1, "goal", "recorded-ish")


def test_every_verb_the_runner_answers_gives_entries_that_reach_the_change_note(project, workspace):
    """Each verb, run for real: every entry it produces is worded, and each change among them
    survives the trip through the seen record into the model's change note."""
    first = run(project, workspace, "intent: goal ship it\nintent: ask action:publish\nintent: must two")
    state = state_of(project)
    task_id = state["sessions"][SESSION]
    claims = {r["claim"]["statement"]: cid for cid, r in state["tasks"][task_id]["claims"].items()}
    # an agent's proposal, as the MCP server records it, for confirm and dismiss
    proposals = []
    for n in range(2):
        cid = f"0000000{n}-0000-4000-8000-000000000000"
        proposals.append(cid)

        def plan(state, cid=cid, n=n):
            return [Draft("proposal_added", task_id, "agent", {
                "candidate_id": cid, "statement": f"keep rule {n}", "facets": ["hard_constraint"], "scope": "task",
                "verb": "must", "source_ref": {"kind": "agent_turn", "event_id": f"mcp-{n}"}})]
        mutate(project, REDUCER, request_id=f"mcp:{n}", operation="t", params={}, plan=plan,
               deadline=time.monotonic() + 10)
    prompts = {
        "approve": f"intent: approve {claims['ask: action:publish'][:8]}",
        "confirm": f"intent: confirm {proposals[0][:8]}",
        "dismiss": f"intent: dismiss {proposals[1][:8]}",
        "replace": f"intent: replace {claims['must: two'][:8]} three",
        "drop": f"intent: drop {claims['ship it'][:8]}",
        "show": "intent: show", "help": "intent: help", "off": "intent: off", "on": "intent: on",
        "resume": "intent: resume", "private": "intent: private", "new": "intent: new fresh start",
    }
    assert set(prompts) == set(MANAGE_VERBS)
    seen = {e.outcome for e in first.entries}
    order = ("approve", "confirm", "dismiss", "replace", "drop", "show", "help", "off", "on", "new", "resume",
             "private")
    assert sorted(order) == sorted(MANAGE_VERBS)
    for verb in order:
        receipt = run(project, workspace, prompts[verb])
        assert not receipt.rejected, (verb, receipt.rejected)
        seen |= {e.outcome for e in receipt.entries}
        for entry in receipt.entries:
            assert entry.text()
        changes = prompt_answer.change_items(receipt)
        assert len(prompt_answer.change_texts(changes)) == len(changes) == len(receipt.changes)
        if verb not in ("show", "help"):
            assert receipt.changes, verb  # approve, confirm and dismiss were missing from the change note
    acknowledged = run(project, workspace, "intent: goal private words")  # the session is private now
    seen |= {e.outcome for e in acknowledged.entries}
    rejected = run(project, workspace, "intent: goals typo")
    seen |= {e.outcome for e in rejected.entries}
    assert {"recorded", "approved", "confirmed", "dismissed", "replaced", "dropped", "off", "on", "continues",
            "private", "started", "acknowledged", "rejected"} <= seen
    assert all(verb in CLAIM_VERBS + MANAGE_VERBS for verb in prompts)

"""The rendered words of every receipt ops/receipts.py makes, as one text: every outcome (the user's
item, the model's line, the change note), every Guard line, restoration and Guard news, and one
whole receipt line. tests/ops/test_receipt_golden.py compares it with tests/fixtures/receipts.golden.txt;
tests/tools/regenerate_goldens.py rewrites that file (review the diff)."""
from intent_loop.hook import prompt_answer
from intent_loop.ops import receipts
from intent_loop.ops.enforcement_words import STRENGTH_VERBS, rule_strength
from intent_loop.ops.receipts import CHANGES, OUTCOMES, Entry, Receipt

IDS = ("1a2b3c4d", "5e6f7a8b", "9c0d1e2f", "3a4b5c6d")
TASK = "562972b9"
HEADER = ("# Every receipt ops/receipts.py words, rendered with fixed ids: the one test of the words\n"
          "# (tests/ops/test_receipt_golden.py). After a reword: .venv/bin/python tests/tools/regenerate_goldens.py "
          "receipts\n")


def _recorded(verb, statement, *, line=2, ids=IDS[:1]):
    strength = rule_strength(verb, statement) if verb in STRENGTH_VERBS else ""  # as ops/verb_runner.py
    return Entry(line, verb, "recorded", ids, strength=strength)


# One entry or more per outcome, their extras (labels, ages, rules ...) as ops/verb_runner.py fills them.
SAMPLES = [
    _recorded("goal", "Fix the login redirect loop"), _recorded("must", "keep the public API unchanged"),
    _recorded("forbid", "action:network"), _recorded("ask", "action:publish"),
    _recorded("must-not", "touch the vendored code"), _recorded("forbid", "command-prefix:git push"),
    Entry(2, "must", "acknowledged"),
    Entry(2, "must", "joined", [TASK], label="", ages="started 2 hours ago"),
    Entry(2, "goal", "joined", [TASK], label=' "parser"', ages="started 3 weeks ago, last changed 2 days ago"),
    Entry(2, "goal", "goals", IDS[:1], count=2),
    Entry(1, "new", "started", [TASK]),
    Entry(1, "resume", "continues", [TASK]),
    Entry(1, "resume", "continues", [TASK], now=", now the workspace's current task"),
    Entry(1, "drop", "dropped", IDS[:1]),
    Entry(1, "replace", "replaced", IDS[:2]),
    Entry(1, "approve", "approved", IDS[:2], rule="action:publish"),
    Entry(1, "confirm", "confirmed", IDS[:2], task=TASK),
    Entry(1, "confirm", "confirmed", IDS, task=TASK),
    Entry(1, "dismiss", "dismissed", IDS[:1], what="proposal"),
    Entry(1, "dismiss", "dismissed", IDS[:1], what="candidate"),
    Entry(1, "private", "private"), Entry(1, "off", "off"), Entry(1, "on", "on"),
    Entry(0, None, "replayed"),
    Entry(3, None, "rejected", code="UNKNOWN_VERB",
          reason="`goals` is not an intent: verb; did you mean `goal`? `intent: help` lists the verbs"),
    Entry(4, "forbid", "rejected", code="RULE_SYNTAX", reason="unknown action 'netwrk'; use one of: read, write, ..."),
]
PUBLICATIONS = [
    {"action": "published", "version": 2}, {"action": "unchanged", "version": 2, "task_id": TASK},
    {"action": "rewritten", "version": 2}, {"action": "rewritten", "version": 2, "repaired": "it was emptied"},
    {"action": "restored", "version": 3, "restored": "emptied"}, {"action": "removed", "reason": f"task {TASK} is off"},
    {"action": "absent", "reason": f"task {TASK} has no goal yet (`intent: goal ...`)",
     "code": "PROJECTION_INCOMPLETE"},
    {"action": "absent", "reason": "Guard still enforces v1: the contract would be too large",
     "code": "CONTRACT_TOO_LARGE"},
]


def _entry(entry):
    head = f"[{entry.outcome}] {entry.verb or '-'}"
    extra = " ".join(f"{key}={value!r}" for key, value in sorted(entry.extra.items()) if value)
    rows = [f"{head} {extra}".rstrip(), f"  user:   {receipts.user_items([entry])[0]}",
            f"  model:  {receipts.model_receipt([entry]).splitlines()[1]}"]
    if entry.is_change:
        rows.append(f"  change: {receipts.change_text(entry.change())}")
    return rows


def _guard():
    rows = ["[guard line, intent: show and status]"]
    for publication in PUBLICATIONS:
        rows += [f"  {publication['action']}: {receipts.guard_text(publication) or '(no Guard line: nothing changed)'}",
                 f"  {publication['action']} status: {receipts.guard_status(publication, {'state': 'reminders'})}"]
    rows.append("[restored, the Guard file taken over]")
    for found in receipts.TAKEOVERS:
        rows.append(f"  {found}: {receipts.restored_text(found, 3)}")
    rows.append(f"  moved: {receipts.restored_text('directory', 3, '.execution-fidelity/contract.json.moved')}")
    rows.append(f"  history: {receipts.restored_history({'found': 'other', 'contract_version': 3, 'kept': 'x'}, TASK)}")
    rows.append("[Guard news after the answer]")
    for news in ([{"repaired": shape, "version": 2} for shape in receipts.DAMAGES]
                 + [{"code": "DEADLINE_EXCEEDED", "action": "failed"}]):
        rows.append(f"  {receipts.guard_news_text(news)}")
    return rows


def _whole_line():
    receipt = Receipt()
    receipt.publication = {"action": "published", "version": 2}
    receipt.entries = [Entry(2, "must", "joined", [TASK], label="", ages="started 2 hours ago"),
                       _recorded("must", "keep the public API unchanged"),
                       _recorded("forbid", "action:network", line=5, ids=IDS[1:2]), SAMPLES[-2], SAMPLES[-1]]
    items = prompt_answer.receipt_items(receipt, enforcement={"state": "reminders"})
    changes = [Entry(1, "drop", "dropped", IDS[:1]), Entry(2, "approve", "approved", IDS[1:3], rule="action:publish"),
               Entry(3, "off", "off")]
    return ["[one prompt's whole receipt line, as the user reads it]", *prompt_answer.receipt_line(items).splitlines(),
            "[the model's receipt of the same prompt]", *receipts.model_receipt(receipt.entries).splitlines(),
            "[its refused rule line, for the model of a prompt that goes on to it]",
            receipts.refused_rule_note(receipt.entries),
            "[the note for the model after prompts answered without it]",
            prompt_answer.change_note([receipts.change_text(e.change()) for e in changes])]


def every_receipt():
    """The golden text, with a sample of every outcome (a new outcome without one fails here)."""
    missing = set(OUTCOMES) - {e.outcome for e in SAMPLES}
    assert not missing and set(CHANGES) <= set(OUTCOMES), f"no sample for {sorted(missing)}"
    rows = [row for entry in SAMPLES for row in _entry(entry)] + _guard() + _whole_line()
    return HEADER + "\n".join(rows) + "\n"

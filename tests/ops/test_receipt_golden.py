"""The one test of the receipts' words: every outcome of ops/receipts.py, every Guard line and note,
rendered and compared with tests/fixtures/receipts.golden.txt. Every other test reads receipts as
data (tests/helpers/receipt_words.py); after a reword, regenerate this file and review its diff:
    .venv/bin/python tests/tools/regenerate_goldens.py receipts"""
from pathlib import Path

import pytest

from helpers.receipt_golden import SAMPLES, every_receipt
from helpers.receipt_words import read, said
from intent_loop.ops import receipts
from intent_loop.ops.receipts import OUTCOMES, Entry

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "receipts.golden.txt"


def test_every_receipt_reads_as_the_golden_file():
    assert every_receipt() == GOLDEN.read_text(), \
        "receipt words changed: run `.venv/bin/python tests/tools/regenerate_goldens.py receipts` and review the diff"


def test_every_outcome_reads_back_as_the_data_it_was_made_from():
    """What the other tests rely on: each rendered entry reads back as its outcome, verb, ids and code."""
    assert {entry.outcome for entry in SAMPLES} == set(OUTCOMES)
    for entry in SAMPLES:
        [back] = read(f"- line {entry.line}: {entry.text()}")
        assert (back.outcome, back.ids, back.code, back.line) == (entry.outcome, entry.ids, entry.code, entry.line)
        assert back.verb == (entry.verb if "{verb}" in OUTCOMES[entry.outcome] else None)
    line = "; ".join(receipts.user_items(SAMPLES))  # the user's line: items one after another
    typed_order = sorted(SAMPLES, key=lambda e: e.line)
    assert [(e.outcome, e.ids) for e in read(line)] == [(e.outcome, e.ids) for e in typed_order]


def test_reading_a_receipt_tells_a_wrong_verb_id_code_or_line():
    """The reader the other tests use is not blind: it counts only what the receipt says."""
    message = f"intent-loop: {receipts.guard_text({'action': 'published', 'version': 1})}; " + "; ".join(
        receipts.user_items([Entry(1, "goal", "recorded", ["1a2b3c4d"]),
                             Entry(2, None, "rejected", code="UNKNOWN_VERB", reason="see `intent: help`")]))
    assert said(message, "recorded", "goal", ids=["1a2b3c4d"]) == said(message, "rejected", code="UNKNOWN_VERB",
                                                                          line=2) == 1
    assert not said(message, "recorded", "must") and not said(message, "recorded", "goal", ids=["5e6f7a8b"])
    assert not said(message, "rejected", code="RULE_SYNTAX") and not said(message, "rejected", line=3)
    assert not said(message, "dropped") and not said("recorded goal 1a2b3c4d", "recorded")  # no brackets
    with pytest.raises(ValueError):
        said(message, "dropped", "drop")  # `dropped` does not name its verb: a test must not ask for it

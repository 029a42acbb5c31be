"""The one table of event types (intent/event_types.py): every type the code writes or folds is a
row, and every reader that asks one question of every event derives its answer from the table."""
import ast
import re
from pathlib import Path

import pytest

from intent_loop.cli import history
from intent_loop.intent import cache_source, event_types, state
from intent_loop.intent.event_types import TABLE
from intent_loop.ops import apply_commands, ledger_rewrite

LIB = Path(__file__).resolve().parents[2] / "lib" / "intent_loop"


def _literal_types():
    """Every event type the library names in a Draft(...) or compares an event_type with."""
    found = set()
    for path in LIB.rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        text = path.read_text()
        found.update(re.findall(r'Draft\("([a-z_]+)"', text))
        found.update(re.findall(r'(?:etype|event_type"\]|event_type) == "([a-z_]+)"', text))
        for group in re.findall(r'(?:etype|event_type"\]) in \(([^)]*)\)', text):
            found.update(re.findall(r'"([a-z_]+)"', group))
    return found


def test_every_event_type_the_reducer_folds_is_a_row_and_every_row_is_folded():
    handled = {name[len("_on_"):] for name in vars(state.ProjectReducer) if name.startswith("_on_")}
    assert handled == set(TABLE)


def test_every_event_type_the_library_writes_or_compares_is_a_row():
    assert _literal_types() - set(TABLE) == set()


def test_the_readers_sets_are_the_tables():
    assert state.CLAIM_CHANGING == event_types.CHANGES_INTENT
    assert apply_commands._PROJECTION_EVENTS == event_types.REPUBLISHES
    assert cache_source.CLAIM_SOURCES == {n: (t.claims, t.provenance) for n, t in TABLE.items() if t.claims}
    assert ledger_rewrite.TOUCHED_BY_CLAIM_DELETION == {n for n, t in TABLE.items() if t.on_claim_deletion != "kept"}


def test_an_event_with_claims_says_whose_words_they_are_and_what_deletion_does():
    for name, row in TABLE.items():
        assert (row.claims is None) == (row.provenance is None), name
        assert row.on_claim_deletion in ("dropped", "rewritten", "kept"), name
        if row.claims is not None:
            assert row.on_claim_deletion != "kept", f"{name} holds claims: deleting one must touch it"
            assert row.changes_intent, f"{name} adds claims: a user's one changes what the task asks"


def _describe_branches():
    tree = ast.parse(Path(history.__file__).read_text())
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "describe")
    return {c.comparators[0].value for c in ast.walk(fn) if isinstance(c, ast.Compare)
            and isinstance(c.left, ast.Name) and c.left.id == "etype" and isinstance(c.comparators[0], ast.Constant)}


def test_the_timeline_has_its_own_words_for_every_type_a_person_reads():
    """`intent-loop history` words each event; the observations and floors of the table's rows it
    does not word fall back to the row's own words (history.describe's last line)."""
    worded = _describe_branches()
    assert worded - set(TABLE) == set()
    missing = set(TABLE) - worded - {"source_observed", "result_signal_observed"}
    assert missing == set()


@pytest.mark.parametrize("name", sorted(TABLE))
def test_every_row_has_words(name):
    assert TABLE[name].words and TABLE[name].words[0].islower()

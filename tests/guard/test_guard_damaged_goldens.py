"""The golden damaged Guard files (tests/fixtures/guard_damaged/): what Guard's rules make of each
(invalid: it enforces nothing) and what intent-loop makes of it (ours, repaired; or foreign)."""
import os
import shutil

import pytest

from intent_loop.guard import contract_file
from intent_loop.guard.file_state import read_file_state

GOLDEN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "guard_damaged")
TASK = "5b1c7e0a-2f4d-5a6b-8c9d-0e1f2a3b4c5d"
SHA = "d8712a2f89c6937f35815ac837931b4af6136c214511a6cf28493d22ca7f70b0"
STATE = {"tasks": {TASK: {"task_id": TASK, "publications": {"3": SHA}}}, "contract_floors": {}}
SHAPES = {"emptied.json": "emptied", "bom.json": "a BOM in front", "truncated.json": "truncated",
          "garbage_after.json": "garbage after the document"}


def _golden(name):
    with open(os.path.join(GOLDEN, name), "rb") as fh:
        return fh.read()


def test_the_whole_golden_is_a_valid_document_of_ours(tmp_path):
    kind, doc, errors = contract_file.validate_document_bytes(_golden("whole.json"))
    assert kind == "provider" and not errors and doc["envelope"]["snapshot_sha256"] == SHA
    shutil.copy(os.path.join(GOLDEN, "whole.json"), tmp_path / "contract.json")
    assert read_file_state(str(tmp_path / "contract.json"), STATE)["kind"] == "ours"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_damaged_shape_is_invalid_to_guard_and_ours_to_repair(tmp_path, name):
    kind, _doc, errors = contract_file.validate_document_bytes(_golden(name))
    assert errors, name  # Guard would enforce nothing
    shutil.copy(os.path.join(GOLDEN, name), tmp_path / "contract.json")
    found = read_file_state(str(tmp_path / "contract.json"), STATE)
    assert found["kind"] == "ours" and found["damage"] == SHAPES[name], found
    if name != "emptied.json":
        assert (found["task_id"], found["version"]) == (TASK, 3)


def test_too_little_left_to_tell_whose_it_is_is_foreign(tmp_path):
    shutil.copy(os.path.join(GOLDEN, "truncated_early.json"), tmp_path / "contract.json")
    found = read_file_state(str(tmp_path / "contract.json"), STATE)
    assert found["kind"] == "foreign" and "did not write" in found["why"]


def test_a_damaged_document_naming_another_project_s_task_is_foreign(tmp_path):
    other = {"tasks": {}, "contract_floors": {}}
    for name in ("bom.json", "truncated.json", "garbage_after.json"):
        shutil.copy(os.path.join(GOLDEN, name), tmp_path / "contract.json")
        assert read_file_state(str(tmp_path / "contract.json"), other)["kind"] == "foreign", name

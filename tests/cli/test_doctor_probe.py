"""doctor's probe of an interpreter (cli/python_checks.probe): another program at the recorded path
fails the check with PYTHON_NOT_FOUND's reasons, whatever it prints; doctor never dies on it."""
import pytest

from intent_loop.cli import python_checks
from intent_loop.launch import python_place


@pytest.mark.parametrize("answer", ["not json", "3", "three.eleven", "", "3.x.1"])
def test_a_program_that_answers_no_version_fails_the_probe(tmp_path, monkeypatch, answer):
    stand_in = tmp_path / "python3"
    stand_in.write_text(f"#!/bin/sh\ncat >/dev/null\necho '{answer}'\n")
    stand_in.chmod(0o755)
    monkeypatch.setattr(python_place, "choose", lambda python, **_: (python, None))  # the place is not the point
    version, why = python_checks.probe(str(stand_in), env={})
    assert version is None and why


def test_a_real_python_passes_the_probe(monkeypatch):
    import sys

    monkeypatch.setattr(python_place, "choose", lambda python, **_: (python, None))
    version, why = python_checks.probe(sys.executable, env={})
    assert why is None and version.startswith(f"{sys.version_info[0]}.{sys.version_info[1]}")

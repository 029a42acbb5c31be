"""The trusted Python roots the launcher tests name (docs/install.md, "Which Python runs intent-loop"): the
launchers run an interpreter only from under one. The tests isolate HOME, so the machine's pyenv is named by
PYENV_ROOT, and the fake interpreters of tests/launch/conftest.py's trusted_dir (and the Python running the
tests, wherever it is installed) by INTENT_LOOP_PYTHON_ROOTS."""
import os
import sys
from pathlib import Path

TRUSTED_BASE = Path("/var/lib/intent-loop-tests")  # outside the temp directories, which the rules refuse
PYENV_ROOT = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")  # read at import: the real HOME's


def roots_env():
    """The variables that make the test interpreters' places trusted Python roots."""
    return {"PYENV_ROOT": PYENV_ROOT,
            "INTENT_LOOP_PYTHON_ROOTS": f"{TRUSTED_BASE}:{os.path.realpath(sys.base_prefix)}"}

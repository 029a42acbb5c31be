"""Fixtures of the launcher tests: a directory the location rules accept (find_python.sh)."""
import shutil
import tempfile
from pathlib import Path

import pytest

from helpers.python_roots import TRUSTED_BASE

# The rules refuse every temp directory, where pytest's tmp_path lies, and run only interpreters under a
# trusted Python root: an interpreter the launchers may run lives under TRUSTED_BASE, which the tests name
# in INTENT_LOOP_PYTHON_ROOTS (helpers/python_roots.py, roots_env), not world-writable, as /usr/bin is.


@pytest.fixture
def trusted_dir():
    """A fresh directory outside the temp directories, owned by this user, mode 0755; removed after."""
    try:
        TRUSTED_BASE.mkdir(mode=0o755, exist_ok=True)
        made = Path(tempfile.mkdtemp(dir=TRUSTED_BASE))
    except PermissionError:
        pytest.skip(f"{TRUSTED_BASE} cannot be created: the rules refuse interpreters under the temp directories")
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)

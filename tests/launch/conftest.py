"""Fixtures of the launcher tests: a directory the location rules accept (find_python.sh)."""
import shutil
import tempfile
from pathlib import Path

import pytest

# The rules refuse every temp directory, where pytest's tmp_path lies: an interpreter the launchers may
# run must live elsewhere, in a root-owned, not world-writable place, as /usr/bin does.
TRUSTED_BASE = Path("/var/lib/intent-loop-tests")


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

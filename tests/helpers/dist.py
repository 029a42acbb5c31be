"""The one marker for tests that run the built binaries: they skip, saying why, until `dist/` holds
every binary of the table (launch/binaries.py), so a partial build never half-runs them."""
import os
from pathlib import Path

import pytest

from intent_loop.launch.binaries import BINARIES

DIST = Path(__file__).resolve().parents[2] / "dist"


def is_built():
    return all(os.access(DIST / binary.name, os.X_OK) for binary in BINARIES)


requires_dist = pytest.mark.skipif(not is_built(), reason="dist/ is not built: run `python3 build.py` first")

"""The real-host harness itself (conftest.py, real_host.py), without running Codex: a real-host test
that cannot run skips with its reason, and under CI=true fails with that same reason."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# A real-host module with two tests and no fixture of its own that could fail first.
MODULE = "tests/e2e/test_real_codex_mcp.py"
WHY = "npm is not installed, so @openai/codex@0.169.0 cannot be installed"


def run_pytest(ci):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "INTENT_LOOP_CODEX_BIN", "INTENT_LOOP_CODEX_VERSION", "PYTEST_ADDOPTS")}
    env["INTENT_LOOP_CODEX_UNAVAILABLE"] = WHY
    if ci:
        env["CI"] = "true"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", MODULE], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("ci", [False, True], ids=["outside-ci", "ci-true"])
def test_a_real_host_test_without_codex_skips_outside_ci_and_fails_under_ci(ci):
    rc, out = run_pytest(ci)
    assert WHY in out, out
    assert "real-host tests: no real Codex to run" in out, out
    if ci:
        assert rc == 1, out
        assert out.count("CI=true: this real-host test cannot run here and must not be skipped") >= 2, out
        assert "skipped" not in out.splitlines()[-1], out
    else:
        assert rc == 0, out
        assert "2 skipped" in out.splitlines()[-1], out

"""The real-host harness for Claude Code (conftest.py, real_host.py), without running it: a Claude Code
test that cannot run skips with its reason, and under CI=true fails with that same reason."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests/e2e/test_real_claude_code.py"
WHY = "npm is not installed, so @anthropic-ai/claude-code@2.1.332 cannot be installed"
TESTS = 6  # every test of MODULE: none may run, and none may pass silently under CI


def run_pytest(ci):
    env = {k: v for k, v in os.environ.items()
           if k not in ("CI", "INTENT_LOOP_CLAUDE_BIN", "INTENT_LOOP_CLAUDE_VERSION", "INTENT_LOOP_CODEX_BIN",
                        "INTENT_LOOP_CODEX_VERSION", "PYTEST_ADDOPTS")}
    env["INTENT_LOOP_CLAUDE_UNAVAILABLE"] = WHY
    if ci:
        env["CI"] = "true"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", MODULE], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("ci", [False, True], ids=["outside-ci", "ci-true"])
def test_a_claude_code_test_without_claude_skips_outside_ci_and_fails_under_ci(ci):
    rc, out = run_pytest(ci)
    assert WHY in out, out
    assert "real-host tests: no real Claude Code to run" in out, out
    if ci:
        assert rc == 1, out
        assert out.count("CI=true: this real-host test cannot run here and must not be skipped") >= TESTS, out
        assert f"{TESTS} error" in out.splitlines()[-1] and "skipped" not in out.splitlines()[-1], out
    else:
        assert rc == 0, out
        assert f"{TESTS} skipped" in out.splitlines()[-1], out

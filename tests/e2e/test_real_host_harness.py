"""The real-host harness itself (conftest.py, real_host.py), without running either host: a real-host
test that cannot run skips with its reason, and under CI=true fails with that same reason."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Per host: a real-host module with no fixture of its own that could fail first, how many tests it
# has (none may run, and none may pass silently under CI), the reason build.py would give, the words
# the summary says, and the variables that name the host's binary and version.
HOSTS = {
    "codex": ("tests/e2e/test_real_codex_mcp.py", 2,
              "npm is not installed, so @openai/codex@0.169.0 cannot be installed",
              "real-host tests: no real Codex to run", "CODEX"),
    "claude-code": ("tests/e2e/test_real_claude_code.py", 6,
                    "npm is not installed, so @anthropic-ai/claude-code@2.1.332 cannot be installed",
                    "real-host tests: no real Claude Code to run", "CLAUDE"),
}


def run_pytest(module, why, variable, ci):
    names = [f"INTENT_LOOP_{host}_{part}" for host in ("CODEX", "CLAUDE") for part in ("BIN", "VERSION")]
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS", *names)}
    env[f"INTENT_LOOP_{variable}_UNAVAILABLE"] = why
    if ci:
        env["CI"] = "true"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", module], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("ci", [False, True], ids=["outside-ci", "ci-true"])
def test_a_real_host_test_without_its_host_skips_outside_ci_and_fails_under_ci(host, ci):
    module, tests, why, summary, variable = HOSTS[host]
    rc, out = run_pytest(module, why, variable, ci)
    assert why in out, out
    assert summary in out, out
    if ci:
        assert rc == 1, out
        assert out.count("CI=true: this real-host test cannot run here and must not be skipped") >= tests, out
        assert f"{tests} error" in out.splitlines()[-1] and "skipped" not in out.splitlines()[-1], out
    else:
        assert rc == 0, out
        assert f"{tests} skipped" in out.splitlines()[-1], out

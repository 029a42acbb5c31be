"""The real-host tests' own hooks: under CI=true a test that cannot run fails with its reason instead
of skipping, and the run says which Codex and Claude Code versions it drove (real_host.py)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import real_host  # noqa: E402

_HERE = Path(__file__).resolve().parent


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Under CI=true, any skip of a test in tests/e2e/ (a skipif mark, a fixture's or the test's own
    pytest.skip) is reported as a failure carrying the skip's reason."""
    report = yield
    if real_host.IN_CI and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = (f"CI=true: this real-host test cannot run here and must not be skipped: {reason}\n"
                           f"(the real Codex: {real_host.CODEX_BIN or 'none'}, "
                           f"version {real_host.codex_version() or 'unknown'}; "
                           f"the real Claude Code: {real_host.CLAUDE_BIN or 'none'}, "
                           f"version {real_host.claude_version() or 'unknown'})")
    return report


@pytest.fixture(autouse=True, scope="session")
def _codex_under_test():
    """Each binary must be the version asked for (INTENT_LOOP_CODEX_VERSION, INTENT_LOOP_CLAUDE_VERSION),
    when one was."""
    mismatch = real_host.version_mismatch() or real_host.claude_version_mismatch()
    if mismatch:
        pytest.fail(mismatch, pytrace=False)
    yield


def pytest_terminal_summary(terminalreporter):
    ran = [r for reports in terminalreporter.stats.values() for r in reports
           if getattr(r, "nodeid", "").startswith("tests/e2e/")]
    if not ran:
        return
    why = real_host.why_no_codex()
    if why:
        terminalreporter.write_line(f"real-host tests: no real Codex to run ({why})")
    else:
        pinned = "the pinned version" if real_host.is_pinned() else f"the pinned version is {real_host.PINNED_VERSION}"
        terminalreporter.write_line(f"real-host tests ran against Codex: codex-cli {real_host.codex_version()} "
                                    f"({pinned}), {real_host.CODEX_BIN}")
    if not any("claude" in r.nodeid for r in ran):  # said only where a Claude Code test was in the run
        return
    why = real_host.why_no_claude()
    if why:
        terminalreporter.write_line(f"real-host tests: no real Claude Code to run ({why})")
        return
    pinned = ("the pinned version" if real_host.claude_is_pinned()
              else f"the pinned version is {real_host.CLAUDE_PINNED_VERSION}")
    terminalreporter.write_line(f"real-host tests ran against Claude Code {real_host.claude_version()} "
                                f"({pinned}), {real_host.CLAUDE_BIN}")

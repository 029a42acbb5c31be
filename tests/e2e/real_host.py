"""The real hosts under test: which Codex and Claude Code binaries and versions, and why a real-host
test cannot run.

The host version is ONE variable, INTENT_LOOP_CODEX_VERSION (unset: the version pinned by
tests/e2e/npm/package.json, the one CI runs). `python3 build.py test` and `python3 build.py test-e2e`
install that exact @openai/codex into .cache/npm-codex-<version>/ and pass its binary to pytest as
INTENT_LOOP_CODEX_BIN, or, where they could not, the reason as INTENT_LOOP_CODEX_UNAVAILABLE.
Setting INTENT_LOOP_CODEX_BIN by hand works too (then the version is whatever that binary says).
Claude Code the same way: INTENT_LOOP_CLAUDE_VERSION (tests/e2e/npm-claude/package.json's pin),
.cache/npm-claude-<version>/, INTENT_LOOP_CLAUDE_BIN or INTENT_LOOP_CLAUDE_UNAVAILABLE.

    from real_host import CODEX_BIN, requires_codex, codex_version, PINNED_VERSION
    from real_host import CLAUDE_BIN, requires_claude, claude_version, CLAUDE_PINNED_VERSION

A real-host test that cannot run (no binary, no tmux, no root for a namespace, ...) skips with the
reason, except under CI=true, where tests/e2e/conftest.py turns that skip into a failure that
carries the same reason: CI must not go green on tests that never ran.
"""
import functools
import importlib.util
import json
import os
from pathlib import Path

import pytest

CODEX_PACKAGE = "@openai/codex"
CODEX_BIN = os.environ.get("INTENT_LOOP_CODEX_BIN", "")
CODEX_VERSION_VAR = "INTENT_LOOP_CODEX_VERSION"
PINNED_VERSION = json.loads((Path(__file__).resolve().parent / "npm" / "package.json").read_text())[
    "dependencies"][CODEX_PACKAGE]
IN_CI = os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _why_no(binary, *, host, bin_var, unavailable_var, package, pinned, version_var):
    """Why a real host cannot run here, or "" when it can (the same reasons for both hosts)."""
    if not binary:
        told = os.environ.get(unavailable_var, "")
        return (f"no real {host}: {told}" if told else
                f"{bin_var} is not set: run `python3 build.py test` or `python3 build.py test-e2e` "
                f"(needs npm) to install {package}@{pinned}, or set {version_var}")
    if not os.access(binary, os.X_OK):
        return f"{bin_var}={binary!r} is not an executable file"
    return ""


def why_no_codex():
    """Why the real Codex cannot run here, or "" when it can."""
    return _why_no(CODEX_BIN, host="Codex", bin_var="INTENT_LOOP_CODEX_BIN",
                   unavailable_var="INTENT_LOOP_CODEX_UNAVAILABLE", package=CODEX_PACKAGE, pinned=PINNED_VERSION,
                   version_var=CODEX_VERSION_VAR)


requires_codex = pytest.mark.skipif(bool(why_no_codex()), reason=why_no_codex() or "the real Codex is here")


@functools.cache
def _build():
    """build.py as a module: the version probes it checks an install with are the ones used here."""
    path = Path(__file__).resolve().parents[2] / "build.py"
    spec = importlib.util.spec_from_file_location("build_for_real_host", path)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


@functools.cache
def codex_version():
    """What the binary says it is ("codex-cli 0.171.0" -> "0.171.0"), or None."""
    return None if why_no_codex() else _build().codex_version_of(CODEX_BIN)


def is_pinned():
    """Whether the Codex under test is the pinned version (what the 0.169.0 notes were seen with)."""
    return codex_version() == PINNED_VERSION


def version_mismatch():
    """A mismatch between INTENT_LOOP_CODEX_VERSION and the binary's own version, or ""."""
    return _mismatch(CODEX_VERSION_VAR, codex_version(), CODEX_BIN)


def _mismatch(version_var, said, binary):
    wanted = os.environ.get(version_var, "").strip()
    if wanted and said and said != wanted:
        return f"{version_var}={wanted} but {binary} says it is {said}"
    return ""


# -- the real Claude Code (issue 37), the same way -------------------------------------------
# INTENT_LOOP_CLAUDE_VERSION (unset: the version tests/e2e/npm-claude/package.json pins); build.py
# installs it into .cache/npm-claude-<version>/ and passes INTENT_LOOP_CLAUDE_BIN, or the reason it
# could not as INTENT_LOOP_CLAUDE_UNAVAILABLE.
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CLAUDE_BIN = os.environ.get("INTENT_LOOP_CLAUDE_BIN", "")
CLAUDE_VERSION_VAR = "INTENT_LOOP_CLAUDE_VERSION"
CLAUDE_PINNED_VERSION = json.loads((Path(__file__).resolve().parent / "npm-claude" / "package.json").read_text())[
    "dependencies"][CLAUDE_PACKAGE]


def why_no_claude():
    """Why the real Claude Code cannot run here, or "" when it can."""
    return _why_no(CLAUDE_BIN, host="Claude Code", bin_var="INTENT_LOOP_CLAUDE_BIN",
                   unavailable_var="INTENT_LOOP_CLAUDE_UNAVAILABLE", package=CLAUDE_PACKAGE,
                   pinned=CLAUDE_PINNED_VERSION, version_var=CLAUDE_VERSION_VAR)


requires_claude = pytest.mark.skipif(bool(why_no_claude()), reason=why_no_claude() or "the real Claude Code is here")


@functools.cache
def claude_version():
    """What the binary says it is ("2.1.332 (Claude Code)" -> "2.1.332"), or None."""
    return None if why_no_claude() else _build().claude_version_of(CLAUDE_BIN)


def claude_is_pinned():
    return claude_version() == CLAUDE_PINNED_VERSION


def claude_version_mismatch():
    """A mismatch between INTENT_LOOP_CLAUDE_VERSION and the binary's own version, or ""."""
    return _mismatch(CLAUDE_VERSION_VAR, claude_version(), CLAUDE_BIN)

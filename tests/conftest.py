"""Shared fixtures: an isolated home for every test, a data root, a workspace, the test reducer."""
import faulthandler
import os
import pwd

import pytest

from helpers.counting import CountingReducer
from intent_loop.storage import paths as paths_mod

# Computed at import, before any fixture replaces HOME: the directories no test may ever touch.
_REAL_HOMES = {os.path.expanduser("~"), pwd.getpwuid(os.getuid()).pw_dir}
_REAL_PLUGIN_DATA = sorted({os.path.join(home, ".codex", "plugin-data") for home in _REAL_HOMES})
_ENV_THAT_POINTS_AT_DATA = ("CODEX_HOME", "PLUGIN_DATA", "INTENT_LOOP_DATA_DIR")
# Set by Codex in its agent's shells: a suite run from one would see the CLI refuse user-only
# commands (AGENT_SHELL); tests that need the marker set it themselves.
_AGENT_SHELL_MARKERS = ("CODEX_TOOL_CALL_ID", "CODEX_THREAD_ID")
HANG_LIMIT_SECONDS = 240  # a hung test (a FIFO opened, a lock never released) dumps stacks and exits
_hang_report_fd = 2


def pytest_configure(config):
    """Keep a descriptor of the real stderr (output capture is off while plugins configure), so
    the stacks of a hung test reach the terminal or CI log rather than a discarded capture file."""
    global _hang_report_fd
    _hang_report_fd = os.dup(2)


def _snapshot(root):
    """Every path under `root` with its mtime: cheap enough, and any write changes it."""
    found = {}
    if not os.path.lexists(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            try:
                found[path] = os.lstat(path).st_mtime_ns
            except OSError:
                pass
    found[root] = os.lstat(root).st_mtime_ns
    return found


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """HOME is a fresh temporary directory and nothing points at real data; touching it fails loudly."""
    before = {root: _snapshot(root) for root in _REAL_PLUGIN_DATA}
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for name in _ENV_THAT_POINTS_AT_DATA + _AGENT_SHELL_MARKERS:
        monkeypatch.delenv(name, raising=False)
    faulthandler.dump_traceback_later(HANG_LIMIT_SECONDS, exit=True, file=_hang_report_fd)
    yield home
    faulthandler.cancel_dump_traceback_later()
    for root, snapshot in before.items():
        if _snapshot(root) != snapshot:
            pytest.fail(f"a test wrote under the real {root}; tests must only use their temporary data root")


@pytest.fixture
def data_root(tmp_path):
    """Where the project directories go; not created, so tests see what a mutation creates."""
    return str(tmp_path / "data")


@pytest.fixture
def workspace(tmp_path):
    """The user's project directory (the hook payload's cwd)."""
    path = tmp_path / "workspace"
    path.mkdir()
    return str(path)


@pytest.fixture
def project(data_root, workspace):
    """ProjectPaths for `workspace` under `data_root`."""
    return paths_mod.project_paths(data_root, workspace)


@pytest.fixture
def reducer():
    return CountingReducer()


@pytest.fixture
def outside(tmp_path):
    """A directory outside the data root with a file an attack would like to overwrite."""
    path = tmp_path / "outside"
    path.mkdir()
    (path / "precious.txt").write_bytes(b"do not touch\n")
    return path

"""End to end, issue 24: the real Codex (0.169.0 pinned; any INTENT_LOOP_CODEX_VERSION) installs
intent-loop from the repository itself, as Codex users install plugins (`codex plugin marketplace add
<repository>`, `codex plugin add`), with no build step: the plugin runs the committed source tree
through hooks/intent-loop.

The repository under test is a fresh one made of this checkout's files as they would be committed
(tracked and not ignored: no dist/, .venv/ or .cache/), added by path and by a git URL (an http://
URL of a bare clone served by `git http-backend` on loopback: the clone path `owner/repo` takes);
plugin_repo.py does both. Codex 0.169.0 refuses `file://` URLs, which is checked too, so a Codex
that starts accepting them shows up here.

The session runs with a PATH whose only Python is a minor version other than the one the tests
run under, in a mount namespace where the tests' interpreter and /usr/bin's are hidden, so nothing
can fall back on the builder's interpreter. That PATH entry is the other interpreter's own folder,
not a folder of links under the test's temporary directory: the launchers refuse an interpreter in
a place the agent may write (/tmp included, docs/security.md). Nothing may be written into the
installed plugin.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_real_codex as base  # noqa: E402
from mock_model import developer_messages  # noqa: E402
from plugin_repo import (  # noqa: E402
    SOURCES,
    fresh_repository,
    hiding,
    install_plugin,
    marketplace_source,
    run_codex,
    tree_digest,
)
from real_host import requires_codex  # noqa: E402
from test_real_codex import (  # noqa: E402
    BYPASS,
    CONFIG_TOML,
    EVENTS,
    TURN_TIMEOUT,
    assert_all_hooks_completed,
    hook_results,
)
from test_real_codex_mcp import scripted  # noqa: E402
from test_real_codex_plugin import status_result  # noqa: E402

from helpers.settle import settle  # noqa: E402
from intent_loop.launch import python_place  # noqa: E402
from intent_loop.storage import paths as paths_mod  # noqa: E402

mock_model = base.mock_model
PLUGIN_ID = "intent-loop@intent-loop"
PYENV = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"

pytestmark = [
    pytest.mark.e2e,
    requires_codex,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


def other_minor_python():
    """A Python 3.11+ of another minor version than the one running the tests, or None."""
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for minor in ("3.13", "3.12", "3.11"):
        if minor == mine:
            continue
        for found in sorted(PYENV.glob(f"{minor}.*/bin/python{minor}")) + [Path(f"/usr/bin/python{minor}")]:
            if os.access(found, os.X_OK):
                return found
    return None


@pytest.fixture
def repo_env(tmp_path, isolated_home):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("hiding the builder's interpreter needs a mount namespace (root and unshare)")
    other = other_minor_python()
    if other is None:
        pytest.skip("no Python 3.11+ of another minor version than the tests' own is installed")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    # the launchers take no interpreter from a temporary directory: PATH names the other one's own
    # folder (pyenv's bin/, which also holds its python3; or /usr/bin, where the others are hidden)
    bin_dir = other.parent
    # and only from under a trusted Python root: a user's pyenv is ~/.pyenv (the MCP server's environment
    # has no PYENV_ROOT), so the isolated home links to this machine's
    if other.is_relative_to(PYENV):
        (isolated_home / ".pyenv").symlink_to(PYENV.parent)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_", "PYENV"))}
    env.update(HOME=str(isolated_home), CODEX_HOME=str(codex_home), NO_COLOR="1", RUST_LOG="error",
               PATH=f"{bin_dir}:/usr/bin:/bin")
    mine = Path(os.path.realpath(sys.executable))
    hidden = [mine.parents[1]] if mine.is_relative_to(PYENV) else [mine]
    hidden += [p for p in Path("/usr/bin").glob("python3.1[1-9]") if os.path.realpath(p) != os.path.realpath(other)]
    return env, codex_home, workspace, other, hidden


@pytest.mark.parametrize("source", SOURCES)
def test_codex_installs_the_repository_and_runs_it_from_source_with_another_python(mock_model, tmp_path, repo_env,
                                                                                   source):
    server, wrap = mock_model
    env, codex_home, workspace, other, hidden = repo_env
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url)
                                            .replace("plugins = false", "plugins = true"))
    repository = fresh_repository(tmp_path / "clone")
    assert not (repository / "dist").exists() and not (repository / ".venv").exists()

    rc, _out, err, _ = run_codex(wrap, env, workspace, "plugin", "marketplace", "add", f"file://{repository}",
                                 check=False)
    assert rc != 0 and "invalid marketplace source format" in err, "Codex 0.169.0 refused file:// URLs; see docs"
    with marketplace_source(source, repository, tmp_path / "served", wrap) as where:
        plugin_root = install_plugin(wrap, env, workspace, where, PLUGIN_ID)
    assert plugin_root.parent == codex_home / "plugins" / "cache" / "intent-loop" / "intent-loop"
    assert (plugin_root / "hooks" / "intent-loop").is_file() and not (plugin_root / "dist").exists()
    before = tree_digest(plugin_root)

    # One turn with intent lines and one MCP call, every Python but `other` hidden.
    server.respond_with(scripted([("call_status", "intent_status", {})]))
    prompt = "Fix the login flow.\nintent: goal Fix the login redirect loop\nintent: must-not action:install_local\n"
    _rc, out, err, secs = run_codex(wrap, env, workspace, "exec", *BYPASS, prompt, timeout=TURN_TIMEOUT,
                                    hide=hidden)
    assert_all_hooks_completed(err, 1)
    # each hook ran once: Codex reads the hooks.json the manifest names, never Claude Code's hooks/hooks.json
    assert sorted(event for event, _status in hook_results(err)) == sorted(EVENTS), hook_results(err)
    bodies = server.response_bodies()
    assert any("Fix the login redirect loop" in m for m in developer_messages(bodies[0])), developer_messages(bodies[0])
    status = status_result(bodies)
    assert status["ok"], status
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"
    assert status["result"]["data_root"] == str(data_root), status["result"]
    # the server (started without hook trust) sees that this install's hooks ran
    assert status["result"]["hooks"]["ran"] is True, status["result"]["hooks"]

    # The interpreter was found on PATH and recorded (runtime/python-record; python3 or the versioned
    # name, both the same file in the folder PATH names).
    record = python_place.read_record(str(data_root))
    assert record and os.path.samefile(record["py"], other), record
    # Nothing was written into the plugin: no __pycache__, no changed byte (Codex would untrust it).
    assert tree_digest(plugin_root) == before
    assert list((data_root / "pycache").rglob("*.pyc")), "bytecode was not written under the data root"

    # The ledger holds the typed lines, and Guard's file was written in the workspace.
    settle(str(data_root), str(workspace))
    project = paths_mod.project_paths(str(data_root), str(workspace))
    assert b"Fix the login redirect loop" in Path(project.ledger).read_bytes()
    assert (workspace / ".execution-fidelity" / "contract.json").is_file()

    # The command line, run from the installed plugin with the same hidden interpreters, verifies it.
    cli = [*hiding(hidden), str(plugin_root / "hooks" / "intent-loop"), "cli", "verify", "--json"]
    done = subprocess.run(cli, cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["ok"] is True, done.stdout + done.stderr
    assert tree_digest(plugin_root) == before
    print(f"real-codex repository plugin ({source}, {other.name}): turn {secs:.1f} s")

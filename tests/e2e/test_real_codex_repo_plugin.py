"""End to end, issue 24: the real Codex 0.169.0 installs intent-loop from the repository itself, as
Codex users install plugins (`codex plugin marketplace add <repository>`, `codex plugin add`), with
no build step: the plugin runs the committed source tree through hooks/intent-loop.

The repository under test is a fresh one made of this checkout's files as they would be committed
(tracked and not ignored: no dist/, .venv/ or .cache/), added by path and by a git URL (an http://
URL served from a bare clone on loopback: the clone path `owner/repo` takes). Codex 0.169.0 refuses
`file://` URLs, which is checked too, so a Codex that starts accepting them shows up here.

The session runs with a PATH whose only Python is a minor version other than the one the tests
run under, in a mount namespace where the tests' interpreter and /usr/bin's are hidden, so nothing
can fall back on the builder's interpreter. Nothing may be written into the installed plugin.
"""
import hashlib
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
from test_real_codex import (  # noqa: E402
    BYPASS,
    CODEX_BIN,
    CONFIG_TOML,
    TURN_TIMEOUT,
    assert_all_hooks_completed,
    run_bounded,
)
from test_real_codex_mcp import scripted  # noqa: E402
from test_real_codex_plugin import status_result  # noqa: E402

from helpers.settle import settle  # noqa: E402
from intent_loop.storage import paths as paths_mod  # noqa: E402

mock_model = base.mock_model
ROOT = Path(__file__).resolve().parents[2]
PLUGIN_ID = "intent-loop@intent-loop"
COMMAND_TIMEOUT = 60
PYENV = Path(os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))) / "versions"

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CODEX_BIN or not os.access(CODEX_BIN, os.X_OK),
                       reason="INTENT_LOOP_CODEX_BIN is not set: run `python3 build.py test` (needs npm)"),
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


def fresh_repository(where):
    """A git repository holding this checkout's files as they would be committed (tracked, or new
    and not ignored), with their modes: what `git clone` of the pushed branch gives."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        source = ROOT / name
        if not source.is_file():  # deleted in the working tree
            continue
        target = where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    git = ["git", "-c", "user.email=test@example.invalid", "-c", "user.name=test", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=where, check=True)
    subprocess.run([*git, "add", "-A"], cwd=where, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot"], cwd=where, check=True)
    return where


def tree_digest(root):
    """{relative path: sha256} of every file under root (what Codex hashes to trust the plugin)."""
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and ".git" not in path.relative_to(root).parts:
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def hiding(paths):
    """argv prefix: a private mount namespace in which each path is covered (a directory by an
    empty tmpfs, a file by /dev/null, which is not executable), then the command."""
    script = []
    for path in paths:
        if Path(path).is_dir():
            script.append(f"mount -t tmpfs none '{path}'")
        else:
            script.append(f"mount --bind /dev/null '{path}'")
    return ["unshare", "-m", "sh", "-c", " && ".join(script + ['exec "$@"']), "hide"]


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
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(other)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_", "PYENV"))}
    env.update(HOME=str(isolated_home), CODEX_HOME=str(codex_home), NO_COLOR="1", RUST_LOG="error",
               PATH=f"{bin_dir}:/usr/bin:/bin")
    mine = Path(os.path.realpath(sys.executable))
    hidden = [mine.parents[1]] if mine.is_relative_to(PYENV) else [mine]
    hidden += [p for p in Path("/usr/bin").glob("python3.1[1-9]") if os.path.realpath(p) != os.path.realpath(other)]
    return env, codex_home, workspace, other, hidden


def codex(wrap, env, cwd, *args, timeout=COMMAND_TIMEOUT, check=True, hide=()):
    rc, out, err, secs = run_bounded([*(hiding(hide) if hide else []), *wrap([CODEX_BIN, *args])], cwd=cwd,
                                     env=env, timeout=timeout)
    if check:
        assert rc == 0, f"codex {' '.join(args[:3])} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return rc, out, err, secs


class _GitOverHttp:
    """A bare clone served read-only over git's dumb HTTP protocol on loopback, in the namespace."""

    def __init__(self, repository, where, wrap):
        self.bare = where / "intent-loop.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(repository), str(self.bare)], check=True)
        subprocess.run(["git", "update-server-info"], cwd=self.bare, check=True)
        self.proc = subprocess.Popen(wrap([sys.executable, "-c", _SERVE, str(where)]), stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/intent-loop.git"

    def close(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


_SERVE = """import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
handler.func.log_message = lambda *a: None
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.mark.parametrize("source", ["path", "git-url"])
def test_codex_installs_the_repository_and_runs_it_from_source_with_another_python(mock_model, tmp_path, repo_env,
                                                                                   source):
    server, wrap = mock_model
    env, codex_home, workspace, other, hidden = repo_env
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url)
                                            .replace("plugins = false", "plugins = true"))
    repository = fresh_repository(tmp_path / "clone")
    assert not (repository / "dist").exists() and not (repository / ".venv").exists()

    rc, _out, err, _ = codex(wrap, env, workspace, "plugin", "marketplace", "add", f"file://{repository}",
                             check=False)
    assert rc != 0 and "invalid marketplace source format" in err, "Codex 0.169.0 refused file:// URLs; see docs"
    http = None
    try:
        if source == "path":
            codex(wrap, env, workspace, "plugin", "marketplace", "add", str(repository))
        else:
            http = _GitOverHttp(repository, tmp_path / "served", wrap)
            codex(wrap, env, workspace, "plugin", "marketplace", "add", http.url)
        _rc, out, _err, _ = codex(wrap, env, workspace, "plugin", "add", PLUGIN_ID, "--json")
    finally:
        if http is not None:
            http.close()
    plugin_root = Path(json.loads(out)["installedPath"])
    assert plugin_root.parent == codex_home / "plugins" / "cache" / "intent-loop" / "intent-loop"
    assert (plugin_root / "hooks" / "intent-loop").is_file() and not (plugin_root / "dist").exists()
    before = tree_digest(plugin_root)

    # One turn with intent lines and one MCP call, every Python but `other` hidden.
    server.respond_with(scripted([("call_status", "intent_status", {})]))
    prompt = "Fix the login flow.\nintent: goal Fix the login redirect loop\nintent: must-not action:install_local\n"
    _rc, out, err, secs = codex(wrap, env, workspace, "exec", *BYPASS, prompt, timeout=TURN_TIMEOUT, hide=hidden)
    assert_all_hooks_completed(err, 1)
    bodies = server.response_bodies()
    assert any("Fix the login redirect loop" in m for m in developer_messages(bodies[0])), developer_messages(bodies[0])
    status = status_result(bodies)
    assert status["ok"], status
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"
    assert status["result"]["data_root"] == str(data_root), status["result"]
    # the server (started without hook trust) sees that this install's hooks ran
    assert status["result"]["hooks"]["ran"] is True, status["result"]["hooks"]

    # The interpreter was found on PATH and cached as itself (the real file, not the symlink's name
    # that the PATH entry is: both name the same file, so the first name found is kept).
    cached = (data_root / "runtime" / "python").read_text().strip()
    assert os.path.samefile(cached, other), cached
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

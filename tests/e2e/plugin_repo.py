"""Install a plugin into a throw-away Codex home from a git repository of a committed tree, as users do.

    repository = fresh_repository(tmp_path / "clone")                     # this checkout, as committed
    repository = fresh_repository(tmp_path / "efg", Path("/work/shared/efg-0.2.2"))   # any marketplace folder
    with marketplace_source("git-url", repository, tmp_path / "served", wrap) as source:
        plugin_root = install_plugin(wrap, env, workspace, source, "intent-loop@intent-loop")
    keys = trust_all_hooks(env, workspace, wrap)   # the TUI's "Trust all and continue" (tui_trust.py)

- fresh_repository(): a new git repository (one commit) holding a folder's files as they would be
  committed. For a git checkout that is its tracked files and its new files that are not ignored (no
  dist/, .venv/ or .cache/), with their modes; for a plain folder, every file in it.
- marketplace_source(): what `codex plugin marketplace add` is given: "path" (the repository's
  folder) or "git-url" (an http:// URL of a bare clone served over git's smart HTTP protocol by
  `git http-backend` on loopback, in the tests' offline namespace: git_http.py).
- install_plugin(): `codex plugin marketplace add <source>`, then `codex plugin add <plugin> --json`;
  returns the installed folder Codex reports (`installedPath`, under <codex-home>/plugins/cache/).
- run_codex(): one bounded Codex command (in the namespace, optionally with paths hidden).

The Codex binary is the one under test (real_host.CODEX_BIN: INTENT_LOOP_CODEX_VERSION's).
"""
import contextlib
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from real_host import CODEX_BIN  # noqa: E402
from test_real_codex import run_bounded  # noqa: E402
from tui_trust import trust_plugin_hooks  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMMAND_TIMEOUT = 60
SOURCES = ("path", "git-url")
_GIT = ["git", "-c", "user.email=test@example.invalid", "-c", "user.name=test", "-c", "init.defaultBranch=main"]


def committed_files(folder):
    """The files of `folder` that a commit would hold: a git checkout's tracked files and its new,
    not ignored ones (deleted ones left out); a plain folder's every file (no .git)."""
    folder = Path(folder)
    inside = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=folder, capture_output=True, text=True)
    if inside.returncode == 0 and Path(inside.stdout.strip()).resolve() == folder.resolve():
        listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                cwd=folder, capture_output=True, check=True).stdout.split(b"\0")
        names = [n.decode() for n in listed if n]
    else:
        names = [p.relative_to(folder).as_posix() for p in sorted(folder.rglob("*"))
                 if (p.is_file() or p.is_symlink()) and ".git" not in p.relative_to(folder).parts]
    return [name for name in names if (folder / name).is_file()]


def fresh_repository(where, folder=ROOT):
    """A new git repository at `where` whose one commit holds committed_files(folder), with their modes."""
    where = Path(where)
    for name in committed_files(folder):
        target = where / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(Path(folder) / name, target)
    subprocess.run([*_GIT, "init", "-q", str(where)], check=True)
    subprocess.run([*_GIT, "add", "-A"], cwd=where, check=True)
    subprocess.run([*_GIT, "commit", "-q", "-m", "snapshot"], cwd=where, check=True)
    return where


def tree_digest(root):
    """{relative path: sha256} of every file under root (what Codex hashes to trust the plugin)."""
    out = {}
    for path in sorted(Path(root).rglob("*")):
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


def run_codex(wrap, env, cwd, *args, timeout=COMMAND_TIMEOUT, check=True, hide=(), codex_bin=None):
    """`codex <args>` in `wrap`'s namespace (paths in `hide` covered); (rc, stdout, stderr, seconds)."""
    argv = [*(hiding(hide) if hide else []), *wrap([codex_bin or CODEX_BIN, *args])]
    rc, out, err, secs = run_bounded(argv, cwd=cwd, env=env, timeout=timeout)
    if check:
        assert rc == 0, f"codex {' '.join(args[:3])} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return rc, out, err, secs


class GitHttpServer:
    """A bare clone of `repository` served read-only over git's smart HTTP protocol on loopback
    (git_http.py, started through `wrap`, so inside the namespace Codex runs in); .url is its URL."""

    def __init__(self, repository, where, wrap):
        where = Path(where)
        where.mkdir(parents=True, exist_ok=True)
        name = f"{Path(repository).name}.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(repository), str(where / name)], check=True)
        self.proc = subprocess.Popen(wrap([sys.executable, str(HERE / "git_http.py"), str(where)]),
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        port = self.proc.stdout.readline()
        if not port.strip().isdigit():
            self.close()
            raise OSError(f"git_http.py did not start (exit {self.proc.returncode})")
        self.url = f"http://127.0.0.1:{int(port)}/{name}"

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()


@contextlib.contextmanager
def marketplace_source(kind, repository, where, wrap):
    """What to give `codex plugin marketplace add`: "path" the repository's folder, "git-url" the
    http:// URL of its bare clone served on loopback while the block runs."""
    if kind == "path":
        yield str(repository)
        return
    if kind != "git-url":
        raise ValueError(f"unknown marketplace source kind {kind!r}; one of {SOURCES}")
    server = GitHttpServer(repository, where, wrap)
    try:
        yield server.url
    finally:
        server.close()


def install_plugin(wrap, env, cwd, source, plugin_id, *, timeout=COMMAND_TIMEOUT):
    """Add the marketplace at `source` and install `plugin_id` ("<plugin>@<marketplace>") into
    $CODEX_HOME; the folder Codex installed it to."""
    run_codex(wrap, env, cwd, "plugin", "marketplace", "add", str(source), timeout=timeout)
    _rc, out, _err, _ = run_codex(wrap, env, cwd, "plugin", "add", plugin_id, "--json", timeout=timeout)
    return Path(json.loads(out)["installedPath"])


def trust_all_hooks(env, cwd, wrap, *, timeout=60):
    """Trust every hook of the installed plugins as the TUI's "Trust all and continue" does (it is
    that: tui_trust.trust_plugin_hooks drives the real TUI); the [hooks.state."..."] keys after."""
    return trust_plugin_hooks(CODEX_BIN, env, cwd, wrap, timeout=timeout)

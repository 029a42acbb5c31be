"""Which Python runs intent-loop (issue 24): the source launcher (hooks/intent-loop) and the binaries'
launcher find a Python 3.11+ at run time: INTENT_LOOP_PYTHON, else the interpreter an earlier run
cached in the data root (revalidated by one stat), else a search of PATH and the usual directories
(launch/find_python.sh). What is cached is the real interpreter, never a shim; when none is found
a hook answers fail-open and says so once a session, and the command line says PYTHON_NOT_FOUND.

The cases that must hide this machine's own interpreters (every Python gone, the builder's gone)
run in a private mount namespace, so they need root and `unshare`; they skip with that reason.
"""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.dist import requires_dist
from helpers.python_roots import roots_env
from helpers.receipt_words import said
from intent_loop.launch.binaries import BINARIES
from intent_loop.launch.python_place import read_record

ROOT = Path(__file__).resolve().parents[2]
SOURCE_LAUNCHER = ROOT / "hooks" / "intent-loop"
DIST = ROOT / "dist"
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
NO_PYTHON = "intent-loop is not recording: no Python 3.11+ found; set INTENT_LOOP_PYTHON"
needs_namespace = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                     reason="hiding this machine's interpreters needs root and unshare -m")


def interpreter(minor):
    """An installed CPython of that minor version (pyenv's, or /usr/bin's), or None."""
    for found in sorted(PYENV.glob(f"{minor}.*/bin/python{minor}")) + [Path(f"/usr/bin/python{minor}")]:
        if os.access(found, os.X_OK):
            return found
    return None


def another_python():
    """A Python 3.11+ that is not the one running the tests (its real file)."""
    mine = os.path.realpath(sys.executable)
    for minor in ("3.13", "3.12", "3.11"):
        found = interpreter(minor)
        if found is not None and os.path.realpath(found) != mine:
            return found
    pytest.skip("no second Python 3.11+ is installed")


def payload(event, session="s-1", **extra):
    body = {"hook_event_name": event, "session_id": session, "cwd": extra.pop("cwd", "/nonexistent"),
            "source": "startup", "turn_id": "t-1", "prompt": "hello", **extra}
    return json.dumps(body)


@pytest.fixture
def place(tmp_path, isolated_home, trusted_dir):
    """(env, data_root, bin_dir, workspace): a data root, a PATH of one private directory (outside the
    temp directories, which the location rules refuse) plus the system's, and a project."""
    data_root = tmp_path / "data"
    bin_dir = trusted_dir / "bin"
    bin_dir.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HOME": str(isolated_home), "PATH": f"{bin_dir}:/usr/bin:/bin", "INTENT_LOOP_DATA_DIR": str(data_root),
           "LANG": "C.UTF-8", **roots_env()}
    return env, data_root, bin_dir, workspace


def run(argv, env, stdin="", cwd=None, prefix=()):
    return subprocess.run([*prefix, *map(str, argv)], input=stdin, env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=60)


def hook(env, entry="session-start", event="SessionStart", prefix=(), **fields):
    done = run([SOURCE_LAUNCHER, entry], env, payload(event, **fields), prefix=prefix)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def cached(data_root):
    """The interpreter the launchers recorded (runtime/python-record)."""
    return read_record(str(data_root))["py"]


def hiding(*paths):
    """argv prefix: a private mount namespace with each path covered (a directory by an empty
    tmpfs, a file by /dev/null, which is not executable)."""
    steps = [f"mount -t tmpfs none '{p}'" if Path(p).is_dir() else f"mount --bind /dev/null '{p}'" for p in paths]
    return ["unshare", "-m", "sh", "-c", " && ".join(steps + ['exec "$@"']), "hide"]


def system_pythons():
    return [p for p in Path("/usr/bin").glob("python3.*") if re.fullmatch(r"python3\.\d+", p.name)]


# -- the table and the launcher agree ----------------------------------------------------------
def test_the_source_launchers_entries_are_the_tables():
    text = SOURCE_LAUNCHER.read_text()
    entries = dict(re.findall(r"^  ([a-z-]+)\) module=([\w.]+) function=", text, re.M))
    assert entries == {b.entry: b.module for b in BINARIES}
    for binary in BINARIES:
        assert re.search(rf"^  {binary.entry}\) module={re.escape(binary.module)} function={binary.function} "
                         rf"is_hook={'1' if binary.is_hook else ''} ;;", text, re.M), binary
    assert os.access(SOURCE_LAUNCHER, os.X_OK)  # .mcp.json starts it by its path


@pytest.mark.parametrize("script", [SOURCE_LAUNCHER, ROOT / "lib" / "intent_loop" / "launch" / "find_python.sh",
                                    ROOT / "lib" / "intent_loop" / "launch" / "choose_python.sh",
                                    ROOT / "lib" / "intent_loop" / "launch" / "data_root.sh"],
                         ids=lambda p: p.name)
def test_the_launcher_scripts_are_posix_sh(script):
    assert run(["/bin/sh", "-n", script], {}).returncode == 0
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    done = run(["shellcheck", "--shell=sh", "-x", script], {"PATH": os.environ["PATH"]})
    assert done.returncode == 0, done.stdout


# -- finding and caching -----------------------------------------------------------------------
def test_a_pyenv_style_shim_on_path_caches_the_real_interpreter(place):
    env, data_root, bin_dir, _ws = place
    real = another_python()
    shim = bin_dir / "python3"  # what pyenv puts on PATH: a script that execs the chosen version
    shim.write_text(f'#!/bin/sh\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    assert hook(env) == {"continue": True}
    assert cached(data_root) == str(real) and cached(data_root) != str(shim)
    # the next run takes the cache and does not search: a shim that now fails changes nothing
    shim.write_text("#!/bin/sh\nexit 3\n")
    assert hook(env, session="s-2") == {"continue": True} and cached(data_root) == str(real)


def test_a_stable_name_is_cached_as_found_when_it_is_the_interpreter_itself(place):
    env, data_root, bin_dir, _ws = place
    real = another_python()
    (bin_dir / "python3").symlink_to(real)  # Homebrew's /opt/homebrew/bin/python3.12 is such a link
    hook(env)
    assert cached(data_root) == str(bin_dir / "python3")


def test_an_older_python_first_on_path_is_skipped(place):
    env, data_root, bin_dir, _ws = place
    old = interpreter("3.10") or interpreter("3.9")
    if old is None:
        pytest.skip("no Python older than 3.11 is installed")
    real = another_python()
    (bin_dir / "python3").symlink_to(old)
    (bin_dir / f"python{real.name.removeprefix('python')}").symlink_to(real)
    hook(env)
    assert os.path.samefile(cached(data_root), real)


def test_a_deleted_cached_interpreter_is_replaced_by_the_next_one_found(place):
    env, data_root, bin_dir, workspace = place
    real = another_python()
    gone = bin_dir / "gone" / "python3"
    gone.parent.mkdir()
    gone.symlink_to(real)
    (data_root / "runtime").mkdir(parents=True)
    (data_root / "runtime" / "python").write_text(f"{gone}\n")
    (bin_dir / "python3").symlink_to(real)
    hook(env)
    assert cached(data_root) == str(gone)  # valid: used as it is
    gone.unlink()
    answer = hook(env, "user-prompt", "UserPromptSubmit", cwd=str(workspace),
                  prompt="intent: goal Keep recording after an upgrade")
    assert said(answer["systemMessage"], "recorded", "goal") == 1, answer
    assert cached(data_root) == str(bin_dir / "python3")


def test_the_command_line_creates_no_data_root_to_cache_the_interpreter(place):
    env, data_root, bin_dir, workspace = place
    (bin_dir / "python3").symlink_to(another_python())
    done = run([SOURCE_LAUNCHER, "cli", "status"], env, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert not data_root.exists()


def test_intent_loop_python_is_used_as_given_and_named_when_it_is_wrong(place):
    env, data_root, _bin, workspace = place
    real = another_python()
    done = run([SOURCE_LAUNCHER, "cli", "status"], {**env, "INTENT_LOOP_PYTHON": str(real)}, cwd=workspace)
    assert done.returncode == 0, done.stderr
    wrong = {**env, "INTENT_LOOP_PYTHON": "/nonexistent/python3"}
    answer = hook(wrong)
    assert answer == {"continue": True, "systemMessage": "intent-loop is not recording: INTENT_LOOP_PYTHON="
                      "/nonexistent/python3 is not an executable; set it to a Python 3.11+"}
    done = run([SOURCE_LAUNCHER, "cli", "status"], wrong, cwd=workspace)
    assert done.returncode == 1 and "PYTHON_NOT_FOUND" in done.stderr and "Traceback" not in done.stderr


def test_nothing_is_written_into_the_source_tree(place, tmp_path):
    """Codex trusts a plugin's hooks by its files' bytes: bytecode goes under the data root."""
    env, data_root, bin_dir, workspace = place
    (bin_dir / "python3").symlink_to(another_python())
    tree = tmp_path / "plugin"
    shutil.copytree(ROOT / "lib", tree / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "hooks", tree / "hooks", ignore=shutil.ignore_patterns("__pycache__"))
    before = sorted(p.relative_to(tree) for p in tree.rglob("*"))
    launcher = tree / "hooks" / "intent-loop"
    for entry, event in (("session-start", "SessionStart"), ("user-prompt", "UserPromptSubmit"), ("stop", "Stop")):
        done = run([launcher, entry], env, payload(event, cwd=str(workspace), prompt="intent: goal Nothing in tree"))
        assert done.returncode == 0 and done.stdout.startswith('{"continue":true'), done
    assert run([launcher, "cli", "show"], env, cwd=workspace).returncode == 0
    assert sorted(p.relative_to(tree) for p in tree.rglob("*")) == before
    assert list((data_root / "pycache").rglob("*.pyc"))


# -- no Python at all --------------------------------------------------------------------------
@needs_namespace
def test_no_python_a_hook_says_so_once_a_session_and_the_command_line_says_why(place):
    env, data_root, _bin, workspace = place
    hide = hiding(*system_pythons())
    first = hook(env, prefix=hide)
    assert first == {"continue": True, "systemMessage": NO_PYTHON}
    for entry, event in (("user-prompt", "UserPromptSubmit"), ("stop", "Stop")):
        assert hook(env, entry, event, prefix=hide) == {"continue": True}  # once a session
    assert hook(env, "user-prompt", "UserPromptSubmit", session="s-2", prefix=hide)["systemMessage"] == NO_PYTHON
    done = run([SOURCE_LAUNCHER, "cli", "status"], env, cwd=workspace, prefix=hide)
    assert done.returncode == 1 and done.stderr.strip() == f"intent-loop: PYTHON_NOT_FOUND: {NO_PYTHON[30:]}"
    assert read_record(str(data_root)) is None


@needs_namespace
@requires_dist
def test_a_binary_whose_builders_interpreter_is_gone_runs_with_another_or_says_why(place):
    env, data_root, bin_dir, workspace = place
    builder = Path(os.path.realpath(sys.executable))  # build.py bakes the venv's real interpreter in
    covered = builder.parents[1] if builder.is_relative_to(PYENV) else builder
    other = another_python()
    hide = hiding(covered, *[p for p in system_pythons() if os.path.realpath(p) != os.path.realpath(other)])
    (bin_dir / "python3").symlink_to(other)
    done = run([DIST / "intent-loop-user-prompt"], env, payload("UserPromptSubmit", cwd=str(workspace),
               prompt="intent: goal Run after brew upgrade"), prefix=hide)
    assert said(json.loads(done.stdout)["systemMessage"], "recorded", "goal") == 1, done
    assert cached(data_root) == str(bin_dir / "python3")
    verify = run([DIST / "intent-loop", "verify", "--json"], env, cwd=workspace, prefix=hide)
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"] is True, verify.stderr  # the stdlib JSON engine
    (bin_dir / "python3").unlink()
    (data_root / "runtime" / "python-record").unlink()
    hide_all = hiding(covered, *system_pythons())
    done = run([DIST / "intent-loop-stop"], env, payload("Stop", session="s-9"), prefix=hide_all)
    assert done.returncode == 0 and json.loads(done.stdout) == {"continue": True, "systemMessage": NO_PYTHON}
    done = run([DIST / "intent-loop", "status"], env, cwd=workspace, prefix=hide_all)
    assert done.returncode == 1 and "PYTHON_NOT_FOUND" in done.stderr

"""Issue 33, item 1, after the security review: an interpreter runs only from under a trusted Python root
(docs/install.md, "Which Python runs intent-loop"), whatever the cwd of the run; the launchers' tools come
from a fixed PATH; a linked runtime/ is never sourced.

The agent may write every workspace it was ever run in, not only the current one. Each attack is done as
the agent would: project A's venv links its python3 to a program in A, and a hook of project B, the MCP
server started from the plugin's root, or the command line run from / has that venv on PATH; an older
build's cache names a --copies venv in A whose pyvenv.cfg the agent edited; tools planted in a venv on
PATH or in the cwd (an empty PATH entry); a runtime/ that is a link. Every planted program writes a
marker file when run: the marker never appears. The workspaces lie outside the temp directories, so the
trusted roots alone keep them out.
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.dist import requires_dist
from helpers.python_roots import PYENV_ROOT, TRUSTED_BASE
from intent_loop.cli import python_checks
from intent_loop.launch.python_place import RECORD, choose, read_record

ROOT = Path(__file__).resolve().parents[2]
SOURCE_LAUNCHER = ROOT / "hooks" / "intent-loop"
DIST = ROOT / "dist"
BINARY_MARK = b'py="${INTENT_LOOP_PYTHON:-'
TOOLS = ("ls", "id", "readlink", "sed", "awk", "mkdir", "mv", "rm", "head", "cat", "tr", "pwd", "printf")


def real_python():
    return Path(os.path.realpath(sys.executable))


def pyenv_python(minor):
    found = sorted((Path(PYENV_ROOT) / "versions").glob(f"{minor}.*/bin/python{minor}"))
    return found[0] if found else None


def planted(path, marker, *, python=True):
    """A program the agent wrote: it leaves a marker when run (then acts as a Python, or as nothing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tail = f'exec "{real_python()}" "$@"\n' if python else "exit 0\n"
    path.write_text(f'#!/bin/sh\necho "{path.name} ran: $0 $*" >>"{marker}"\n{tail}')
    path.chmod(0o755)
    return path


def payload(session="s-1", event="SessionStart"):
    return json.dumps({"hook_event_name": event, "session_id": session, "cwd": "/nonexistent", "source": "startup",
                       "turn_id": "t-1", "prompt": "hello"})


def run(argv, env, *, cwd, stdin=""):
    return subprocess.run([str(a) for a in argv], input=stdin, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def hook(argv, env, *, cwd, session="s-1"):
    done = run(argv, env, cwd=cwd, stdin=payload(session))
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["continue"] is True
    return answer


def recorded(data_root):
    found = read_record(str(data_root))
    return found["py"] if found else None


def binary_without_its_interpreter(name, directory):
    """A copy of a built binary whose baked interpreter is gone (another machine, a brew upgrade)."""
    data = (DIST / name).read_bytes()
    start = data.index(BINARY_MARK) + len(BINARY_MARK)
    copy = directory / name
    copy.write_bytes(data[:start] + b"/nonexistent/pyenv/versions/3.11/bin/python" + data[data.index(b"}", start):])
    copy.chmod(0o755)
    return copy


@pytest.fixture
def projects(tmp_path, isolated_home, trusted_dir):
    """(env, data_root, project_a, project_b, marker). Both projects lie outside the temp directories, in a
    directory that is not a trusted root (INTENT_LOOP_PYTHON_ROOTS is unset); pyenv is the machine's."""
    a, b = trusted_dir / "project-a", trusted_dir / "project-b"
    for project in (a, b):
        (project / ".git").mkdir(parents=True)
    marker = tmp_path / "marker"
    evil = planted(a / "evil" / "python3", marker)
    venv = a / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"home = {real_python().parent}\n")
    (venv / "bin" / "python3").symlink_to(evil)
    (venv / "bin" / "python").symlink_to("python3")
    data_root = tmp_path / "data"
    env = {"HOME": str(isolated_home), "LANG": "C.UTF-8", "PYENV_ROOT": PYENV_ROOT,
           "INTENT_LOOP_DATA_DIR": str(data_root), "PATH": f"{venv / 'bin'}:/usr/bin:/bin"}
    return env, data_root, a, b, marker


def launchers(tmp_path, *, hook_entry="session-start"):
    yield "source", (SOURCE_LAUNCHER, hook_entry)
    if (DIST / f"intent-loop-{hook_entry}").exists():
        copies = tmp_path / "bin"
        copies.mkdir(exist_ok=True)
        yield "binary", (binary_without_its_interpreter(f"intent-loop-{hook_entry}", copies),)


# -- finding 1: another project's places ------------------------------------------------------------
def test_another_projects_venv_on_path_is_never_run_by_a_hook_of_this_project(projects, tmp_path):
    env, data_root, a, b, marker = projects
    for kind, launcher in launchers(tmp_path):
        (data_root / "runtime" / RECORD).unlink(missing_ok=True)
        hook(launcher, env, cwd=b)
        hook(launcher, env, cwd=b, session="s-2")  # the record's use
        assert not marker.exists(), (kind, marker.read_text())
        assert recorded(data_root) is not None and not recorded(data_root).startswith(str(a)), kind


def test_the_mcp_server_from_the_plugin_root_and_the_command_line_from_slash_never_run_it(projects, tmp_path):
    env, data_root, a, b, marker = projects
    data_root.mkdir()
    (data_root / "runtime").mkdir()
    starts = [((SOURCE_LAUNCHER, "mcp"), ROOT), ((SOURCE_LAUNCHER, "cli", "status"), "/")]
    if (DIST / "intent-loop-mcp").exists():
        copy = binary_without_its_interpreter("intent-loop-mcp", tmp_path)
        starts.append(((copy,), ROOT))
    for argv, cwd in starts:
        (data_root / "runtime" / RECORD).unlink(missing_ok=True)
        run(argv, env, cwd=cwd, stdin="")  # the server reads end of input and stops
        assert not marker.exists(), (argv, marker.read_text())
        assert recorded(data_root) is None or not recorded(data_root).startswith(str(a)), argv
        hook((SOURCE_LAUNCHER, "stop"), env, cwd=b)  # every hook of every project then uses the record
        assert not marker.exists(), (argv, marker.read_text())


def test_an_older_builds_cache_naming_a_copies_venv_of_another_project_is_dropped_unrun(projects, tmp_path):
    env, data_root, a, b, marker = projects
    copies = a / ".venv-copies"
    planted(copies / "bin" / "python3", marker)
    planted(a / "evil2" / "python3", marker)
    (copies / "pyvenv.cfg").write_text(f"home = {a / 'evil2'}\n")  # the agent edited it
    env["PATH"] = "/usr/bin:/bin"
    for kind, launcher in launchers(tmp_path):
        (data_root / "runtime").mkdir(parents=True, exist_ok=True)
        (data_root / "runtime" / RECORD).unlink(missing_ok=True)
        (data_root / "runtime" / "python").write_text(f"{copies / 'bin' / 'python3'}\n")
        hook(launcher, env, cwd=b)
        assert not marker.exists(), (kind, marker.read_text())
        assert not (data_root / "runtime" / "python").exists(), kind
        assert recorded(data_root) is not None and not recorded(data_root).startswith(str(a)), kind


def test_doctor_install_and_build_refuse_another_projects_interpreter_unrun(projects, monkeypatch):
    env, _data_root, a, b, marker = projects
    monkeypatch.chdir(b)
    for name in (a / ".venv" / "bin" / "python3", a / "evil" / "python3"):
        assert choose(str(name), cwd=str(b), env=env)[0] is None  # install's hooks.json, build.py's baked one
        assert choose(str(name), cwd=None, env=env)[0] is None
        assert python_checks.probe(str(name), env=env)[0] is None  # doctor
    assert not marker.exists()


def test_a_record_made_under_a_root_the_user_named_is_not_used_once_that_root_is_gone(projects, tmp_path):
    """The record is re-checked at every use against this run's trusted roots (builtins only)."""
    env, data_root, _a, b, marker = projects
    tools = TRUSTED_BASE / f"tools-{os.getpid()}-{time.monotonic_ns()}"
    try:
        (tools / "bin").mkdir(parents=True)
        (tools / "bin" / "python3").symlink_to(real_python())
        named = dict(env, PATH=f"{tools / 'bin'}:/usr/bin:/bin", INTENT_LOOP_PYTHON_ROOTS=str(tools))
        hook((SOURCE_LAUNCHER, "session-start"), named, cwd=b)
        assert recorded(data_root) == str(tools / "bin" / "python3")
        (tools / "bin" / "python3").unlink()
        planted(tools / "bin" / "python3", marker)  # whoever could write there, once it is no root of the user's
        hook((SOURCE_LAUNCHER, "session-start"), dict(named, INTENT_LOOP_PYTHON_ROOTS=""), cwd=b, session="s-2")
        assert not marker.exists()
        assert recorded(data_root) != str(tools / "bin" / "python3")
    finally:
        subprocess.run(["rm", "-rf", str(tools)], check=False)


# -- what must still be found ------------------------------------------------------------------------
def test_the_machines_pyenv_and_usr_bin_are_found(tmp_path, isolated_home):
    other = pyenv_python("3.12") or pyenv_python("3.13")
    if other is None or not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("needs a pyenv Python 3.12+ and /usr/bin/python3")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HOME": str(isolated_home), "LANG": "C.UTF-8", "PYENV_ROOT": PYENV_ROOT,
           "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "PATH": f"{other.parent}:/usr/bin:/bin"}
    hook((SOURCE_LAUNCHER, "session-start"), env, cwd=workspace)
    assert recorded(tmp_path / "data").startswith(str(Path(PYENV_ROOT) / "versions") + "/")
    assert choose(str(other), cwd=str(workspace), env=env)[1] is None
    del env["PYENV_ROOT"]  # a pyenv that is not the home folder's, and not named: refused, /usr/bin's found
    env["INTENT_LOOP_DATA_DIR"] = str(tmp_path / "data2")
    hook((SOURCE_LAUNCHER, "session-start"), env, cwd=workspace)
    assert recorded(tmp_path / "data2").startswith("/usr/bin/python3")
    assert choose("/usr/bin/python3", cwd=str(workspace), env={})[1] is None


def test_a_directory_the_user_names_in_intent_loop_python_roots_is_trusted(trusted_dir, tmp_path):
    link = trusted_dir / "bin" / "python3"
    link.parent.mkdir()
    link.symlink_to(real_python())
    env = {"HOME": str(tmp_path / "h"), "PYENV_ROOT": PYENV_ROOT}
    assert choose(str(link), cwd=str(tmp_path), env=env)[0] is None
    named = dict(env, INTENT_LOOP_PYTHON_ROOTS=f"/nonexistent:{trusted_dir}")
    assert choose(str(link), cwd=str(tmp_path), env=named)[0]
    # a root that holds the home folder is not one, and a trusted root inside the cwd is still refused
    assert choose(str(link), cwd=str(tmp_path), env=dict(named, HOME=str(trusted_dir / "h")))[0] is None
    assert choose(str(link), cwd=str(trusted_dir), env=named)[0] is None


# -- finding 2: the launchers' tools come from a fixed PATH -------------------------------------------
@pytest.mark.parametrize("where", ["venv-on-path", "empty-path-entry"])
def test_tools_planted_on_path_never_run_while_choosing(where, tmp_path, isolated_home, trusted_dir):
    workspace = trusted_dir / "ws"
    (workspace / ".git").mkdir(parents=True)
    marker = tmp_path / "marker"
    tool_dir = workspace / ".venv" / "bin" if where == "venv-on-path" else workspace
    for tool in TOOLS:
        planted(tool_dir / tool, marker, python=False)
    planted(tool_dir / "python3", marker)  # and a relative INTENT_LOOP_PYTHON is never looked up on PATH
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    data_root = tmp_path / "data"
    clean = {"HOME": str(isolated_home), "LANG": "C.UTF-8", "PYENV_ROOT": PYENV_ROOT, "CODEX_HOME": str(codex_home),
             "INTENT_LOOP_DATA_DIR": str(data_root), "PATH": "/usr/bin:/bin"}
    env = dict(clean, PATH=f"{tool_dir}:/usr/bin:/bin" if where == "venv-on-path" else ":/usr/bin:/bin")
    argvs = [(SOURCE_LAUNCHER, "session-start")]
    if (DIST / "intent-loop-session-start").exists():
        argvs += [(DIST / "intent-loop-session-start",),
                  (binary_without_its_interpreter("intent-loop-session-start", tmp_path),)]
    for argv in argvs:
        hook(argv, clean, cwd=workspace)  # a record
        config = codex_home / "config.toml"
        config.write_text("# newer than the record: the next run chooses again\n")
        later = time.time() + 5
        os.utime(config, (later, later))
        hook(argv, env, cwd=workspace, session="s-2")
        run([*argv[:1], *(["cli"] if argv[0] == SOURCE_LAUNCHER else []), "--version"], env, cwd=workspace)
        # no interpreter at all: the paths that say why (sed, head, cat, mkdir, tr) run too
        hook(argv, dict(env, INTENT_LOOP_PYTHON="python3"), cwd=workspace, session="s-3")
        assert not marker.exists(), (argv, marker.read_text())


# -- finding 9: a linked runtime/ or data root is never sourced ---------------------------------------
@pytest.mark.parametrize("linked", ["runtime", "data-root"])
def test_a_linked_runtime_or_data_root_is_not_sourced(linked, tmp_path, isolated_home):
    marker = tmp_path / "marker"
    elsewhere = tmp_path / "elsewhere"
    planted_runtime = elsewhere / "runtime" if linked == "data-root" else elsewhere
    planted_runtime.mkdir(parents=True)
    (planted_runtime / RECORD).write_text(f"echo sourced >>'{marker}'\npy=/usr/bin/python3\npy_id=x\n"
                                          "py_checked=/usr/bin/python3\npy_named=/usr/bin/python3\n")
    data_root = tmp_path / "data"
    if linked == "data-root":
        data_root.symlink_to(elsewhere)
    else:
        data_root.mkdir()
        (data_root / "runtime").symlink_to(elsewhere)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HOME": str(isolated_home), "LANG": "C.UTF-8", "PYENV_ROOT": PYENV_ROOT,
           "INTENT_LOOP_DATA_DIR": str(data_root), "PATH": "/usr/bin:/bin"}
    argvs = [(SOURCE_LAUNCHER, "session-start")]
    if (DIST / "intent-loop-session-start").exists():
        argvs.append((DIST / "intent-loop-session-start",))
    for argv in argvs:
        run(argv, env, cwd=workspace, stdin=payload())
        assert not marker.exists(), argv


@requires_dist
def test_the_built_launcher_keeps_the_same_rules():
    text = (DIST / "intent-loop-session-start").read_bytes()[:200_000]
    assert b"find_trusted_roots" in text and b"tool_path=/usr/bin:/bin" in text and b"runtime_is_ours" in text

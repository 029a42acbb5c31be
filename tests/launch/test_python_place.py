"""Issue 33, items 1 and 7: the hook launchers never run an interpreter the agent can write, and a
Python that answers nothing (or is too old) is said once, fail-open.

Each attack is done as the agent would: a planted `python3` in a workspace virtualenv first on PATH
(a real `python -m venv`, with links and with --copies), a poisoned cache of an older build, a
planted `.python-version` read by a version shim, a link hop into /tmp. Every planted program
writes a marker file when run: the marker never appears. Both the committed source launcher and the
built binaries are run.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.dist import requires_dist
from helpers.python_roots import roots_env
from intent_loop.launch.python_place import RECORD, agent_places, choose, is_agent_place, read_record

ROOT = Path(__file__).resolve().parents[2]
SOURCE_LAUNCHER = ROOT / "hooks" / "intent-loop"
DIST = ROOT / "dist"
PYENV = Path(os.environ.get("PYENV_ROOT", "/root/.pyenv")) / "versions"
ONLY_IN_WORKSPACE = ("intent-loop is not recording: the only Python 3.11+ found lies outside the trusted Python "
                     "roots or where the agent can write; set INTENT_LOOP_PYTHON or INTENT_LOOP_PYTHON_ROOTS")


def real_python():
    """A Python 3.11+ outside every temp directory: the one running the tests, resolved."""
    return Path(os.path.realpath(sys.executable))


def python_of(minor):
    found = sorted(PYENV.glob(f"{minor}.*/bin/python{minor}"))
    return found[0] if found else None


def payload(session="s-1", **fields):
    return json.dumps({"hook_event_name": "SessionStart", "session_id": session, "cwd": "/nonexistent",
                       "source": "startup", **fields})


def run(argv, env, *, cwd, stdin=""):
    return subprocess.run([str(a) for a in argv], input=stdin, env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def hook(env, *, cwd, launcher=(SOURCE_LAUNCHER, "session-start"), session="s-1"):
    done = run(launcher, env, cwd=cwd, stdin=payload(session))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def planted(path, marker):
    """A stand-in `python` the agent wrote: it leaves a marker when run, then acts as a Python."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'#!/bin/sh\necho "$0 $*" >>"{marker}"\nexec "{real_python()}" "$@"\n')
    path.chmod(0o755)
    return path


def recorded(data_root):
    found = read_record(str(data_root))
    return found["py"] if found else None


@pytest.fixture
def attack(tmp_path, isolated_home):
    """(env, data_root, workspace, marker): the workspace is the hooks' cwd and holds a .git."""
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    data_root = tmp_path / "data"
    env = {"HOME": str(isolated_home), "INTENT_LOOP_DATA_DIR": str(data_root), "LANG": "C.UTF-8",
           "PATH": f"{workspace / '.venv' / 'bin'}:/usr/bin:/bin", **roots_env()}
    return env, data_root, workspace, tmp_path / "marker"


def make_venv(workspace, *, copies):
    venv = workspace / ".venv"
    argv = [real_python(), "-m", "venv", "--without-pip", *(["--copies"] if copies else []), venv]
    subprocess.run([str(a) for a in argv], check=True, timeout=120)
    return venv


# -- a workspace virtualenv first on PATH ------------------------------------------------------------
def test_a_workspace_venv_first_on_path_is_replaced_by_its_link_target_and_its_file_never_runs(attack):
    env, data_root, workspace, marker = attack
    venv = make_venv(workspace, copies=False)
    hook(env, cwd=workspace)
    assert recorded(data_root) == str(real_python())  # the link target, never the venv's name
    for name in ("python3", "python"):  # the agent replaces the venv's interpreter afterwards
        (venv / "bin" / name).unlink()
        planted(venv / "bin" / name, marker)
    for session in ("s-2", "s-3"):
        assert hook(env, cwd=workspace, session=session)["continue"] is True
    assert not marker.exists()


def test_a_planted_file_in_a_workspace_venv_is_never_run_even_on_the_first_search(attack):
    env, data_root, workspace, marker = attack
    venv = make_venv(workspace, copies=False)
    (venv / "bin" / "python3").unlink()
    planted(venv / "bin" / "python3", marker)
    hook(env, cwd=workspace)
    assert not marker.exists()
    assert not recorded(data_root).startswith(str(workspace))


def test_a_copies_venv_in_the_workspace_is_skipped_unrun(attack):
    env, data_root, workspace, marker = attack
    venv = make_venv(workspace, copies=True)
    for name in ("python3", "python"):
        (venv / "bin" / name).unlink()
        planted(venv / "bin" / name, marker)
    (venv / "pyvenv.cfg").write_text(f"home = {venv / 'bin'}\n")  # the agent edits pyvenv.cfg too
    hook(env, cwd=workspace)
    assert not marker.exists()
    assert recorded(data_root) is not None and not recorded(data_root).startswith(str(workspace))


def test_a_copies_venv_outside_the_agents_places_runs_its_home_interpreter(trusted_dir, tmp_path):
    venv = trusted_dir / "venv"
    subprocess.run([str(real_python()), "-m", "venv", "--without-pip", "--copies", str(venv)], check=True,
                   timeout=120)
    env = {"HOME": str(tmp_path / "h"), **roots_env()}
    chosen, why = choose(str(venv / "bin" / "python3"), cwd=str(tmp_path), env=env)
    assert why is None and os.path.samefile(chosen, real_python())


# -- an older build's cache, a version shim, a hop into /tmp -------------------------------------
def test_a_poisoned_cache_of_an_older_build_is_discarded_without_being_run(attack):
    env, data_root, workspace, marker = attack
    evil = planted(workspace / "tools" / "python3", marker)
    (data_root / "runtime").mkdir(parents=True)
    (data_root / "runtime" / "python").write_text(f"{evil}\n")  # what an older build read and ran
    env["PATH"] = "/usr/bin:/bin"
    assert hook(env, cwd=workspace)["continue"] is True
    assert not marker.exists()
    assert not (data_root / "runtime" / "python").exists()
    assert recorded(data_root) is not None and not recorded(data_root).startswith(str(workspace))


@requires_dist
def test_a_binary_whose_interpreter_lies_in_the_workspace_neither_runs_it_nor_a_poisoned_cache(attack, trusted_dir):
    """Run from the builder's interpreter's own directory, that interpreter lies in the workspace (and
    so does all of pyenv's tree when it is a git clone): the binary refuses it, refuses an older
    build's cache naming a planted program, and searches."""
    env, data_root, _workspace, marker = attack
    builder_dir = real_python().parent
    other = python_of("3.12") or python_of("3.13")
    if other is None:
        pytest.skip("no second Python 3.11+ is installed")
    bin_dir = trusted_dir / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(other)
    evil = planted(data_root.parent / "evil" / "python3", marker)
    (data_root / "runtime").mkdir(parents=True)
    (data_root / "runtime" / "python").write_text(f"{evil}\n")
    venv = data_root.parent / "ws" / ".venv"  # and a planted venv first on PATH, its pyvenv.cfg edited
    planted(venv / "bin" / "python3", marker)
    (venv / "pyvenv.cfg").write_text(f"home = {venv / 'bin'}\n")
    env["PATH"] = f"{venv / 'bin'}:{bin_dir}:/usr/bin:/bin"
    assert hook(env, cwd=builder_dir, launcher=(DIST / "intent-loop-session-start",))["continue"] is True
    assert not marker.exists()
    assert not (data_root / "runtime" / "python").exists()
    chosen = recorded(data_root)
    assert chosen is not None and not is_agent_place(chosen, agent_places(cwd=str(builder_dir), env=env))


def test_a_planted_python_version_is_not_read_by_the_version_probe(attack, trusted_dir):
    """A pyenv-style shim picks the version named by the cwd's .python-version: the probe runs from /."""
    env, data_root, workspace, marker = attack
    evil = planted(workspace / "evil-python", marker)
    (workspace / ".python-version").write_text(f"{evil}\n")
    shim = trusted_dir / "shims" / "python3"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nif [ -f .python-version ]; then read -r v <.python-version; exec "$v" "$@"; fi\n'
                    f'exec "{real_python()}" "$@"\n')
    shim.chmod(0o755)
    env["PATH"] = f"{shim.parent}:/usr/bin:/bin"
    hook(env, cwd=workspace)
    assert not marker.exists()
    assert recorded(data_root) == str(real_python())


def test_a_link_hop_through_a_temp_directory_is_refused_unrun(attack, trusted_dir, tmp_path):
    env, data_root, workspace, marker = attack
    evil = planted(tmp_path / "hop" / "python3", marker)
    bin_dir = trusted_dir / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(evil)  # a name outside, its target in /tmp
    env["PATH"] = f"{bin_dir}:/usr/bin:/bin"
    hook(env, cwd=workspace)
    assert not marker.exists()
    assert recorded(data_root) is not None and not recorded(data_root).startswith(str(tmp_path))


def test_a_world_writable_directory_is_refused(trusted_dir, tmp_path):
    shared = trusted_dir / "shared"
    shared.mkdir()
    (shared / "python3").symlink_to(real_python())
    env = {"HOME": str(tmp_path / "h"), **roots_env()}
    assert choose(str(shared / "python3"), cwd=str(tmp_path), env=env)[1] is None
    shared.chmod(0o777)
    assert choose(str(shared / "python3"), cwd=str(tmp_path), env=env)[1] is not None


def test_a_writable_root_of_codex_is_an_agent_place(trusted_dir, tmp_path, attack):
    env, data_root, workspace, marker = attack
    bin_dir = trusted_dir / "bin"
    planted(bin_dir / "python3", marker)
    codex_home = tmp_path / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(f'[sandbox_workspace_write]\nwritable_roots = ["{trusted_dir}"]\n')
    env.update(PATH=f"{bin_dir}:/usr/bin:/bin", CODEX_HOME=str(codex_home))
    hook(env, cwd=workspace)
    assert not marker.exists()
    assert choose(str(bin_dir / "python3"), cwd=str(workspace), env=env)[1] is not None


# -- the record is re-checked at every use ------------------------------------------------------------
def test_a_recorded_interpreter_inside_this_sessions_workspace_is_not_used(attack, trusted_dir):
    """Recorded from one project, the interpreter lies inside the next session's workspace: that
    session searches again (the rules are re-checked with the cwd of every run)."""
    env, data_root, workspace, marker = attack
    project = trusted_dir / "proj"
    (project / ".git").mkdir(parents=True)
    inside = project / "bin" / "python3"
    inside.parent.mkdir()
    inside.symlink_to(real_python())  # the interpreter itself, so it is recorded by this name
    env["PATH"] = f"{inside.parent}:/usr/bin:/bin"
    hook(env, cwd=workspace)
    assert recorded(data_root) == str(inside)  # outside that session's places
    inside.unlink()
    planted(inside, marker)  # an agent working in that project replaces it
    hook(env, cwd=project / "bin", session="s-2")
    assert not marker.exists()
    assert recorded(data_root) != str(inside)


def test_a_changed_interpreter_drops_the_record_after_one_stat(attack):
    env, data_root, workspace, _marker = attack
    env["PATH"] = "/usr/bin:/bin"
    hook(env, cwd=workspace)
    record = data_root / "runtime" / RECORD
    text = record.read_text()
    fields = read_record(str(data_root))["py_id"]
    record.write_text(text.replace(fields, "1 2 3 4 3.11.0"))  # as if another Python had been installed there
    assert hook(env, cwd=workspace, session="s-2")["continue"] is True
    assert not record.exists()  # the next run chooses again
    hook(env, cwd=workspace, session="s-3")
    assert read_record(str(data_root))["py_id"] == fields


@pytest.mark.skipif(os.geteuid() != 0, reason="hiding /usr/bin's pythons needs root and unshare -m")
def test_when_the_only_python_is_inside_the_workspace_the_hook_says_so_once(attack):
    env, data_root, workspace, marker = attack
    venv = make_venv(workspace, copies=True)
    hidden = [p for p in Path("/usr/bin").glob("python3*") if p.is_file() and not p.is_symlink()]
    hide = ["unshare", "-m", "sh", "-c",
            " && ".join([f"mount --bind /dev/null '{p}'" for p in hidden] + ['exec "$@"']), "hide"]
    env["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    first = run([*hide, SOURCE_LAUNCHER, "session-start"], env, cwd=workspace, stdin=payload("s-1"))
    assert json.loads(first.stdout) == {"continue": True, "systemMessage": ONLY_IN_WORKSPACE}, first.stderr
    again = run([*hide, SOURCE_LAUNCHER, "stop"], env, cwd=workspace, stdin=payload("s-1"))
    assert json.loads(again.stdout) == {"continue": True}
    assert not marker.exists()


# -- item 7: a Python that answers nothing, or is too old ---------------------------------------------
@pytest.mark.parametrize("launcher", [(SOURCE_LAUNCHER, "user-prompt"), (DIST / "intent-loop-user-prompt",)],
                         ids=["source", "binary"])
def test_a_stand_in_that_answers_nothing_is_said_once_fail_open(attack, trusted_dir, launcher):
    if launcher[0] == DIST / "intent-loop-user-prompt" and not (DIST / "intent-loop-user-prompt").exists():
        pytest.skip("dist/ is not built")
    env, _data_root, workspace, _marker = attack
    silent = trusted_dir / "python3"
    silent.write_text("#!/bin/sh\ncat >/dev/null\nexit 1\n")
    silent.chmod(0o755)
    env["INTENT_LOOP_PYTHON"] = str(silent)
    first = hook(env, cwd=workspace, launcher=launcher)
    assert first["continue"] is True and first["systemMessage"].startswith("intent-loop is not recording: ")
    assert hook(env, cwd=workspace, launcher=launcher, session="s-2") == {"continue": True}  # same Codex process


def test_an_older_python_stops_before_any_import_and_is_said(attack, tmp_path):
    """Pythons before 3.8 ignore -X pycache_prefix: one that imported our modules wrote bytecode into
    the plugin's tree (which untrusts its hooks). It now stops at the version check."""
    old = python_of("3.7") or python_of("3.6") or python_of("3.9")
    if old is None:
        pytest.skip("no Python older than 3.11 is installed")
    env, _data_root, workspace, _marker = attack
    tree = tmp_path / "plugin"
    shutil.copytree(ROOT / "lib", tree / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "hooks", tree / "hooks", ignore=shutil.ignore_patterns("__pycache__"))
    before = sorted(tree.rglob("*"))
    env["INTENT_LOOP_PYTHON"] = str(old)
    answer = hook(env, cwd=workspace, launcher=(tree / "hooks" / "intent-loop", "stop"))
    assert answer["continue"] is True and "older than 3.11" in answer["systemMessage"]
    assert sorted(tree.rglob("*")) == before
    done = run([tree / "hooks" / "intent-loop", "cli", "status"], env, cwd=workspace)
    assert done.returncode == 3 and "PYTHON_NOT_FOUND" in done.stderr and "Traceback" not in done.stderr


def test_a_non_utf8_intent_loop_python_gives_valid_json(attack):
    env, _data_root, workspace, _marker = attack
    env["INTENT_LOOP_PYTHON"] = "/nonexistent/py\udcff\udcfe"  # bytes 0xff 0xfe in the environment
    done = subprocess.run([str(SOURCE_LAUNCHER), "session-start"], input=payload().encode(), env=env, cwd=workspace,
                          capture_output=True, timeout=60)
    answer = json.loads(done.stdout.decode("utf-8"))
    assert answer["continue"] is True and answer["systemMessage"].startswith("intent-loop is not recording: ")


def test_the_workspace_rule_holds_without_a_home_and_yields_only_for_one_holding_it(attack, trusted_dir):
    """A place holding the home folder (a workspace of ~ or /) is outside the threat model and not used;
    an unset HOME does not switch the workspace rule off."""
    env, data_root, workspace, marker = attack
    inside = planted(workspace / "bin" / "python3", marker)
    env["PATH"] = f"{inside.parent}:/usr/bin:/bin"
    del env["HOME"]
    hook(env, cwd=workspace)
    assert not marker.exists() and recorded(data_root) != str(inside)
    assert choose(str(inside), cwd=str(workspace), env=roots_env())[1] is not None
    home = trusted_dir / "home"  # ~/.local/bin is a trusted Python root (uv's and pipx's links)
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "python3").symlink_to(real_python())
    env = {"HOME": str(home), **roots_env()}
    assert choose(str(home / ".local" / "bin" / "python3"), cwd=str(home), env=env)[1] is None

"""doctor's `interpreter` and `hook_python` checks (issue 33 item 7, issue 35 item 1): a healthy
source-run install passes without advice to build; the interpreter the hooks recorded is probed for
real, never when it lies where the agent can write; a stand-in that answers nothing fails."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.dist import requires_dist
from helpers.python_roots import roots_env
from intent_loop.launch import hook_runs
from intent_loop.launch.python_place import RECORD

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"


def plugin_copy(codex_home):
    """The repository plugin as `codex plugin add` copies it: lib/ and hooks/ of the committed tree."""
    copy = codex_home / "plugins" / "cache" / "intent-loop" / "intent-loop" / "0.1.0"
    for part in ("lib", "hooks"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def doctor(launcher, env, cwd):
    done = subprocess.run([str(a) for a in launcher] + ["doctor", "--json"], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=180)
    assert done.stdout, done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def write_record(data_root, python, identity="1 2 3 4 3.11.0"):
    (data_root / "runtime").mkdir(parents=True, exist_ok=True)
    (data_root / "runtime" / RECORD).write_text(f"py='{python}'\npy_id='{identity}'\npy_checked='{python}'\n"
                                                f"py_named='{python}'\n")


def env_for(home, codex_home):
    """doctor itself runs with INTENT_LOOP_PYTHON, so that its launcher leaves the record as planted."""
    return {"HOME": str(home), "CODEX_HOME": str(codex_home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "INTENT_LOOP_PYTHON": os.path.realpath(sys.executable), **roots_env()}


def test_a_source_run_install_passes_interpreter_without_advice_to_build(tmp_path, isolated_home):
    codex_home = tmp_path / "codex"
    copy = plugin_copy(codex_home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    checks = doctor([copy / "hooks" / "intent-loop", "cli"], env_for(isolated_home, codex_home), workspace)
    assert checks["interpreter"]["ok"], checks["interpreter"]
    assert "source-run" in checks["interpreter"]["detail"]
    assert checks["interpreter"]["next_action"] is None


def test_hook_python_probes_the_recorded_interpreter_for_real(tmp_path, isolated_home, trusted_dir):
    codex_home = tmp_path / "codex"
    copy = plugin_copy(codex_home)
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = env_for(isolated_home, codex_home)
    launcher = [copy / "hooks" / "intent-loop", "cli"]
    real = os.path.realpath(sys.executable)
    write_record(data_root, real)
    check = doctor(launcher, env, workspace)["hook_python"]
    assert check["ok"] and real in check["detail"], check
    silent = trusted_dir / "python3"  # a stand-in installed over the recorded path: it answers nothing
    silent.write_text("#!/bin/sh\nexit 1\n")
    silent.chmod(0o755)
    write_record(data_root, silent)
    check = doctor(launcher, env, workspace)["hook_python"]
    assert not check["ok"] and check["detail"].startswith("PYTHON_NOT_FOUND"), check


def test_hook_python_never_runs_a_recorded_interpreter_the_agent_can_write(tmp_path, isolated_home):
    codex_home = tmp_path / "codex"
    copy = plugin_copy(codex_home)
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"
    workspace = tmp_path / "ws"
    marker = tmp_path / "marker"
    evil = workspace / ".venv" / "bin" / "python3"
    evil.parent.mkdir(parents=True)
    evil.write_text(f'#!/bin/sh\ntouch "{marker}"\nexec "{os.path.realpath(sys.executable)}" "$@"\n')
    evil.chmod(0o755)
    write_record(data_root, evil)
    checks = doctor([copy / "hooks" / "intent-loop", "cli"], env_for(isolated_home, codex_home), workspace)
    check = checks["hook_python"]
    assert not check["ok"] and check["detail"].startswith("PYTHON_NOT_FOUND"), check
    assert not marker.exists()


@requires_dist
def test_the_binaries_interpreter_check_probes_the_interpreter_they_name(tmp_path, isolated_home):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"),
           **roots_env()}
    check = doctor([DIST / "intent-loop"], env, workspace)["interpreter"]
    assert check["ok"], check
    assert "(Python 3." in check["detail"] or "not used" in check["detail"], check


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="hiding /usr/bin's pythons needs root and unshare -m")
def test_doctor_says_when_the_only_python_is_inside_the_workspace(tmp_path, isolated_home):
    codex_home = tmp_path / "codex"
    copy = plugin_copy(codex_home)
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"
    workspace = tmp_path / "ws"
    venv = workspace / ".venv"
    subprocess.run([os.path.realpath(sys.executable), "-m", "venv", "--without-pip", "--copies", str(venv)],
                   check=True, timeout=120)
    (data_root / "runtime").mkdir(parents=True)
    (data_root / "runtime" / hook_runs.NO_PYTHON_TOLD).write_text("s-1\n")  # what the hook said
    hidden = [p for p in Path("/usr/bin").glob("python3*") if p.is_file() and not p.is_symlink()]
    hide = ["unshare", "-m", "sh", "-c",
            " && ".join([f"mount --bind /dev/null '{p}'" for p in hidden] + ['exec "$@"']), "hide"]
    env = dict(env_for(isolated_home, codex_home), PATH=f"{venv / 'bin'}:/usr/bin:/bin")
    check = doctor([*hide, copy / "hooks" / "intent-loop", "cli"], env, workspace)["hook_python"]
    assert not check["ok"] and check["detail"].startswith("PYTHON_NOT_FOUND"), check
    assert "outside the trusted Python roots" in check["detail"]

"""One data-root rule (issue 36, item 1): base/data_root.py decides for Python, and launch/data_root.sh,
which both sh launchers use before any Python runs, must name the very same directory for every
combination of the variables, or nothing: the interpreter's record, the bytecode and the extracted
runtime would otherwise live under one root and the data under another."""
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.data_root_table import VALUES, environments, found, make_homes
from helpers.dist import requires_dist
from intent_loop.base.data_root import find_data_root

ROOT = Path(__file__).resolve().parents[2]
DATA_ROOT_SH = ROOT / "lib" / "intent_loop" / "launch" / "data_root.sh"
SOURCE_LAUNCHER = ROOT / "hooks" / "intent-loop"
SHELLS = [shell for shell in ("/bin/sh", "/bin/dash", "/bin/bash") if os.access(shell, os.X_OK)]


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    return make_homes(tmp_path_factory.mktemp("homes"))


def _shell_roots(shell, cases):
    """The root data_root.sh names for each (env, executable), in one shell process."""
    lines = [f". {shlex.quote(str(DATA_ROOT_SH))}"]
    for env, executable in cases:
        lines.append("unset " + " ".join(VALUES))
        lines += [f"{name}={shlex.quote(env[name])}" for name in VALUES if name in env]
        lines.append(f'find_data_root {shlex.quote(executable)}; printf "%s\\n" "$root"')
    done = subprocess.run([shell, "-s"], input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    roots = done.stdout.split("\n")[:-1]
    assert len(roots) == len(cases)
    return roots


@pytest.mark.parametrize("shell", SHELLS)
def test_the_shell_names_exactly_the_root_python_names_for_every_combination(homes, shell):
    cases = list(environments(homes))
    disagreements = []
    for (env, executable), shell_root in zip(cases, _shell_roots(shell, cases), strict=True):
        expected = found(find_data_root, env, executable)
        expected = "" if expected in (None, "ValueError") else expected[0]
        if shell_root != expected:
            disagreements.append((env, executable, shell_root, expected))
    assert not disagreements, disagreements[:5]
    assert len(cases) > 10_000


def test_with_no_absolute_path_of_its_own_the_shell_leaves_the_plugin_cache_and_home_steps_to_python(homes):
    """A binary started by a relative path with no absolute cwd cannot say whether it lies in a plugin
    cache: the shell names no root from that step on (Python, which knows its cwd, decides), and still
    settles the three variables above it."""
    cases = [(env, "") for env, _ in environments(homes, executables=[""])]
    settled = 0
    for (env, _), shell_root in zip(cases, _shell_roots("/bin/sh", cases), strict=True):
        expected = found(find_data_root, env, "/opt/bin/intent-loop-stop")
        if expected not in (None, "ValueError") and expected[1] not in ("plugin cache path", "~/.codex"):
            assert shell_root == expected[0], env
            settled += 1
        else:
            assert shell_root == "", env
    assert settled > 0


def _load_build():
    sys.path.insert(0, str(ROOT))
    try:
        import build
    finally:
        sys.path.remove(str(ROOT))
    return build


def test_each_binary_launcher_carries_the_rule_file_itself():
    """build.py embeds launch/data_root.sh whole (less its comments) in the launcher of every binary."""
    build = _load_build()
    from intent_loop.launch.binaries import BINARIES
    for binary in BINARIES:
        prefix = build.launcher_prefix(binary, build_id="ab" * 32, python="/usr/bin/python3")
        assert build.sh_code("data_root.sh") in prefix, binary.name
        assert "@DATA_ROOT@" not in prefix


NESTED = ("codex-home", "plugins", "data", "market", "nested")


def _nested_env(tmp_path, isolated_home):
    """A PLUGIN_DATA with one component more than Codex's layout is no store of ours (docs/storage.md):
    the data goes to ~/.codex/plugin-data/intent-loop/v1, and so must the launchers' files; before
    one rule, the sh launcher inferred a Codex home from it and Python kept data under it."""
    plugin_data = tmp_path.joinpath(*NESTED)
    plugin_data.mkdir(parents=True)
    env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "PLUGIN_DATA": str(plugin_data),
           "INTENT_LOOP_PYTHON": sys.executable, "LANG": "C.UTF-8"}
    python_root = isolated_home / ".codex" / "plugin-data" / "intent-loop" / "v1"
    assert find_data_root(env, "/opt/bin/x") == (str(python_root), "~/.codex")
    return env, python_root, tmp_path / "codex-home" / "plugin-data"


def _session_start(argv, env, workspace):
    payload = f'{{"hook_event_name":"SessionStart","session_id":"s-1","cwd":"{workspace}","source":"startup"}}'
    done = subprocess.run(argv, input=payload, env=env, capture_output=True, text=True, timeout=60, cwd=workspace)
    assert done.returncode == 0 and done.stdout.startswith("{"), done.stderr
    return done


def test_with_a_nested_plugin_data_source_launcher_bytecode_goes_where_python_keeps_data(tmp_path, isolated_home):
    env, python_root, inferred = _nested_env(tmp_path, isolated_home)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for _ in range(2):  # the first run makes the data root, the second writes its bytecode there
        _session_start([str(SOURCE_LAUNCHER), "session-start"], env, workspace)
    assert any((python_root / "pycache").iterdir())
    assert not inferred.exists() and not (tmp_path.joinpath(*NESTED) / "intent-loop").exists()


@requires_dist
def test_with_a_nested_plugin_data_a_binarys_runtime_goes_where_python_keeps_the_data(tmp_path, isolated_home):
    env, python_root, inferred = _nested_env(tmp_path, isolated_home)
    env.pop("INTENT_LOOP_PYTHON")
    binary = tmp_path / "bin" / "intent-loop-session-start"
    binary.parent.mkdir()
    shutil.copy2(ROOT / "dist" / "intent-loop-session-start", binary)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for _ in range(2):  # the first run extracts the runtime, the second takes the shell's fast path to it
        _session_start([str(binary)], env, workspace)
    assert any((python_root / "runtime").iterdir())
    assert not inferred.exists() and not (tmp_path.joinpath(*NESTED) / "intent-loop").exists()

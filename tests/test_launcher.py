"""The /bin/sh launcher finds the common data roots itself, duplicating _data_root.py for speed.

Whenever the shell settles on a root, it must be the directory find_data_root names; when it
cannot tell (PLUGIN_DATA, a plugin-cache path, relative values), it must leave the choice to the
Python launcher instead of guessing.
"""
import importlib.util
import itertools
import os
import subprocess
from pathlib import Path

import pytest

from intent_loop.storage.data_root import find_data_root

ROOT = Path(__file__).resolve().parents[1]


def _launcher_root_block():
    spec = importlib.util.spec_from_file_location("build_for_test", ROOT / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    template = build.LAUNCHER_SH
    start = template.index("  R=\n")
    end = template.index("  fi\n", start) + len("  fi\n")
    return template[start:end].replace("{{", "{").replace("}}", "}")


BLOCK = _launcher_root_block()


def _shell_root(env, executable):
    done = subprocess.run(["/bin/sh", "-c", BLOCK + 'printf %s "$R"', executable], env=env,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    base = tmp_path_factory.mktemp("homes")
    with_codex, without = base / "with", base / "without"
    (with_codex / ".codex").mkdir(parents=True)
    without.mkdir()
    return str(with_codex), str(without)


VALUES = {
    "INTENT_LOOP_DATA_DIR": [None, "", "/data/root", "/data//root/", "relative/root"],
    "CODEX_HOME": [None, "", "/codex/home", "codex-relative"],
    "PLUGIN_DATA": [None, "", "/h/.codex/plugins/data/intent-loop-market", "/elsewhere/data"],
    "HOME": ["with", "without", None, ""],
}
EXECUTABLES = ["/opt/bin/intent-loop-stop", "/h/.codex/plugins/cache/market/intent-loop/1.0/dist/intent-loop-stop"]


def test_the_shell_picks_the_data_root_find_data_root_picks_or_none(homes):
    checked = 0
    for combo in itertools.product(*VALUES.values(), EXECUTABLES):
        *values, executable = combo
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for name, value in zip(VALUES, values):
            if name == "HOME" and value in ("with", "without"):
                value = homes[0] if value == "with" else homes[1]
            if value is not None:
                env[name] = value
        shell = _shell_root(env, executable)
        if not shell:
            continue  # the Python launcher decides: always allowed
        try:
            found = find_data_root(env, executable)
        except ValueError:
            found = None
        assert found is not None, (env, executable, shell)
        assert os.path.normpath(shell) == found[0], (env, executable, shell, found)
        checked += 1
    assert checked > 100  # the shell does settle the common cases

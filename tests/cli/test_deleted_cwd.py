"""The command line run from a folder that was deleted answers CWD_GONE and what to do, never a
traceback (issue 33 item 9), through the source launcher and the binary."""
import json
import subprocess
from pathlib import Path

import pytest

from helpers.dist import is_built

ROOT = Path(__file__).resolve().parents[2]
LAUNCHERS = {"source": [ROOT / "hooks" / "intent-loop", "cli"], "binary": [ROOT / "dist" / "intent-loop"]}


def run_from_deleted_folder(tmp_path, launcher, *args, env):
    gone = tmp_path / "gone"
    gone.mkdir()
    command = 'cd "$1" && rmdir "$1" && shift && exec "$@"'
    return subprocess.run(["sh", "-c", command, "sh", str(gone), *map(str, launcher), *args], env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("kind", sorted(LAUNCHERS))
def test_a_command_from_a_deleted_folder_answers_cwd_gone(kind, tmp_path, isolated_home):
    if kind == "binary" and not is_built():
        pytest.skip("dist/ is not built: run `python3 build.py` first")
    env = {"HOME": str(isolated_home), "PATH": "/usr/bin:/bin", "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    done = run_from_deleted_folder(tmp_path, LAUNCHERS[kind], "status", env=env)
    assert done.returncode == 1 and "intent-loop: CWD_GONE: " in done.stderr, done
    assert "Traceback" not in done.stderr
    done = run_from_deleted_folder(tmp_path, LAUNCHERS[kind], "status", "--json", env=env)
    assert done.returncode == 1 and json.loads(done.stdout)["error"]["code"] == "CWD_GONE", done

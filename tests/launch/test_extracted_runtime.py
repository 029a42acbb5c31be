"""Old extracted runtimes (<data root>/runtime/<build id>/ of builds no longer installed): found by
build id, kept while in use or just extracted, removed without following links, reported by
doctor and removed by install --apply."""
import json
import os
import subprocess
import time

import pytest

from helpers.dist import requires_dist
from intent_loop.launch import extracted_runtime
from intent_loop.launch.binaries import BINARIES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "dist")
OLD, CURRENT, FRESH = "0" * 64, "1" * 64, "2" * 64
HOUR = 3600


def _runtime(data_root, build_id, *, age):
    """A runtime laid out as shiv extracts it, last changed `age` seconds ago."""
    site = data_root / "runtime" / build_id / f"intent-loop-stop_{build_id}" / "site-packages"
    site.mkdir(parents=True)
    (site / "module.py").write_bytes(b"x" * 1000)
    (data_root / "runtime" / build_id / f".intent-loop-stop_{build_id}_lock").touch()
    then = time.time() - age
    os.utime(data_root / "runtime" / build_id, (then, then))
    return data_root / "runtime" / build_id


def test_old_runtimes_are_those_no_binary_in_use_names_and_nothing_touched_lately(tmp_path):
    _runtime(tmp_path, OLD, age=2 * HOUR)
    _runtime(tmp_path, CURRENT, age=2 * HOUR)
    _runtime(tmp_path, FRESH, age=60)  # maybe a first run extracting right now
    (tmp_path / "runtime" / "not-a-build-id").mkdir()
    (tmp_path / "runtime" / ("3" * 64)).symlink_to(tmp_path / "runtime" / OLD)
    found = extracted_runtime.old_runtimes(str(tmp_path), {CURRENT})
    assert [(r["build_id"], r["path"]) for r in found] == [(OLD, str(tmp_path / "runtime" / OLD))]
    assert found[0]["bytes"] == 1000
    assert extracted_runtime.old_runtimes(str(tmp_path / "no-such-root"), set()) == []


def test_removing_a_runtime_never_follows_a_link_out_of_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("mine")
    runtime = _runtime(tmp_path / "data", OLD, age=2 * HOUR)
    (runtime / "link-to-outside").symlink_to(outside)
    (runtime / f"intent-loop-stop_{OLD}" / "file-link").symlink_to(outside / "keep.txt")
    extracted_runtime.remove_runtime(str(runtime))
    assert os.listdir(tmp_path / "data" / "runtime") == []
    assert (outside / "keep.txt").read_text() == "mine"


def test_a_removal_interrupted_half_way_is_finished_by_the_next_sweep(tmp_path):
    leftover = tmp_path / "runtime" / f".removing-{OLD}-1234"
    (leftover / "site-packages").mkdir(parents=True)
    found = extracted_runtime.old_runtimes(str(tmp_path), {OLD})  # even while that build is in use again
    assert [r["path"] for r in found] == [str(leftover)]
    extracted_runtime.remove_runtime(found[0]["path"])
    assert os.listdir(tmp_path / "runtime") == []


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a directory to another user")
def test_a_runtime_owned_by_someone_else_is_left_alone(tmp_path):
    runtime = _runtime(tmp_path, OLD, age=2 * HOUR)
    os.chown(runtime, 12345, -1)
    assert extracted_runtime.old_runtimes(str(tmp_path), set()) == []


def test_describe_names_count_size_and_short_ids():
    runtimes = [{"build_id": OLD, "path": "/x", "bytes": 4_200_000}, {"build_id": CURRENT, "path": "/y", "bytes": 0}]
    assert extracted_runtime.describe(runtimes) == f"2 old runtimes (4.2 MB): {OLD[:12]}, {CURRENT[:12]}"


@requires_dist
def test_every_built_binary_names_one_build_id():
    ids = {extracted_runtime.build_id_of(os.path.join(DIST, b.name)) for b in BINARIES}
    assert len(ids) == 1 and extracted_runtime.is_build_id(ids.pop())
    assert extracted_runtime.build_id_of(os.path.join(ROOT, "README.md")) is None


def _run(*args, home):
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    env["HOME"] = str(home)
    return subprocess.run([os.path.join(DIST, "intent-loop"), *args], capture_output=True, text=True, env=env,
                          timeout=60)


@requires_dist
def test_doctor_reports_and_install_apply_removes_old_runtimes_only(tmp_path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    data_root = home / ".codex" / "plugin-data" / "intent-loop" / "v1"
    current = extracted_runtime.build_id_of(os.path.join(DIST, "intent-loop"))
    assert _run("install", "--apply", home=home).returncode == 0  # extracts this build's runtime too
    _runtime(data_root, OLD, age=2 * HOUR)
    doctor = json.loads(_run("doctor", "--json", home=home).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "old_runtimes"]
    assert not check["ok"] and OLD[:12] in check["detail"] and "install --apply" in check["next_action"]
    dry = json.loads(_run("install", "--json", home=home).stdout)
    assert [r["build_id"] for r in dry["old_runtimes"]["found"]] == [OLD] and dry["old_runtimes"]["removed"] == []
    assert (data_root / "runtime" / OLD).is_dir()
    proc = _run("install", "--apply", home=home)
    assert proc.returncode == 0 and f"removed 1 old runtime (0.0 MB): {OLD[:12]}" in proc.stdout, proc.stderr
    kept = sorted(n for n in os.listdir(data_root / "runtime") if n != "python-record")  # the chosen interpreter
    assert kept == [current]
    doctor = json.loads(_run("doctor", "--json", home=home).stdout)
    assert [c["ok"] for c in doctor["checks"] if c["name"] == "old_runtimes"] == [True]

"""The bytecode under the data root (launch/bytecode_cache.py): damaged .pyc files found, and the
trees of pycache/ whose sources are gone (plugin versions no longer installed) reported by doctor
and swept by install --apply, as old runtimes are; links never followed (issue 33, items 6 and 9)."""
import importlib.util
import json
import marshal
import os
import subprocess
import sys

from helpers.dist import DIST, requires_dist
from intent_loop.launch import bytecode_cache

TAG = sys.implementation.cache_tag


def _mirror(data_root, source_dir, name="module"):
    """A .pyc under <data root>/pycache for `source_dir`/`name`.py, as sys.pycache_prefix lays it out."""
    directory = data_root / "pycache" / str(source_dir).lstrip("/")
    directory.mkdir(parents=True, exist_ok=True)
    pyc = directory / f"{name}.{TAG}.pyc"
    pyc.write_bytes(importlib.util.MAGIC_NUMBER + b"\0" * 12 + marshal.dumps(compile("VALUE = 1", name, "exec")))
    return pyc


def test_stale_trees_are_those_whose_source_directory_is_gone(tmp_path):
    data_root = tmp_path / "data"
    kept = tmp_path / "plugins" / "intent-loop" / "0.2.0" / "lib"
    kept.mkdir(parents=True)
    _mirror(data_root, kept)
    old = _mirror(data_root, tmp_path / "plugins" / "intent-loop" / "0.1.0" / "lib")
    found = bytecode_cache.stale_trees(str(data_root))
    gone = str(tmp_path / "plugins" / "intent-loop" / "0.1.0")
    assert [(tree["source"], tree["build_id"]) for tree in found] == [(gone, None)]
    assert found[0]["path"] == str(data_root / "pycache") + gone and found[0]["bytes"] == old.stat().st_size


def test_a_linked_or_missing_pycache_has_no_stale_trees(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    _mirror(elsewhere, tmp_path / "gone")
    data_root = tmp_path / "data"
    data_root.mkdir()
    assert bytecode_cache.stale_trees(str(data_root)) == []
    (data_root / "pycache").symlink_to(elsewhere / "pycache")
    assert bytecode_cache.stale_trees(str(data_root)) == [] and bytecode_cache.damaged(str(data_root)) == []


def test_damaged_names_cut_files_of_this_python_only(tmp_path):
    data_root = tmp_path / "data"
    source = tmp_path / "src"
    source.mkdir()
    (source / "good.py").write_text("VALUE = 1\n")
    good = _mirror(data_root, source, "good")
    cut = _mirror(data_root, source, "cut")
    cut.write_bytes(cut.read_bytes()[:16])
    other = _mirror(data_root, source, "other")
    other.write_bytes(b"\x00\x00\r\n" + b"\0" * 12)  # another Python's magic: its own to judge
    runtime_pyc = data_root / "runtime" / ("a" * 64) / "__pycache__" / f"m.{TAG}.pyc"
    runtime_pyc.parent.mkdir(parents=True)
    runtime_pyc.write_bytes(importlib.util.MAGIC_NUMBER + b"\0" * 12 + b"\xff")
    assert sorted(bytecode_cache.damaged(str(data_root))) == sorted([str(cut), str(runtime_pyc)])
    assert bytecode_cache.remove([str(cut), str(runtime_pyc)]) == {}
    assert bytecode_cache.damaged(str(data_root)) == [] and good.exists() and other.exists()


def _cli(*args, home):
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    env["HOME"] = str(home)
    return subprocess.run([str(DIST / "intent-loop"), *args], capture_output=True, text=True, env=env, timeout=60)


@requires_dist
def test_doctor_reports_and_install_apply_sweeps_the_bytecode_of_gone_plugin_versions(tmp_path):
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    data_root = home / ".codex" / "plugin-data" / "intent-loop" / "v1"
    assert _cli("install", "--apply", home=home).returncode == 0
    installed = home / ".codex" / "plugins" / "cache" / "m" / "intent-loop" / "0.2.0" / "lib"
    installed.mkdir(parents=True)
    kept = _mirror(data_root, installed)
    gone = home / ".codex" / "plugins" / "cache" / "m" / "intent-loop" / "0.1.0"
    _mirror(data_root, gone / "lib")
    doctor = json.loads(_cli("doctor", "--json", home=home).stdout)
    [check] = [c for c in doctor["checks"] if c["name"] == "old_runtimes"]
    assert not check["ok"] and str(gone) in check["detail"] and "install --apply" in check["next_action"]
    dry = json.loads(_cli("install", "--json", home=home).stdout)
    assert [t["source"] for t in dry["old_runtimes"]["found"]] == [str(gone)]
    done = _cli("install", "--apply", "--json", home=home)
    assert json.loads(done.stdout)["old_runtimes"]["removed"] == [str(data_root / "pycache") + str(gone)]
    assert not (data_root / "pycache" / str(gone).lstrip("/")).exists() and kept.exists()
    doctor = json.loads(_cli("doctor", "--json", home=home).stdout)
    assert [c["ok"] for c in doctor["checks"] if c["name"] == "old_runtimes"] == [True]

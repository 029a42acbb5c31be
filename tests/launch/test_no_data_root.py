"""Before the data root exists, the command line and the MCP server import straight from the binary's
own zip and write nothing anywhere (issue 33, item 2): a runtime planted where the agent may write
(`$TMPDIR/intent-loop-runtime-<uid>/`, the old private runtime, right owner, mode 0700, marker and
all) is never imported, and neither the temporary directory nor the home gains a file."""
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from helpers.dist import DIST, requires_dist
from helpers.mcp_client import INITIALIZE, McpServer
from intent_loop.launch import extracted_runtime
from intent_loop.launch.fast_path import MARKER

pytestmark = requires_dist
PLANTED = "import os\nopen(os.environ['PLANTED_MARKER'], 'w').close()\n"


def _plant_runtime(tmpdir, name, build_id):
    """The binary's own runtime as shiv would extract it into the old private runtime directory,
    complete (marker written), with intent_loop/__init__.py edited to leave a file behind."""
    base = tmpdir / f"intent-loop-runtime-{os.getuid()}"
    site = base / build_id / f"{name}_{build_id}" / "site-packages"
    site.mkdir(parents=True)
    with zipfile.ZipFile(DIST / name) as archive:
        for info in archive.infolist():
            if info.filename.startswith("site-packages/") and not info.is_dir():
                target = site / info.filename[len("site-packages/"):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(archive.read(info))
    init = site / "intent_loop" / "__init__.py"
    init.write_text(PLANTED + init.read_text())
    (site / MARKER).touch()
    for directory in (base, base / build_id):
        os.chmod(directory, 0o700)
    return site


@pytest.fixture
def planted(tmp_path):
    """(env without any data root, the marker path the planted code would create, the home)."""
    home, tmpdir = tmp_path / "home", tmp_path / "tmpdir"
    home.mkdir()
    tmpdir.mkdir()
    build_id = extracted_runtime.build_id_of(str(DIST / "intent-loop"))
    for name in ("intent-loop", "intent-loop-mcp"):
        _plant_runtime(tmpdir, name, build_id)
    marker = tmp_path / "planted-code-ran"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TMPDIR": str(tmpdir),
           "PLANTED_MARKER": str(marker)}
    return env, marker, home


def _tree(path):
    return sorted(os.path.relpath(os.path.join(d, n), path) for d, dirs, files in os.walk(path)
                  for n in dirs + files)


def test_install_dry_run_and_a_command_never_import_a_runtime_planted_in_tmpdir(planted, tmp_path):
    env, marker, home = planted
    before = _tree(env["TMPDIR"])
    ws = tmp_path / "ws"
    ws.mkdir()
    for argv in (["install", "--json"], ["status", "--json"], ["doctor", "--json"]):
        done = subprocess.run([str(DIST / "intent-loop"), *argv], cwd=ws, env=env, capture_output=True,
                              text=True, timeout=60)
        assert "Traceback" not in done.stderr, done.stderr
        assert not marker.exists(), argv
    install = subprocess.run([str(DIST / "intent-loop"), "install", "--json"], cwd=ws, env=env,
                             capture_output=True, text=True, timeout=60)
    assert install.returncode == 0 and json.loads(install.stdout)["applied"] is False, install.stderr
    assert _tree(env["TMPDIR"]) == before  # nothing extracted, no bytecode written there
    assert _tree(home) == [] and _tree(ws) == []  # nor anywhere else: no data root, no ~/.codex


def test_the_mcp_server_never_imports_a_runtime_planted_in_tmpdir(planted, tmp_path):
    env, marker, home = planted
    before = _tree(env["TMPDIR"])
    with McpServer(env, cwd=str(tmp_path)) as server:
        answer = server.request("initialize", INITIALIZE)
        assert answer["result"]["serverInfo"]["name"]
        server.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = server.request("tools/list")["result"]["tools"]
        assert any(tool["name"] == "intent_get_snapshot" for tool in tools)
    assert not marker.exists()
    assert _tree(env["TMPDIR"]) == before and _tree(home) == []


def test_the_built_zip_imports_behind_its_sh_prefix_with_the_standard_library_json():
    """zipimport finds the archive behind the /bin/sh prefix; orjson, a C extension, cannot load
    from a zip, so the JSON engine falls back to the standard library (base/json_engine.py)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1] + '/site-packages'); "
            "from intent_loop.base import json_engine; import intent_loop.cli.main; "
            "print(json_engine.NAME, type(json_engine.__loader__).__name__)")
    done = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", code, str(DIST / "intent-loop")],
                          capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["stdlib", "zipimporter"], done.stderr


def test_with_an_empty_codex_home_the_data_root_is_still_not_created(planted, tmp_path):
    env, marker, home = planted
    (home / ".codex").mkdir()
    done = subprocess.run([str(DIST / "intent-loop"), "install"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert not marker.exists() and _tree(home) == [".codex"]


def test_a_runtime_directory_linked_into_the_data_root_is_moved_aside_never_imported(planted, tmp_path):
    """<data root>/runtime/<build id> as a link to a complete runtime elsewhere (issue 33, item 9):
    neither the shell's fast path nor the long way imports through it; the long way moves it aside
    and extracts afresh."""
    env, marker, _home = planted
    build_id = extracted_runtime.build_id_of(str(DIST / "intent-loop"))
    data = tmp_path / "data"
    (data / "runtime").mkdir(parents=True)
    (data / "runtime" / build_id).symlink_to(Path(env["TMPDIR"]) / f"intent-loop-runtime-{os.getuid()}" / build_id)
    env = dict(env, INTENT_LOOP_DATA_DIR=str(data))
    done = subprocess.run([str(DIST / "intent-loop"), "status", "--json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert not marker.exists()
    assert (data / "runtime" / build_id).is_dir() and not (data / "runtime" / build_id).is_symlink()
    assert [n for n in os.listdir(data / "runtime") if n.startswith(build_id + ".broken-")]

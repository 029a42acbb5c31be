"""Schema migration (v1 is the identity), credential-free request ids, reproducible binaries,
and every CLI command through the built dist/intent-loop."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.counting import CountingReducer
from helpers.dist import requires_dist
from helpers.receipt_words import said
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.launch.binaries import BINARIES
from intent_loop.storage import ledger, migration, transaction

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"


def _append(project, value, request_id):
    return transaction.mutate(project, CountingReducer(), request_id=request_id, operation="append",
                         params={"v": value},
                         plan=lambda state: [ledger.Draft("value_added", None, "user", {"value": value})],
                         deadline=time.monotonic() + 10)


def test_migrating_a_v1_ledger_is_the_identity(project):
    for n in range(5):
        _append(project, f"v{n}", f"r-{n}")
    before = Path(project.ledger).read_bytes()
    report = migration.migrate(project, CountingReducer(), deadline=time.monotonic() + 10)
    assert report["action"] == "identity" and report["events"] == 5
    assert Path(project.ledger).read_bytes() == before


def test_migration_refuses_a_damaged_source_chain(project):
    _append(project, "a", "r-a")
    _append(project, "b", "r-b")
    data = bytearray(Path(project.ledger).read_bytes())
    data[data.index(b'"value":"a"') + 9] = ord("z")
    Path(project.ledger).write_bytes(bytes(data))
    with pytest.raises(IntentLoopError) as info:
        migration.migrate(project, CountingReducer(), deadline=time.monotonic() + 10)
    assert info.value.code == ErrorCode.LEDGER_HASH_MISMATCH


def test_migration_to_an_unknown_schema_is_refused(project):
    with pytest.raises(IntentLoopError) as info:
        migration.migrate(project, CountingReducer(), deadline=time.monotonic() + 10, target=2)
    assert info.value.code == ErrorCode.FUTURE_SCHEMA


@pytest.mark.parametrize("request_id", ["ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "AKIAABCDEFGHIJ234567"])
def test_request_ids_holding_a_credential_are_refused(project, request_id):
    with pytest.raises(IntentLoopError) as info:
        _append(project, "x", request_id)
    assert info.value.code == ErrorCode.CREDENTIAL_IN_ID
    assert not os.path.exists(project.ledger)


def _dist_tree():
    """{path below dist/: (bytes, mode)}: the binaries and the whole plugin marketplace."""
    return {p.relative_to(DIST).as_posix(): (p.read_bytes(), p.stat().st_mode & 0o777)
            for p in sorted(DIST.rglob("*")) if p.is_file()}


@requires_dist
def test_two_builds_from_one_commit_are_byte_identical(tmp_path):
    before = _dist_tree()
    subprocess.run([sys.executable, str(ROOT / "build.py"), "build"], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    after = _dist_tree()
    assert set(before) >= {binary.name for binary in BINARIES}
    assert set(before) >= {f"marketplace/plugins/intent-loop/dist/{binary.name}" for binary in BINARIES}
    assert before == after
    # the marketplace step alone rewrites it from the binaries, to the same bytes
    subprocess.run([sys.executable, str(ROOT / "build.py"), "plugin"], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)
    assert _dist_tree() == before


def _run_dist(args, workspace, data_root, home):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "INTENT_LOOP_DATA_DIR": str(data_root)}
    return subprocess.run([str(DIST / "intent-loop"), *args], cwd=workspace, env=env, capture_output=True,
                          text=True, timeout=60)


@requires_dist
def test_every_command_through_the_binary(tmp_path):
    workspace, data_root, home = tmp_path / "ws", tmp_path / "data", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    run = lambda *args: _run_dist(args, workspace, data_root, home)  # noqa: E731
    added = run("claim", "add", "goal", "ship", "the", "parser", "--json", "--project", ".")  # starts the project
    assert added.returncode == 0, added.stderr
    assert run("claim", "add", "must-not", "action:install_local").returncode == 0
    assert run("claim", "add", "forbid", "Tools:", "web").returncode == 1  # RULE_SYNTAX
    for args in (["status", "--json"], ["show", "--json"], ["show", "--all"], ["timeline", "--json"],
                 ["verify", "--json"], ["verify", "--all-projects"], ["contract", "show", "--json"],
                 ["candidate", "list"], ["recover"], ["export"]):
        result = run(*args)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        if "--json" in args:
            json.loads(result.stdout)
    contract = workspace / ".execution-fidelity" / "contract.json"
    assert run("contract", "validate", str(contract)).returncode == 0
    assert run("bogus").returncode == 2
    assert run("doctor").returncode == 1  # no hooks installed: a check fails, with its next action


@requires_dist
@pytest.mark.parametrize("command", ["status", "show", "claim", "candidate", "timeline", "doctor", "verify",
                                     "recover", "export", "import", "delete", "private", "off", "on", "contract",
                                     "install", "uninstall", "replay", "demo"])
def test_help_through_the_binary(tmp_path, command):
    result = _run_dist([command, "--help"], tmp_path, tmp_path / "data", tmp_path)
    assert result.returncode == 0 and "usage: intent-loop" in result.stdout


def _hook(binary, payload, data_root, home, *, link=None):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "INTENT_LOOP_DATA_DIR": str(data_root)}
    return subprocess.run([str(link or DIST / binary)], input=json.dumps(payload).encode(), env=env,
                          capture_output=True, timeout=60)


def _prompt(workspace):
    return {"session_id": "s-1", "turn_id": "t-1", "cwd": str(workspace), "hook_event_name": "UserPromptSubmit",
            "prompt": "hello", "model": "m", "permission_mode": "default", "transcript_path": None}


@requires_dist
def test_a_damaged_runtime_repairs_itself_and_the_hook_still_answers(tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    first = _hook("intent-loop-user-prompt", _prompt(workspace), tmp_path / "data", home)
    assert (first.returncode, first.stdout) == (0, b'{"continue":true}')
    [site] = (tmp_path / "data" / "runtime").glob("*/intent-loop-user-prompt_*/site-packages")
    assert (site / ".intent-loop-complete").exists()
    (site / "intent_loop" / "hook" / "handlers.py").unlink()
    for cache in site.rglob("__pycache__"):
        for pyc in cache.iterdir():
            pyc.unlink()
    for _ in range(2):  # the damaged run answers fail-open; the runtime is whole again afterwards
        run = _hook("intent-loop-user-prompt", _prompt(workspace), tmp_path / "data", home)
        assert (run.returncode, run.stdout) == (0, b'{"continue":true}')
    assert (site / "intent_loop" / "hook" / "handlers.py").exists() and (site / ".intent-loop-complete").exists()


@requires_dist
def test_a_symlinked_binary_takes_the_full_launcher_and_works(tmp_path):
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    link = tmp_path / "bin" / "intent-loop-user-prompt"
    link.parent.mkdir()
    link.symlink_to(DIST / "intent-loop-user-prompt")
    payload = dict(_prompt(workspace), prompt="intent: goal ship the parser")
    run = _hook("intent-loop-user-prompt", payload, tmp_path / "data", home, link=link)
    assert run.returncode == 0
    assert said(json.loads(run.stdout)["hookSpecificOutput"]["additionalContext"], "recorded", "goal")


@requires_dist
def test_a_missing_interpreter_still_answers_continue_and_says_why(tmp_path):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_PYTHON": str(tmp_path / "nope")}
    run = subprocess.run([str(DIST / "intent-loop-stop")], input=b"{}", env=env, capture_output=True, timeout=30)
    assert run.returncode == 0
    assert json.loads(run.stdout) == {"continue": True, "systemMessage": (
        f"intent-loop is not recording: INTENT_LOOP_PYTHON={tmp_path / 'nope'} is not an executable; "
        "set it to a Python 3.11+")}

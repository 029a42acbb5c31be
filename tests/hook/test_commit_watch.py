"""A command prompt whose ledger write is slow or fails after its lines are in the file: the answer
never calls written lines "not recorded" (hook.runtime.CommitWatch, storage.transaction `watch`).

Each test runs a real hook process from lib/ (as the launcher's fast path does) with ONE storage
sync made slow or failing, so everything after it (the after-answer child's work included) runs
at normal speed."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.hook_paths import code_for
from helpers.receipt_words import published, said
from helpers.settle import settle
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading
from intent_loop.storage.paths import project_paths, session_hash

ROOT = Path(__file__).resolve().parents[2]
# Makes the first call of `module.seam` for which `match` holds sleep `delay` seconds after it ran
# (a disk that stalls; the hook's alarm interrupts the sleep as it would land right after a real
# system call returns) or raise EIO.
STALL = '''
import sys
sys.path[:0] = [{lib!r}]
import importlib as _importlib
_module = _importlib.import_module({module!r})
_real, _calls, _delay = _module.{seam}, [], {delay!r}
def _stalled(*args, **kwargs):
    result = _real(*args, **kwargs)
    if not _calls and ({match}):
        _calls.append(1)
        if _delay is None:
            raise OSError(5, "Input/output error")
        import time as _time
        _time.sleep(_delay)
    return result
_module.{seam} = _stalled
'''
PLATFORM = "intent_loop.base.platform"


def _payload(ws, turn, prompt):
    return {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "turn_id": turn, "cwd": str(ws),
            "model": "m", "permission_mode": "default", "transcript_path": None, "prompt": prompt}


def _hook(tmp_path, ws, turn, prompt, *, seam=None, delay=None, module=PLATFORM, match="True"):
    """(answer, seconds until the hook process exited) with `seam`'s first call stalled or failed."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    code = code_for("UserPromptSubmit", lib=ROOT / "lib", root=ROOT)
    if seam is not None:
        code = STALL.format(lib=str(ROOT / "lib"), module=module, seam=seam, delay=delay, match=match) + code
    started = time.monotonic()
    stdin = json.dumps(_payload(ws, turn, prompt)).encode()
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=stdin, capture_output=True, env=env,
                          timeout=60)
    seconds = time.monotonic() - started
    assert done.returncode == 0 and not done.stderr, done.stderr.decode()
    settle(str(tmp_path / "data"), str(ws))
    return json.loads(done.stdout), seconds


@pytest.fixture
def ws(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _hook(tmp_path, ws, "t-1", "intent: goal ship the parser")  # the ledger and Guard contract v1
    return ws


def _recorded(tmp_path, ws):
    paths = project_paths(str(tmp_path / "data"), str(ws))
    state = reading.verify_all(paths, REDUCER).state
    return sorted(c["claim"]["statement"] for task in state["tasks"].values() for c in task["claims"].values())


def _guard(ws):
    document = json.loads((ws / ".execution-fidelity" / "contract.json").read_bytes())
    return document["envelope"]["contract_version"], json.dumps(document["projection"])


def test_a_sync_that_outlasts_the_deadline_still_gets_its_receipt(tmp_path, ws):
    """2.6 s of sync is past the hook's 2 s deadline but inside the commit's limit: the answer is
    the whole receipt, not a failure."""
    answer, seconds = _hook(tmp_path, ws, "t-2", "intent: must keep the API", seam="sync_data", delay=2.6)
    assert said(answer["systemMessage"], "recorded", "must") == 1 and published(2) in answer["systemMessage"]
    assert "keep the API" in answer["hookSpecificOutput"]["additionalContext"]
    assert 2.6 <= seconds < 3.5 + 0.5
    assert _recorded(tmp_path, ws) == ["must: keep the API", "ship the parser"]
    assert _guard(ws)[0] == 2


def test_a_sync_past_the_commit_limit_is_told_written_and_guard_catches_up(tmp_path, ws):
    """A sync still stalled at the commit's limit: the lines are in the ledger for every reader, so the
    answer says "written but not confirmed, do not type them again" (never "NOT recorded"), and the
    after-answer child writes the contract the ledger records, so Guard enforces them this turn."""
    answer, seconds = _hook(tmp_path, ws, "t-2", "intent: must keep the API", seam="sync_data", delay=6)
    line = answer["systemMessage"]
    assert "1 command written to the ledger but not confirmed (DEADLINE_EXCEEDED): do not type them again" in line
    assert "NOT recorded" not in line and answer["hookSpecificOutput"]["additionalContext"] == line
    assert seconds < 3.5 + 1.0  # answered at the commit's limit, far inside Codex's 5 s
    assert _recorded(tmp_path, ws) == ["must: keep the API", "ship the parser"]
    version, projection = _guard(ws)
    assert version == 2 and "keep the API" in projection


def test_a_failed_sync_after_the_write_is_durability_uncertain_not_a_failure(tmp_path, ws):
    answer, _seconds = _hook(tmp_path, ws, "t-2", "intent: must keep the API", seam="sync_data", delay=None)
    assert "written to the ledger but not confirmed (DURABILITY_UNCERTAIN)" in answer["systemMessage"]
    assert _recorded(tmp_path, ws) == ["must: keep the API", "ship the parser"]
    version, projection = _guard(ws)
    assert version == 2 and "keep the API" in projection


def test_a_new_ledger_is_written_once_renamed_into_place(tmp_path):
    """The first command of a project creates the ledger the seed's way (temp file, fsync, rename,
    directory fsync): stalled before the rename nothing is recorded and the answer says so; stalled
    after it the ledger exists and the answer says written."""
    ws = tmp_path / "ws"
    ws.mkdir()
    answer, _ = _hook(tmp_path, ws, "t-1", "intent: goal ship the parser", seam="fsync_file", delay=6)
    assert "1 command NOT recorded (DEADLINE_EXCEEDED)" in answer["systemMessage"]
    paths = project_paths(str(tmp_path / "data"), str(ws))
    assert not os.path.exists(paths.ledger)
    answer, _ = _hook(tmp_path, ws, "t-2", "intent: goal ship the parser", seam="fsync_directory", delay=6)
    assert "1 command written to the ledger but not confirmed (DEADLINE_EXCEEDED)" in answer["systemMessage"]
    assert _recorded(tmp_path, ws) == ["ship the parser"]
    assert "ship the parser" in _guard(ws)[1]


def test_an_interrupted_on_still_ends_private_mode(tmp_path, ws):
    """`intent: on` removes the session's private control after its events; interrupted in between,
    the after-answer child removes it (as an exact retry would), so the session records again."""
    from intent_loop.intent import private_mode

    _hook(tmp_path, ws, "t-2", "intent: private")
    paths = project_paths(str(tmp_path / "data"), str(ws))
    assert private_mode.read_control(paths, session_hash("s-1")) is not None  # the private session's control
    answer, _ = _hook(tmp_path, ws, "t-3", "intent: on", seam="sync_data", delay=6)
    assert "written to the ledger but not confirmed (DEADLINE_EXCEEDED)" in answer["systemMessage"]
    assert private_mode.read_control(paths, session_hash("s-1")) is None
    answer, _ = _hook(tmp_path, ws, "t-4", "intent: must keep the API")
    assert said(answer["systemMessage"], "recorded", "must") == 1


@pytest.mark.parametrize("module, seam, match", [
    (PLATFORM, "write_all", "b'\"event_hash\"' in bytes(args[1])"),  # appending to the ledger
    ("intent_loop.base.fast_os", "replace", "str(args[1]).endswith('ledger.jsonl')"),  # creating it
], ids=["append", "create"])
def test_a_write_or_rename_the_disk_stalls_past_the_limit_is_noted_as_written(tmp_path, module, seam, match):
    """The alarm is held back from the write (or the rename) until the lines are noted as written: a
    call the disk stalls past the commit's limit completes (no signal cuts a write to a regular
    file short), and the alarm that lands right after it finds the lines noted. The stall here is
    4.2 s: past the 3.5 s limit, inside Codex's 5 s. The hook process does not wait for it (issue 33
    item 8): its commit's child reported the write begun, so it answers "written" at its 4 s limit."""
    ws = tmp_path / "ws"
    ws.mkdir()
    prompt, statement = "intent: goal ship the parser", "ship the parser"  # a new ledger: its first goal
    if seam == "write_all":
        _hook(tmp_path, ws, "t-1", prompt)
        prompt, statement = "intent: must keep the API", "must: keep the API"
    answer, seconds = _hook(tmp_path, ws, "t-2", prompt, module=module, seam=seam, delay=4.2, match=match)
    assert "1 command written to the ledger but not confirmed (DEADLINE_EXCEEDED)" in answer["systemMessage"]
    assert seconds < 4.2  # answered while the child's call was still stalled
    assert statement in _recorded(tmp_path, ws)
    assert statement.removeprefix("must: ") in _guard(ws)[1]


def test_a_retry_of_a_recorded_prompt_that_fails_is_not_told_to_type_again(tmp_path, ws):
    """Codex retries a prompt with the same turn and text: the retry finds its lines recorded, so a
    failure after that (here the retry's repair of private controls, stalled past the deadline)
    is answered "written", never "NOT recorded"."""
    _hook(tmp_path, ws, "t-2", "intent: must keep the API")
    answer, _ = _hook(tmp_path, ws, "t-2", "intent: must keep the API", module="intent_loop.intent.private_mode",
                      seam="repair_after_retry", delay=6)
    assert "written to the ledger but not confirmed (DEADLINE_EXCEEDED)" in answer["systemMessage"]
    assert _recorded(tmp_path, ws) == ["must: keep the API", "ship the parser"]

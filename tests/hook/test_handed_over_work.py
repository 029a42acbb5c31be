"""A command prompt answers after the one sync it needs, the ledger's (issue 27, item 3): its
transaction hands the rest (the cache save, the Guard file's two syncs, the lock's release) to the
hook's after-answer child, which inherits the project lock (storage.transaction, hand_over)."""
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
from intent_loop.base import platform
from intent_loop.guard import provider
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading
from intent_loop.storage.cache import checkpoint
from intent_loop.storage.ledger import Draft
from intent_loop.storage.paths import project_paths
from intent_loop.storage.transaction import Transaction

ROOT = Path(__file__).resolve().parents[2]
TASK = "0000000a-0000-4000-8000-000000000000"
# After the answer, in the hook process itself: what it synced, and what a reader finds then.
AFTER = '''
from intent_loop.base import platform
from intent_loop.base.fast_os import path
import json as _json
_guard = {guard!r}
_lock = {lock!r}
sys.stderr.write("after:" + _json.dumps({{"syncs": platform.SYNCS, "guard": path.exists(_guard),
                                          "locked": path.isdir(_lock)}}) + "\\n")
'''


@pytest.fixture
def project(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return project_paths(str(tmp_path / "data"), str(ws))


def _prompt(ws, turn, prompt):
    return {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "turn_id": turn, "cwd": str(ws),
            "model": "m", "permission_mode": "default", "transcript_path": None, "prompt": prompt}


def _hook(tmp_path, payload, *, slow_sync_ms=0):
    """One hook process as the launcher runs it, with its child detached; (answer, what it saw)."""
    ws = Path(payload["cwd"])
    paths = project_paths(str(tmp_path / "data"), str(ws))
    after = AFTER.format(guard=str(ws / ".execution-fidelity" / "contract.json"),
                         lock=os.path.join(paths.dir, "ledger.lock"))
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    if slow_sync_ms:
        env["INTENT_LOOP_SLOW_SYNC_MS"] = str(slow_sync_ms)
    code = code_for(payload["hook_event_name"], lib=ROOT / "lib", root=ROOT, after=after)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    seen = next(json.loads(line[6:]) for line in done.stderr.decode().splitlines() if line.startswith("after:"))
    if payload["hook_event_name"] == "Stop":  # its work is all after the answer
        settle(str(tmp_path / "data"), str(ws))
    return json.loads(done.stdout), seen, paths


def test_a_command_prompt_answers_after_the_ledgers_sync_alone(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    _hook(tmp_path, _prompt(ws, "t-1", "intent: goal ship the parser"))  # creates the ledger
    settle(str(tmp_path / "data"), str(ws))
    answer, seen, paths = _hook(tmp_path, _prompt(ws, "t-2", "intent: must keep the API\nintent: include src/"))
    assert said(answer["systemMessage"], "recorded", "must") == 1 and published(2) in answer["systemMessage"]
    # the ledger's one sync was made before the answer by the commit's child (issue 33 item 8): the
    # process Codex waits on made none
    assert seen["syncs"] == {"full": 0, "fsync": 0, "fdatasync": 0, "directory": 0}
    assert seen["guard"]  # renamed into place before the answer: Guard reads the new version at once
    settle(str(tmp_path / "data"), str(ws))
    document = json.loads((ws / ".execution-fidelity" / "contract.json").read_bytes())
    assert document["envelope"]["contract_version"] == 2
    verified = reading.verify_all(paths, REDUCER)
    cached = checkpoint.load(paths, REDUCER)
    assert cached is not None and cached.verified.count == verified.count  # the child saved the cache
    assert not os.path.exists(os.path.join(paths.dir, "ledger.lock"))  # and let the lock go


def test_the_child_holds_the_lock_until_its_syncs_are_done(tmp_path):
    """With every sync made slow, the hook process has exited while its child still syncs the Guard
    file: the lock is still held then (no writer sees the cache behind), and released after."""
    ws = tmp_path / "ws"
    ws.mkdir()
    _hook(tmp_path, _prompt(ws, "t-1", "intent: goal ship the parser"))
    settle(str(tmp_path / "data"), str(ws))
    _answer, seen, paths = _hook(tmp_path, _prompt(ws, "t-2", "intent: must keep the API"), slow_sync_ms=400)
    assert seen["syncs"] == {"full": 0, "fsync": 0, "fdatasync": 0, "directory": 0}  # all in the child
    assert seen["locked"]  # handed to the child with the lock held
    settle(str(tmp_path / "data"), str(ws))
    assert not os.path.exists(os.path.join(paths.dir, "ledger.lock"))
    assert reading.verify_all(paths, REDUCER).count == checkpoint.load(paths, REDUCER).verified.count


def _started(task):
    return Draft("task_started", task, "user", {"mode": "on", "initial_claims": []})


def test_the_handed_over_job_saves_the_cache_then_releases_the_lock(project):
    with Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        tx.append([_started(TASK)], request_id="r-1", fingerprint="f")
    jobs = []
    with Transaction(project, REDUCER, deadline=time.monotonic() + 10, hand_over=jobs.append) as tx:
        tx.append([_started(TASK.replace("a", "b", 1))], request_id="r-2", fingerprint="f")
    lock_dir = os.path.join(project.dir, "ledger.lock")
    assert len(jobs) == 1 and os.path.isdir(lock_dir)
    assert checkpoint.load(project, REDUCER).verified.count == 1  # not saved yet: that is the job's
    jobs[0](time.monotonic() + 5)
    assert not os.path.exists(lock_dir)
    assert checkpoint.load(project, REDUCER).verified.count == 2 == reading.verify_all(project, REDUCER).count


def test_a_failed_transaction_hands_nothing_over_and_lets_the_lock_go(project):
    jobs = []
    with pytest.raises(RuntimeError):
        with Transaction(project, REDUCER, deadline=time.monotonic() + 10, hand_over=jobs.append) as tx:
            tx.append([_started(TASK)], request_id="r-1", fingerprint="f")
            raise RuntimeError("the caller failed after the append")
    assert jobs == [] and not os.path.exists(os.path.join(project.dir, "ledger.lock"))
    assert checkpoint.load(project, REDUCER).verified.count == 1  # its cache saved on the way out


WRITER_THAT_DIES = '''
import os, sys, time
sys.path[:0] = [{lib!r}]
from intent_loop.intent.state import REDUCER
from intent_loop.storage.ledger import Draft
from intent_loop.storage.paths import project_paths
from intent_loop.storage.transaction import Transaction
paths = project_paths({data!r}, {ws!r})
with Transaction(paths, REDUCER, deadline=time.monotonic() + 10, hand_over=lambda job: None) as tx:
    tx.append([Draft("task_started", {task!r}, "user", {{"mode": "on", "initial_claims": []}})],
              request_id="r-dies", fingerprint="f")
os._exit(0)  # the hook process killed before its child started: the job never runs
'''


def test_a_writer_killed_before_its_child_leaves_a_lock_the_next_writer_reclaims(project, tmp_path):
    code = WRITER_THAT_DIES.format(lib=str(ROOT / "lib"), data=str(tmp_path / "data"), ws=str(tmp_path / "ws"),
                                   task=TASK)
    subprocess.run([sys.executable, "-I", "-S", "-c", code], check=True, timeout=60)
    assert os.path.isdir(os.path.join(project.dir, "ledger.lock"))  # left behind, its flock gone with it
    with Transaction(project, REDUCER, deadline=time.monotonic() + 5) as tx:
        assert tx.state["tasks"].keys() == {TASK}  # the recorded event stands (its sync came first)
        tx.append([_started(TASK.replace("a", "c", 1))], request_id="r-next", fingerprint="f")
    assert reading.verify_all(project, REDUCER).count == 2
    assert not os.path.exists(os.path.join(project.dir, "ledger.lock"))


def test_a_guard_file_synced_later_is_in_place_first_and_synced_by_the_later_call(tmp_path):
    target = tmp_path / "ws" / ".execution-fidelity" / "contract.json"
    target.parent.mkdir(parents=True)
    later = []
    before = dict(platform.SYNCS)
    provider.write_document(str(target), b'{"v": 1}\n', sync_later=later.append)
    # two jobs after the answer: the bounded sweep of a crashed writer's temp files, then the syncs
    assert target.read_bytes() == b'{"v": 1}\n' and platform.SYNCS == before and len(later) == 2
    for job in later:
        job()
    assert platform.SYNCS["fsync"] == before["fsync"] + 2 and platform.SYNCS["directory"] == before["directory"] + 1


@pytest.mark.parametrize("lost", ["the previous version", "an empty file"])
def test_a_guard_file_left_behind_by_a_crash_before_its_syncs_is_put_back_by_the_next_stop(tmp_path, lost):
    """A power loss between the rename and the child's syncs may leave the previous document (or,
    without the rename's data, an empty file) where the new one was: the next Stop writes the
    recorded contract back, at the recorded version."""
    ws = tmp_path / "ws"
    ws.mkdir()
    contract = ws / ".execution-fidelity" / "contract.json"
    _hook(tmp_path, _prompt(ws, "t-1", "intent: goal ship the parser"))
    settle(str(tmp_path / "data"), str(ws))
    first = contract.read_bytes()
    _hook(tmp_path, _prompt(ws, "t-2", "intent: must keep the API"))
    settle(str(tmp_path / "data"), str(ws))
    recorded = contract.read_bytes()
    contract.write_bytes(first if lost == "the previous version" else b"")
    stop = {"hook_event_name": "Stop", "session_id": "s-1", "turn_id": "t-2", "cwd": str(ws), "model": "m",
            "permission_mode": "default", "transcript_path": None, "stop_hook_active": False,
            "last_assistant_message": "Done."}
    _hook(tmp_path, stop)
    identity = ("contract_ref", "contract_version", "snapshot_sha256")
    written_back, expected = json.loads(contract.read_bytes())["envelope"], json.loads(recorded)["envelope"]
    assert [written_back[k] for k in identity] == [expected[k] for k in identity]  # as recorded, no new version

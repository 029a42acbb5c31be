"""Issue 33 item 8: the process Codex waits on never waits in a disk syscall. A command prompt's
hook process forks at its transaction's write; the child writes, syncs and composes the receipt,
and the hook process answers with it, or at its limit with what the child reported
(hook.runtime._split_commit, hook.deferred.split_commit).

Tested by structure, not by clock: the child's ledger sync is blocked until this test releases it
(as a stalled disk blocks fdatasync: no signal cuts it short), the answer is read while the child
is still blocked, then the child is released and the ledger checked."""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from helpers.cli_runner import CliRun
from helpers.hook_paths import code_for
from helpers.receipt_words import said
from helpers.settle import settle
from intent_loop.hook.prompt_answer import unconfirmed_answer
from intent_loop.hook.runtime import HookDeadline
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading
from intent_loop.storage.paths import project_paths

ROOT = Path(__file__).resolve().parents[2]
# The ledger's sync (platform.sync_data) blocks, with every signal held as in the kernel, while the
# gate file exists; the process says so in `blocked` first (its pid).
BLOCKING_SYNC = '''
import sys
sys.path[:0] = [{lib!r}]
from intent_loop.base import platform as _platform
_real_sync = _platform.sync_data
def _blocking_sync(fd):
    _real_sync(fd)
    import os, time
    if not os.path.exists({gate!r}):
        return
    held = _platform.hold_signals(("SIGALRM", "SIGTERM"))
    with open({blocked!r}, "w") as fh:
        fh.write(str(os.getpid()))
    while os.path.exists({gate!r}):
        time.sleep(0.01)
    _platform.release_signals(held)
_platform.sync_data = _blocking_sync
'''
# What the answering process synced, printed as it leaves (helpers.hook_paths runs it there)
SYNCS = 'sys.stderr.write("syncs:" + repr(__import__("intent_loop.base.platform", fromlist=["x"]).SYNCS) + "\\n")'


def _payload(ws, turn, prompt):
    return {"hook_event_name": "UserPromptSubmit", "session_id": "s-1", "turn_id": turn, "cwd": str(ws),
            "model": "m", "permission_mode": "default", "transcript_path": None, "prompt": prompt}


def _run(env, ws, turn, prompt, prefix=""):
    code = prefix + code_for("UserPromptSubmit", lib=ROOT / "lib", root=ROOT, after=SYNCS)
    stdin = json.dumps(_payload(ws, turn, prompt)).encode()
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=stdin, capture_output=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    syncs = next(ast.literal_eval(line[6:]) for line in done.stderr.decode().splitlines() if line.startswith("syncs:"))
    return json.loads(done.stdout), syncs


def test_the_answer_comes_while_the_childs_sync_is_blocked_and_the_hook_process_synced_nothing(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    _run(env, ws, "t-1", "intent: goal ship the parser")
    settle(env["INTENT_LOOP_DATA_DIR"], str(ws))
    gate, blocked = tmp_path / "gate", tmp_path / "blocked"
    gate.touch()
    prefix = BLOCKING_SYNC.format(lib=str(ROOT / "lib"), gate=str(gate), blocked=str(blocked))
    try:
        answer, syncs = _run(env, ws, "t-2", "intent: must keep the API", prefix=prefix)
        # the hook process has answered and exited; its child is still inside the ledger's sync
        assert blocked.exists() and gate.exists()
        child = int(blocked.read_text())
        assert os.path.exists(f"/proc/{child}")
        assert syncs == {"full": 0, "fsync": 0, "fdatasync": 0, "directory": 0}  # none by the answering process
        expected = unconfirmed_answer(HookDeadline(), count=1)  # "written to the ledger but not confirmed"
        assert answer["systemMessage"] == expected["system_message"]
        assert answer["hookSpecificOutput"]["additionalContext"] == expected["context"]
    finally:
        gate.unlink(missing_ok=True)
    settle(env["INTENT_LOOP_DATA_DIR"], str(ws))
    paths = project_paths(env["INTENT_LOOP_DATA_DIR"], str(ws))
    state = reading.verify_all(paths, REDUCER).state
    statements = sorted(c["claim"]["statement"] for task in state["tasks"].values() for c in task["claims"].values())
    assert statements == ["must: keep the API", "ship the parser"]  # recorded once, the chain intact
    guard = json.loads((ws / ".execution-fidelity" / "contract.json").read_bytes())
    assert guard["envelope"]["contract_version"] == 2 and "keep the API" in json.dumps(guard["projection"])
    rc, out, err = CliRun(env["INTENT_LOOP_DATA_DIR"], ws, home=tmp_path)("verify", "--json")
    assert rc == 0 and json.loads(out)["findings"] == [], (out, err)
    assert not os.path.isdir(os.path.join(paths.dir, "ledger.lock"))  # the child let the lock go
    # and the next prompt is recorded as usual, without a retype of the first
    answer, _syncs = _run(env, ws, "t-3", "intent: must keep the docs")
    assert said(answer["systemMessage"], "recorded", "must") == 1


def test_a_child_that_dies_before_writing_is_told_not_recorded(tmp_path):
    """The commit's child killed before the point of no return (its pipe ends with no report of a
    write): nothing reached the ledger, and the answer says so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    _run(env, ws, "t-1", "intent: goal ship the parser")
    settle(env["INTENT_LOOP_DATA_DIR"], str(ws))
    dies = f'''
import sys
sys.path[:0] = [{str(ROOT / "lib")!r}]
from intent_loop.storage import append as _append
def _killed(*args, **kwargs):
    import os
    os._exit(9)
_append.open_for_append = _killed
'''
    answer, syncs = _run(env, ws, "t-2", "intent: must keep the API", prefix=dies)
    assert "1 command NOT recorded (INTERNAL_ERROR)" in answer["systemMessage"]
    assert syncs == {"full": 0, "fsync": 0, "fdatasync": 0, "directory": 0}
    settle(env["INTENT_LOOP_DATA_DIR"], str(ws))
    state = reading.verify_all(project_paths(env["INTENT_LOOP_DATA_DIR"], str(ws)), REDUCER).state
    assert sorted(c["claim"]["statement"] for t in state["tasks"].values() for c in t["claims"].values()) == [
        "ship the parser"]

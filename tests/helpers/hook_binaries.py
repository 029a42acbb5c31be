"""Running the hook binaries of dist/ as Codex does: the payloads Codex 0.169.0 sent, one hook run
checked for the shape of every answer Codex accepts, and what the run left in the ledger; shared by
the tests of every package that drives the hooks (the `env` and `ws` fixtures included)."""
import json
import os
import subprocess
import sys
import time

import pytest

from helpers.settle import settle
from intent_loop.launch.binaries import BINARY_FOR_EVENT
from intent_loop.storage import paths as paths_mod

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(REPO, "dist")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "codex-0.169.0")  # the real payloads, copied in
BINARIES = BINARY_FOR_EVENT  # event -> binary name in dist/
FAIL_OPEN = b'{"continue":true}'
CLI = os.path.join(DIST, "intent-loop")


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "hook-home"
    home.mkdir()
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "INTENT_LOOP_DATA_DIR": str(tmp_path / "hook-data")}


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "hook-ws"
    path.mkdir()
    return str(path)


def fixture(name, cwd, **changes):
    with open(os.path.join(FIXTURES, name), "rb") as fh:
        payload = json.loads(fh.read())
    payload["cwd"] = cwd
    payload.update(changes)
    return payload


def hook(event, payload, env, *, timeout=10, raw=None):
    data = raw if raw is not None else json.dumps(payload).encode()
    started = time.monotonic()
    proc = subprocess.run([os.path.join(DIST, BINARIES[event])], input=data, capture_output=True, env=env,
                          timeout=timeout)
    elapsed = time.monotonic() - started
    if isinstance(payload, dict) and isinstance(payload.get("cwd"), str) and "INTENT_LOOP_DATA_DIR" in env:
        settle(env["INTENT_LOOP_DATA_DIR"], payload["cwd"])  # what the answer left to a detached child
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    answer = json.loads(out)
    assert isinstance(answer, dict) and answer.get("continue") is True
    assert set(answer) <= {"continue", "hookSpecificOutput", "systemMessage", "decision", "reason"}
    if "decision" in answer:  # a prompt answered locally (issue 15)
        assert answer["decision"] == "block" and set(answer) == {"continue", "decision", "reason"}
    if event == "Stop":
        assert out == FAIL_OPEN
    if "hookSpecificOutput" in answer:
        assert answer["hookSpecificOutput"]["hookEventName"] == event
        assert set(answer["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
    return out, answer, elapsed


def project_of(env, ws):
    return paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)


def events(env, ws):
    p = project_of(env, ws)
    if not os.path.exists(p.ledger):
        return []
    with open(p.ledger, "rb") as fh:
        return [json.loads(line) for line in fh.read().splitlines()]


def prompt_payload(ws, prompt, *, turn="turn-A", session="sess-1", **extra):
    return fixture("user_prompt_submit.turn1.json", ws, prompt=prompt, turn_id=turn, session_id=session, **extra)


# -- real payloads --------------------------------------------------------------------------------
_HOLD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from intent_loop.storage import paths
from intent_loop.storage.lock import ProjectLock
p = paths.project_paths(sys.argv[2], sys.argv[3])
paths.ensure_project_layout(p)
with ProjectLock(p.dir, deadline=time.monotonic() + 10) as lock:
    print("locked", flush=True)
    end = time.monotonic() + float(sys.argv[4])
    while time.monotonic() < end:
        lock.heartbeat()
        time.sleep(0.2)
print("released", flush=True)
"""


def hold_project_lock(env, ws, *, seconds):
    """Another process holding the project lock for `seconds`; returns once it holds it."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, os.path.join(REPO, "lib"), env["INTENT_LOOP_DATA_DIR"],
                               ws, str(seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    if holder.stdout.readline().strip() != b"locked":
        holder.kill()
        _out, err = holder.communicate(timeout=20)
        raise AssertionError(f"the lock holder did not start: {err[-500:]!r}")
    return holder


def cli(env, ws, *argv, timeout=30):
    """dist/intent-loop run in `ws`: (the finished process, seconds); no traceback ever reaches a user."""
    started = time.monotonic()
    proc = subprocess.run([CLI, *argv], cwd=ws, env=env, capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc, time.monotonic() - started


def raw_hook(event, payload, env, *, timeout=15):
    """The hook process itself must exit (not only answer): Codex waits for it."""
    started = time.monotonic()
    proc = subprocess.run([os.path.join(DIST, BINARIES[event])], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=timeout)
    return proc, time.monotonic() - started

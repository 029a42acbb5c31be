"""Issue 23 on a real full disk (a small tmpfs as the data root): whatever the free space, the hook,
the MCP server and the CLI say "recorded" exactly when the ledger holds the events, and "NOT
recorded" exactly when it does not; nothing prints a traceback. Skipped where mounting is not
allowed (not root, or a container without CAP_SYS_ADMIN)."""
import json
import os
import subprocess
import uuid

import pytest

from helpers.dist import requires_dist
from helpers.hook_binaries import DIST, hook, project_of, prompt_payload
from helpers.mcp_client import McpServer

pytestmark = requires_dist

CLI = os.path.join(DIST, "intent-loop")
FREE_LEVELS = (0, 700, 3000, 9000, 30000)  # bytes left free before the command


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip() or done.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount, leave):
    """Fill the tmpfs until about `leave` bytes are free (tmpfs counts whole pages)."""
    filler = mount / f"filler-{uuid.uuid4().hex}"
    with open(filler, "wb") as fh:
        try:
            while True:
                st = os.statvfs(mount)
                free = st.f_bavail * st.f_frsize
                if free <= leave + 4096:
                    break
                fh.write(b"\0" * min(1 << 20, free - leave - 4096))
                fh.flush()
        except OSError:
            pass
    return filler


def _ledger_lines(env, ws):
    path = project_of(env, ws).ledger
    with open(path, "rb") as fh:
        return [json.loads(line) for line in fh.read().splitlines() if line.strip()]


def _statements(env, ws):
    out = []
    for event in _ledger_lines(env, ws):
        payload = event["payload"]
        for claim in [payload.get("claim")] + list(payload.get("initial_claims", [])):
            if claim:
                out.append(claim["statement"])
    return out


def _project_with_a_goal(mount, tmp_path):
    """A workspace whose data root is on the small disk, with a goal recorded while there is room."""
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(mount / "d")}
    hook("UserPromptSubmit", prompt_payload(str(ws), "intent: goal ship the parser", turn="t1"), env)
    return ws, env


@pytest.mark.parametrize("leave", FREE_LEVELS)
def test_the_hook_says_recorded_exactly_when_the_ledger_holds_the_command(small_disk, tmp_path, leave):
    ws, env = _project_with_a_goal(small_disk, tmp_path)
    filler = _fill(small_disk, leave)
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(str(ws), f"intent: must keep rule {leave}",
                                                               turn="t2"), env)
    held = f"must: keep rule {leave}" in _statements(env, str(ws))
    message = answer.get("systemMessage", "")
    assert ("NOT recorded" in message) is (not held), (message, held)
    assert held or "(WRITE_FAILED)" in message or "(DURABILITY_UNCERTAIN)" in message, message
    os.unlink(filler)  # room again: the index and cache rebuild, and the ledger verifies
    done = subprocess.run([CLI, "verify", "--json"], cwd=ws, env=env, capture_output=True, timeout=60)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("leave", FREE_LEVELS)
def test_the_mcp_server_and_the_cli_say_what_happened(small_disk, tmp_path, leave):
    ws, env = _project_with_a_goal(small_disk, tmp_path)
    subprocess.run([CLI, "status"], cwd=ws, env=env, capture_output=True, timeout=60)  # the CLI runtime extracted
    with McpServer(env) as server:
        server.initialize()
        filler = _fill(small_disk, leave)
        before = len(_ledger_lines(env, str(ws)))
        result = server.call("intent_add_evidence", {"statement": f"tests pass {leave}"}, workspace=str(ws))
        grew = len(_ledger_lines(env, str(ws))) > before
        assert result["ok"] is grew, (result, grew)
        if not grew:
            assert result["error"]["code"] in ("WRITE_FAILED", "DURABILITY_UNCERTAIN"), result
    before = len(_ledger_lines(env, str(ws)))
    done = subprocess.run([CLI, "claim", "add", "must", "keep", "the", "API", "--json"], cwd=ws, env=env,
                          capture_output=True, timeout=60)
    grew = len(_ledger_lines(env, str(ws))) > before
    assert b"Traceback" not in done.stderr and (done.returncode == 0) is grew, (done.stdout, done.stderr)
    os.unlink(filler)


def test_a_first_cli_run_on_a_full_disk_says_so_without_a_traceback(small_disk, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    filler = _fill(small_disk, 0)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(small_disk / "d"),
           "TMPDIR": str(small_disk)}
    done = subprocess.run([CLI, "claim", "add", "goal", "ship", "it"], cwd=ws, env=env, capture_output=True,
                          timeout=60)
    assert done.returncode != 0 and b"Traceback" not in done.stderr, done.stderr
    assert b"intent-loop" in done.stderr
    os.unlink(filler)

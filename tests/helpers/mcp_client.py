"""JSON-RPC clients of the MCP server: McpServer drives dist/intent-loop-mcp (the server in its own
session, lines read with a timeout, the process killed and reaped when the block ends, whatever
happened); InProcessMcp hands each request to the server's own dispatch in this process, so the
tools' logic is tested without a built dist/ (issue 26). Both answer the same calls."""
import json
import os
import select
import signal
import subprocess
import time

import pytest

from helpers.dist import requires_dist

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MCP_BINARY = os.path.join(REPO, "dist", "intent-loop-mcp")
INITIALIZE = {"protocolVersion": "2025-06-18", "capabilities": {"experimental": {"codex/auth-change": {}}},
              "clientInfo": {"name": "codex-mcp-client", "title": "Codex", "version": "0.169.0"}}


def codex_meta(workspace, *, thread="thread-1", turn="turn-1", call="c1"):
    """The `_meta` Codex 0.169.0 sends with a tools/call (docs/mcp.md)."""
    return {"callId": call, "threadId": thread, "sessionId": thread, "progressToken": 1,
            "x-codex-turn-metadata": {"session_id": thread, "turn_id": turn, "sandbox_mode": "read-only",
                                      "workspaces": {str(workspace): {"has_changes": False}}},
            "codex/sandbox-state-meta": {"permissionProfile": {"type": "disabled"},
                                         "sandboxCwd": "file://" + str(workspace)}}


class _Client:
    """What both clients share: requests by id, the handshake, and a tools/call's checked envelope."""

    next_id = 100
    calls = 0

    def request(self, method, params=None, *, timeout=10.0):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        reply = self.exchange(message, timeout)
        assert reply.get("id") == self.next_id, reply
        return reply

    def initialize(self, **changes):
        reply = self.request("initialize", dict(INITIALIZE, **changes))
        self.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def call(self, tool, arguments=None, *, meta=None, workspace=None, timeout=20.0, **meta_changes):
        """The tool's structuredContent (the envelope); `isError` is checked against `ok`."""
        self.calls += 1
        if meta is None:
            meta_changes.setdefault("call", f"c{self.calls}")
            meta = codex_meta(workspace, **meta_changes)
        reply = self.request("tools/call", {"name": tool, "arguments": arguments or {}, "_meta": meta},
                             timeout=timeout)
        result = reply["result"]
        envelope = result["structuredContent"]
        assert result["isError"] is (not envelope["ok"])
        assert result["content"][0]["text"].startswith("intent-loop: ")  # one sentence for a person
        from intent_loop.mcp.envelope import shown

        assert json.loads(result["content"][1]["text"]) == shown(envelope)  # ids cut to 8 hex characters
        return envelope


class InProcessMcp(_Client):
    """The server's dispatch (intent_loop.mcp.server.Server.handle) in this process: each request
    goes through the same code as over stdio, and its reply through the server's own JSON encoding.
    A client without roots; a bug raises here instead of becoming an error reply."""

    mode = "in_process"

    def __init__(self, env):
        from intent_loop.mcp.server import Server

        self._pipe = os.pipe()  # the stdio the server would read and write; never used here
        self.server = Server(stdin_fd=self._pipe[0], stdout_fd=self._pipe[1], env=env)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        for fd in self._pipe:
            os.close(fd)

    def exchange(self, message, _timeout):
        from intent_loop.base.canonical import dumps

        return json.loads(dumps(self.server.handle(json.loads(json.dumps(message)))))

    def notify(self, message):
        assert self.server.handle(message) is None

    @staticmethod
    def run_hook(event, env, **kwargs):
        return run_hook(event, env, from_source=True, **kwargs)


class McpServer(_Client):
    mode = "binary"

    def __init__(self, env, *, argv=None, cwd=None):
        self.proc = subprocess.Popen(argv or [MCP_BINARY], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)
        self.buffer = b""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass

    def write(self, data):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message):
        self.write(json.dumps(message).encode() + b"\n")

    def read(self, timeout=10.0):
        """The next message the server wrote (a dict); AssertionError after `timeout`."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(0.0, left))
            assert ready, f"no message from the MCP server within {timeout}s"
            chunk = os.read(fd, 1 << 16)
            assert chunk, "the MCP server closed its output"
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def exchange(self, message, timeout):
        self.send(message)
        return self.read(timeout)

    notify = send

    def wait(self, timeout=10.0):
        return self.proc.wait(timeout=timeout)

    run_hook = staticmethod(lambda event, env, **kwargs: run_hook(event, env, **kwargs))


def run_hook(event, env, *, cwd, session_id, prompt=None, turn_id="turn-0", source="startup", from_source=False):
    """One real hook run for session `session_id`: the dist/ binary, or (`from_source`) the same
    entry point from lib/ in its own process as the source launcher runs it; returns its answer
    (a dict), after its detached work has finished."""
    import sys

    from helpers.hook_paths import code_for
    from helpers.settle import settle
    from intent_loop.launch.binaries import BINARY_FOR_EVENT

    payload = {"session_id": session_id, "cwd": str(cwd), "hook_event_name": event, "model": "m",
               "permission_mode": "default", "transcript_path": None}
    if event == "UserPromptSubmit":
        payload.update(turn_id=turn_id, prompt=prompt)
    elif event == "Stop":
        payload.update(turn_id=turn_id, stop_hook_active=False, last_assistant_message="Done.")
    else:
        payload["source"] = source
    argv = [os.path.join(REPO, "dist", BINARY_FOR_EVENT[event])]
    if from_source:
        argv = [sys.executable, "-I", "-S", "-c", code_for(event, lib=os.path.join(REPO, "lib"), root=REPO)]
    proc = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=20)
    assert proc.returncode == 0, proc.stderr
    settle(env["INTENT_LOOP_DATA_DIR"], str(cwd))
    return json.loads(proc.stdout)


# The fixtures both MCP test modules use (each assigns them to its own names).
@pytest.fixture
def env(tmp_path):
    home = tmp_path / "mcp-home"
    home.mkdir()
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "INTENT_LOOP_DATA_DIR": str(tmp_path / "mcp-data")}


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "mcp-ws"
    path.mkdir()
    return str(path)


@pytest.fixture
def server(env):
    with McpServer(env) as running:
        running.initialize()
        yield running


@pytest.fixture(params=["in_process", pytest.param("binary", marks=requires_dist)])
def server_both_ways(request, env):
    """The server in this process (its hooks run from lib/), then dist/'s binary with the binaries'
    hooks: the same test, both ways; `server.run_hook` runs the hooks of the same build."""
    with (InProcessMcp(env) if request.param == "in_process" else McpServer(env)) as running:
        running.initialize()
        yield running


def a_call_per_tool(proposal_id, evidence_claim_id):
    """{tool: arguments}: one call to every tool the server has, given the short ids of an open
    proposal and an evidence claim (tests that walk every tool's result share this table)."""
    from intent_loop.mcp.tool_table import TOOL_NAMES

    calls = {
        "intent_status": {}, "intent_get_snapshot": {}, "intent_list_candidates": {}, "intent_export": {},
        "intent_add_explicit": {"statement": "keep the docs", "verb": "must"},
        "intent_add_evidence": {"statement": "lint is clean"},
        "intent_add_inference": {"statement": "prefers small diffs", "confidence": 0.5},
        "intent_mark_unknown": {"statement": "which browser"}, "intent_mark_dispute": {"statement": "two goals"},
        "intent_replace_claim": {"claim_id": evidence_claim_id, "statement": "all tests pass"},
        "intent_invalidate": {"claim_id": "ffffffff"}, "intent_start_task": {"label": "side"},
        "intent_import": {"graph": {"format": "nope"}},
        "intent_delete": {"proposal_id": proposal_id},
        "intent_set_mode": {"mode": "private"},
    }
    assert set(calls) == TOOL_NAMES, "a new tool needs its call here"
    return calls

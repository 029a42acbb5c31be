"""dist/intent-loop-mcp as Codex speaks to it: the handshake, tools/list, every JSON-RPC error path,
the line cap, end of input and SIGTERM, and how a call finds its project (docs/mcp.md)."""
import os
import shutil
import signal
import time

import pytest

from helpers import mcp_client
from helpers.dist import requires_dist
from helpers.mcp_client import MCP_BINARY, McpServer, codex_meta, run_hook
from helpers.receipt_words import said
from intent_loop.intent.state import REDUCER
from intent_loop.mcp.tool_table import TOOL_NAMES
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading

pytestmark = requires_dist

READ_TOOLS = {"intent_status", "intent_get_snapshot", "intent_list_candidates", "intent_export"}
DESTRUCTIVE = {"intent_delete", "intent_set_mode"}


env = mcp_client.env  # the shared fixtures, by the names the tests ask for
ws = mcp_client.ws
server = mcp_client.server


def test_initialize_echoes_the_version_and_opts_into_sandbox_metadata(env):
    with McpServer(env) as server:
        reply = server.initialize()["result"]
        assert reply["protocolVersion"] == "2025-06-18"
        assert reply["capabilities"]["experimental"] == {"codex/sandbox-state-meta": {}}
        assert reply["capabilities"]["tools"] == {"listChanged": False}
        assert reply["serverInfo"]["name"] == "intent-loop"
        assert 0 < len(reply["instructions"]) < 600


def test_an_unknown_protocol_version_gets_the_newest_supported_one(env):
    with McpServer(env) as server:
        assert server.initialize(protocolVersion="1999-01-01")["result"]["protocolVersion"] == "2025-06-18"


def test_tools_list_names_the_fifteen_tools_with_their_approval_annotations(server):
    tools = server.request("tools/list", {"_meta": {"progressToken": 0}})["result"]["tools"]
    by_name = {tool["name"]: tool for tool in tools}
    assert set(by_name) == set(TOOL_NAMES) and len(tools) == 15
    for name, tool in by_name.items():
        hints = tool["annotations"]
        assert tool["inputSchema"]["type"] == "object"
        if name in READ_TOOLS:
            assert hints["readOnlyHint"] is True
        elif name in DESTRUCTIVE:  # Codex asks the user first (and refuses under approval policy never)
            assert hints["destructiveHint"] is True and hints["readOnlyHint"] is False
        else:  # Codex runs these without asking: neither destructive nor open-world
            assert hints["destructiveHint"] is False and hints["openWorldHint"] is False


def test_ping_answers_an_empty_result(server):
    assert server.request("ping")["result"] == {}


def test_an_unknown_method_is_method_not_found(server):
    assert server.request("resources/list")["error"]["code"] == -32601


def test_notifications_get_no_answer(server):
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}})
    server.send({"jsonrpc": "2.0", "method": "something/else"})
    assert server.request("ping")["result"] == {}  # the first reply is the ping's


@pytest.mark.parametrize("line, code", [
    (b"this is not json", -32700),
    (b"\xff\xfe garbage", -32700),
    (b'{"jsonrpc": "2.0", "id": 1, "method": ', -32700),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),
    (b'"a string"', -32600),
    (b'{"id": 1, "method": "ping"}', -32600),
    (b'{"jsonrpc": "2.0", "id": {"no": 1}, "method": "ping"}', -32600),
    (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', -32600),
])
def test_garbage_lines_get_a_json_rpc_error_and_the_server_goes_on(server, line, code):
    server.write(line + b"\n")
    reply = server.read()
    assert reply["error"]["code"] == code
    assert server.request("ping")["result"] == {}


def test_a_line_over_the_cap_is_refused_without_being_buffered_and_the_next_one_is_served(server):
    server.write(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * (4 * 1024 * 1024) + b'"}}\n')
    assert server.read(timeout=30)["error"]["code"] == -32600
    assert server.request("ping")["result"] == {}


def test_a_line_just_under_the_cap_is_served(server, ws):
    pad = "x" * (4 * 1024 * 1024 - 400)
    envelope = server.call("intent_status", {"project_root": ws, "pad": pad}, meta={})
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"  # parsed and answered: `pad` is not an argument


def test_tools_call_with_an_unknown_tool_or_bad_arguments_is_invalid_params(server):
    assert server.request("tools/call", {"name": "intent_nope", "arguments": {}})["error"]["code"] == -32602
    assert server.request("tools/call", {"name": "intent_status", "arguments": [1]})["error"]["code"] == -32602
    assert server.request("tools/call", [1])["error"]["code"] == -32602


def test_end_of_input_ends_the_server_with_status_zero(env):
    with McpServer(env) as server:
        server.initialize()
        server.proc.stdin.close()
        assert server.wait() == 0


def test_sigterm_while_idle_ends_the_server_with_status_zero(env):
    with McpServer(env) as server:
        server.initialize()
        os.killpg(server.proc.pid, signal.SIGTERM)  # Codex signals the whole process group
        assert server.wait() == 0


def test_sigterm_in_the_middle_of_writes_leaves_a_ledger_that_verifies(env, ws, tmp_path):
    _typed_goal(env, ws, "thread-1")
    with McpServer(env) as server:
        server.initialize()
        for n in range(40):  # a burst of writes; the signal lands somewhere inside one of them
            server.send({"jsonrpc": "2.0", "id": 1000 + n, "method": "tools/call", "params": {
                "name": "intent_add_evidence", "arguments": {"statement": f"observation {n}"},
                "_meta": codex_meta(ws, call=f"burst-{n}")}})
        time.sleep(0.15)
        os.killpg(server.proc.pid, signal.SIGTERM)
        assert server.wait() == 0
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    verified = reading.verify_all(project, REDUCER)
    assert verified.count >= 2
    assert not os.path.exists(project.lock_dir) or not os.listdir(project.lock_dir)


# -- which project a call is for ----------------------------------------------------------
def test_the_project_is_the_sandbox_cwd_with_the_hooks_project_id(server, env, ws):
    envelope = server.call("intent_status", workspace=ws)
    expected = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    assert envelope["ok"] and envelope["project_id"] == expected.project_id
    assert envelope["result"]["project_root"] == expected.root


def test_a_percent_encoded_sandbox_cwd_is_decoded(server, env, tmp_path):
    odd = tmp_path / "with space é"
    odd.mkdir()
    meta = codex_meta(odd)
    meta["codex/sandbox-state-meta"]["sandboxCwd"] = "file://" + str(tmp_path).replace(" ", "%20") + \
        "/with%20space%20%C3%A9"
    envelope = server.call("intent_status", meta=meta)
    assert envelope["project_id"] == paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], str(odd)).project_id


@pytest.mark.parametrize("cwd", ["https://example.com/x", "/plain/path", "file://server/share/x", 7,
                                 "file:///tmp/%zz", "file:///tmp/x?query"])
def test_sandbox_metadata_that_is_not_a_local_file_url_is_refused(server, ws, cwd):
    meta = codex_meta(ws)
    meta["codex/sandbox-state-meta"]["sandboxCwd"] = cwd
    assert server.call("intent_status", meta=meta)["error"]["code"] == "PROJECT_ROOT_METADATA_INVALID"


def test_sandbox_metadata_without_sandbox_cwd_is_refused(server, ws):
    meta = codex_meta(ws)
    del meta["codex/sandbox-state-meta"]["sandboxCwd"]
    assert server.call("intent_status", meta=meta)["error"]["code"] == "PROJECT_ROOT_METADATA_INVALID"


def test_an_explicit_root_naming_another_directory_is_a_mismatch(server, ws, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    envelope = server.call("intent_status", {"project_root": str(other)}, workspace=ws)
    assert envelope["error"]["code"] == "PROJECT_ROOT_MISMATCH"
    assert server.call("intent_status", {"project_root": ws + "/."}, workspace=ws)["ok"]  # the same root


def test_without_metadata_an_explicit_root_is_used(server, env, ws):
    envelope = server.call("intent_status", {"project_root": ws}, meta={})
    assert envelope["project_id"] == paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws).project_id


def test_without_metadata_or_root_a_root_is_required(server):
    assert server.call("intent_status", meta={})["error"]["code"] == "PROJECT_ROOT_REQUIRED"


def test_a_relative_or_missing_explicit_root_is_an_invalid_project_root(server, tmp_path):
    assert server.call("intent_status", {"project_root": "relative"}, meta={})["error"]["code"] == \
        "INVALID_PROJECT_ROOT"
    assert server.call("intent_status", {"project_root": str(tmp_path / "gone")}, meta={})["error"]["code"] == \
        "INVALID_PROJECT_ROOT"


def test_a_client_offering_roots_is_asked_for_them(env, ws):
    with McpServer(env) as server:
        server.initialize(capabilities={"roots": {"listChanged": False}})
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": "intent_status", "arguments": {}}})
        asked = server.read()
        assert asked["method"] == "roots/list"
        server.send({"jsonrpc": "2.0", "id": 8, "method": "ping"})  # arrives while the server waits
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [{"uri": "file://" + ws}]}})
        reply = server.read()
        assert reply["id"] == 7
        envelope = reply["result"]["structuredContent"]
        assert envelope["project_id"] == paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws).project_id
        assert server.read() == {"jsonrpc": "2.0", "id": 8, "result": {}}


def test_a_client_offering_two_roots_must_name_the_project(env, ws, tmp_path):
    with McpServer(env) as server:
        server.initialize(capabilities={"roots": {}})
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": "intent_status", "arguments": {}}})
        asked = server.read()
        server.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"roots": [
            {"uri": "file://" + ws}, {"uri": "file://" + str(tmp_path)}]}})
        assert server.read()["result"]["structuredContent"]["error"]["code"] == "PROJECT_ROOT_REQUIRED"


# -- a damaged ledger -----------------------------------------------------------------------
def test_a_corrupt_ledger_gives_a_structured_diagnostic_naming_recover(server, env, ws):
    _typed_goal(env, ws, "thread-1")
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    with open(project.ledger, "r+b") as fh:
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"Ship", b"Sink", 1))
    shutil.rmtree(project.cache_dir)  # the checkpoint would vouch for the old prefix: verify it all
    for tool in ("intent_get_snapshot", "intent_add_evidence"):
        envelope = server.call(tool, {"statement": "x"} if tool == "intent_add_evidence" else {}, workspace=ws)
        assert envelope["error"]["code"] == "LEDGER_HASH_MISMATCH"
        assert "intent-loop recover" in envelope["error"]["message"]
        assert envelope["error"]["diagnostic"]["recover"] == "intent-loop recover"
        assert envelope["error"]["retryable"] is False
    assert server.request("ping")["result"] == {}


def test_a_data_root_that_is_not_absolute_is_reported_not_crashed(env, ws):
    with McpServer(dict(env, INTENT_LOOP_DATA_DIR="relative/dir")) as server:
        server.initialize()
        assert server.call("intent_status", workspace=ws)["error"]["code"] == "DATA_DIR_REQUIRED"


def test_intent_loop_mcp_on_the_command_line_is_the_same_server(env, ws):
    cli = os.path.join(os.path.dirname(MCP_BINARY), "intent-loop")
    with McpServer(env, argv=[cli, "mcp"]) as server:
        server.initialize()
        assert {t["name"] for t in server.request("tools/list")["result"]["tools"]} == set(TOOL_NAMES)
        assert server.call("intent_status", workspace=ws)["ok"]
        server.proc.stdin.close()
        assert server.wait() == 0


def _typed_goal(env, ws, session_id):
    """The user types `intent: goal Ship the parser` in Codex session `session_id` (the real hook)."""
    answer = run_hook("UserPromptSubmit", env, cwd=ws, session_id=session_id, prompt="intent: goal Ship the parser")
    assert said(answer["systemMessage"], "recorded", "goal") == 1


def test_idempotent_hints_say_whether_the_same_call_again_adds_something():
    from intent_loop.mcp.tool_table import TOOLS

    hints = {tool["name"]: tool["annotations"]["idempotentHint"] for tool in TOOLS}
    adds = {"intent_add_explicit", "intent_add_inference", "intent_add_evidence", "intent_mark_unknown",
            "intent_mark_dispute", "intent_start_task", "intent_import"}
    assert {name for name, hint in hints.items() if not hint} == adds

"""End to end, issue 13: the real Codex 0.169.0 starts dist/intent-loop-mcp (registered by
`intent-loop install --apply`), the mock model calls its tools, and the calls act on the session
the hooks linked. Fixtures and helpers come from test_real_codex.py.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_real_codex as base  # noqa: E402
from mock_model import developer_messages, function_call, function_outputs  # noqa: E402
from test_real_codex import (  # noqa: E402
    BYPASS,
    CODEX_BIN,
    CONFIG_TOML,
    TURN_TIMEOUT,
    install_hooks,
    pytestmark,  # noqa: F401 (the same skips: no Codex binary, no dist/)
    run_bounded,
    session_id_of,
)

from helpers.settle import settle  # noqa: E402
from intent_loop.storage import paths as paths_mod  # noqa: E402

mock_model = base.mock_model  # the fixtures, by the names the tests ask for
codex_env = base.codex_env


def scripted(calls):
    """A responder that makes the tool calls one per request, each after the previous one's output
    came back, then answers with the plain message."""
    def respond(body, _number):
        done = function_outputs(body)
        for call_id, name, arguments in calls:
            if call_id not in done:
                return [function_call(call_id, name, arguments)]
        return None
    return respond


def tool_calls(stdout):
    """The mcp_tool_call items `codex exec --json` reported as completed."""
    found = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        item = event.get("item") if isinstance(event, dict) else None
        if event.get("type") == "item.completed" and isinstance(item, dict) and item.get("type") == "mcp_tool_call":
            found.append(item)
    return found


def ledger_events(data_root, workspace):
    settle(str(data_root), str(workspace))
    with open(paths_mod.project_paths(str(data_root), str(workspace)).ledger, "rb") as fh:
        return [json.loads(line) for line in fh.read().splitlines()]


def setup(server, env, codex_home):
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url))
    install_hooks(env, codex_home)
    assert "[mcp_servers.intent_loop]" in (codex_home / "config.toml").read_text()


def exec_turn(wrap, env, workspace, prompt, *, session_id=None):
    argv = [CODEX_BIN, "exec", "--json", *BYPASS] if session_id is None else \
        [CODEX_BIN, "exec", "resume", "--json", *BYPASS, session_id]
    rc, out, err, _secs = run_bounded([*wrap(argv), prompt], cwd=workspace, env=env, timeout=TURN_TIMEOUT)
    assert rc == 0, f"codex exec exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return out, err


def structured(item):
    result = item.get("result") or {}
    content = result.get("structured_content") or result.get("structuredContent")
    if content is None:  # the text part carries the same envelope
        texts = [part.get("text") for part in result.get("content") or [] if isinstance(part, dict)]
        content = json.loads(texts[0]) if texts else None
    return content


def test_real_codex_calls_the_snapshot_and_records_evidence_shown_later_only_as_a_count(mock_model, codex_env):
    server, wrap = mock_model
    env, codex_home, data_root, workspace = codex_env
    setup(server, env, codex_home)
    server.respond_with(scripted([
        ("call_snap", "intent_get_snapshot", {}),
        ("call_ev", "intent_add_evidence", {"statement": "the parser tests pass", "facets": ["result_feedback"]}),
    ]))
    out, err = exec_turn(wrap, env, workspace, "Please check the parser.\nintent: goal Ship the parser\n"
                                               "intent: must-not action:network\n")
    calls = {item["tool"]: item for item in tool_calls(out)}
    assert set(calls) == {"intent_get_snapshot", "intent_add_evidence"}, out
    # the server's instructions reach the model as its tool namespace's description (issue 34 item 7:
    # the agent is the messenger when `intent:` lines got no receipt)
    from intent_loop.mcp.server import INSTRUCTIONS

    tools = json.dumps(server.response_bodies()[0].get("tools"))
    assert json.dumps(INSTRUCTIONS) in tools, tools[:2000]
    assert all(item["status"] == "completed" and item["server"] == "intent_loop" for item in calls.values()), out
    snapshot = structured(calls["intent_get_snapshot"])
    assert snapshot["ok"], snapshot
    assert {c["statement"] for c in snapshot["result"]["claims"]} == {"Ship the parser", "must not: action:network"}
    evidence = structured(calls["intent_add_evidence"])
    assert evidence["ok"] and evidence["task_id"] == snapshot["task_id"], evidence

    events = ledger_events(data_root, workspace)
    added = [e for e in events if e["event_type"] == "claim_added" and e["actor"] == "agent"]
    assert [e["payload"]["claim"]["statement"] for e in added] == ["the parser tests pass"]
    assert added[0]["payload"]["claim"]["source_ref"]["kind"] == "tool_result"

    session_id = session_id_of(err, out, str(codex_home))
    server.respond_with(None)
    before = len(server.response_bodies())
    exec_turn(wrap, env, workspace, "go on", session_id=session_id)
    developer = [m for body in server.response_bodies()[before:] for m in developer_messages(body)]
    ours = [m for m in developer if "intent-loop" in m and "Ship the parser" in m]
    assert ours, developer
    assert all("the parser tests pass" not in m for m in ours)
    assert any("1 evidence" in m for m in ours), ours


def test_an_injected_add_explicit_reaches_neither_context_nor_guard_until_the_user_confirms(mock_model, codex_env):
    server, wrap = mock_model
    env, codex_home, data_root, workspace = codex_env
    setup(server, env, codex_home)
    injected = "allow action:network"
    server.respond_with(scripted([
        ("call_inj", "intent_add_explicit", {"statement": "action:network", "verb": "allow"}),
    ]))
    out, err = exec_turn(wrap, env, workspace, "intent: goal Ship the parser\nRead the README and follow it.\n")
    [item] = tool_calls(out)
    proposed = structured(item)
    assert item["status"] == "completed" and proposed["ok"], out
    proposal_id = proposed["result"]["proposal_ids"][0]
    contract = workspace / ".execution-fidelity" / "contract.json"
    guard_before = contract.read_bytes()
    assert b"action:network" not in guard_before

    session_id = session_id_of(err, out, str(codex_home))
    server.respond_with(None)
    before = len(server.response_bodies())
    exec_turn(wrap, env, workspace, "go on", session_id=session_id)
    developer = [m for body in server.response_bodies()[before:] for m in developer_messages(body)]
    assert not any("action:network" in m and "intent-loop" in m and "user's own" in m for m in developer)
    settle(str(data_root), str(workspace))
    assert contract.read_bytes() == guard_before

    exec_turn(wrap, env, workspace, f"intent: confirm {proposal_id[:8]}", session_id=session_id)
    settle(str(data_root), str(workspace))
    projection = json.loads(contract.read_bytes())["projection"]
    assert "action:network" in projection["authorization"]["allowed"], projection
    confirmed = [e for e in ledger_events(data_root, workspace) if e["event_type"] == "candidate_confirmed"]
    assert confirmed and confirmed[0]["actor"] == "user"
    assert confirmed[0]["payload"]["claim"]["statement"] == injected.replace("allow ", "allow: ")

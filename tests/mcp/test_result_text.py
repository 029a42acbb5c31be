"""What the Codex TUI shows of a tool result (issue 35, item 10): each text content cut to a few
lines, so the first is one sentence from the result's data and the JSON after it carries ids of 8
hex characters; structuredContent, which the model reads, keeps the envelope with its full ids."""
import json
import re

import pytest

from helpers import mcp_client
from helpers.mcp_client import InProcessMcp, codex_meta
from intent_loop.mcp import envelope as envelope_mod

SESSION = "019b0000-0000-7000-8000-000000000001"
HEX64 = re.compile(r"[0-9a-f]{64}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

env = mcp_client.env
ws = mcp_client.ws


@pytest.fixture
def server(env):
    """The server's own dispatch in this process (the text is built there; dist/ may be older)."""
    with InProcessMcp(env) as running:
        running.initialize()
        yield running


def raw_call(server, ws, tool, arguments=None, *, call="c"):
    reply = server.request("tools/call", {"name": tool, "arguments": arguments or {},
                                          "_meta": codex_meta(ws, thread=SESSION, call=call)})
    return reply["result"]


def typed(server, env, ws, prompt, turn="turn-0"):
    return server.run_hook("UserPromptSubmit", env, cwd=ws, session_id=SESSION, prompt=prompt, turn_id=turn)


def test_every_tools_text_starts_with_its_sentence_and_shows_no_full_id(server, env, ws):

    typed(server, env, ws, "intent: goal Ship the parser\nintent: must-not action:network")
    proposal = raw_call(server, ws, "intent_add_explicit", {"statement": "keep it small", "verb": "must"},
                        call="p")["structuredContent"]
    evidence = raw_call(server, ws, "intent_add_evidence", {"statement": "tests pass"}, call="e")["structuredContent"]
    calls = mcp_client.a_call_per_tool(proposal["result"]["proposal_ids"][0][:8], evidence["result"]["claim_id"][:8])
    for name, arguments in calls.items():
        result = raw_call(server, ws, name, arguments, call=name)
        envelope = result["structuredContent"]
        first, second = (part["text"] for part in result["content"])
        whole = "\n".join((first, second))
        assert first.startswith("intent-loop: ") and "\n" not in first and len(first) <= 400, (name, first)
        assert not first.removeprefix("intent-loop: ").startswith("{"), (name, first)
        assert not HEX64.search(whole) and not UUID.search(whole), (name, whole)
        assert json.loads(second) == envelope_mod.shown(envelope), name
        assert HEX64.fullmatch(envelope["project_id"]), envelope  # the model still gets full ids
        assert json.loads(second)["project_id"] == envelope["project_id"][:8]
        if envelope["ok"] and envelope.get("task_id"):
            assert UUID.fullmatch(envelope["task_id"]) and envelope["task_id"][:8] in first, (name, first)
        if not envelope["ok"]:
            assert envelope["error"]["code"] in first
        for claim_id in (envelope.get("result") or {}).get("claim_ids", [])[:1]:
            assert claim_id[:8] in first, (name, first)


def test_the_status_sentence_names_the_task_its_claims_the_hooks_and_guard(server, env, ws):
    typed(server, env, ws, "intent: goal Ship the parser\nintent: must-not action:network")
    raw_call(server, ws, "intent_add_explicit", {"statement": "keep it small", "verb": "must"}, call="p")
    result = raw_call(server, ws, "intent_status", call="s")
    status = result["structuredContent"]["result"]
    first = result["content"][0]["text"]
    task = status["linked_task"]["task_id"][:8]
    assert first.startswith(f"intent-loop: task {task} (on), 2 active claims, 1 open proposal; hooks "), first
    assert ("hooks ran" in first) is status["hooks"]["ran"], first
    assert first.endswith(f"; {status['enforcement']['summary']}."), first
    assert status["enforcement"]["summary"].startswith("Guard: ")


def test_the_read_sentences_say_what_was_found(server, env, ws):
    assert raw_call(server, ws, "intent_get_snapshot")["content"][0]["text"].startswith(
        "intent-loop: no task to read or add to")
    typed(server, env, ws, "intent: goal Ship the parser\nintent: must-not action:network")
    proposal = raw_call(server, ws, "intent_add_explicit", {"statement": "keep it small", "verb": "must"},
                        call="p")["structuredContent"]
    raw_call(server, ws, "intent_add_evidence", {"statement": "tests pass"}, call="e")
    short = proposal["result"]["proposal_ids"][0][:8]
    task = proposal["task_id"][:8]
    texts = {name: raw_call(server, ws, name, call=name)["content"][0]["text"]
             for name in ("intent_get_snapshot", "intent_list_candidates", "intent_export")}
    assert texts["intent_get_snapshot"] == (f"intent-loop: task {task} (on): 3 active claims (2 explicit, "
                                            f"1 evidence), 1 open proposal."), texts
    assert texts["intent_list_candidates"].startswith(
        f"intent-loop: 1 open proposal [{short}] and 0 long-term candidates; "), texts
    assert texts["intent_export"] == f"intent-loop: exported task {task} as a graph: 3 claims (2 user, 1 evidence).", \
        texts


def test_shown_cuts_only_whole_id_strings():
    uuid, hex64 = "9441c241-610b-40ee-acc2-0e8a1604f72c", "9f97a552" + "0" * 56
    value = {"project_id": hex64, "claim_ids": [uuid, uuid.upper()], "source_ref": {"event_id": "mcp:" + hex64},
             "statement": f"see {uuid} later", "confidence": 0.5, "linked": False, "label": None}
    assert envelope_mod.shown(value) == {
        "project_id": "9f97a552", "claim_ids": ["9441c241", uuid.upper()], "source_ref": {"event_id": "mcp:9f97a552"},
        "statement": f"see {uuid} later", "confidence": 0.5, "linked": False, "label": None}


def test_a_long_or_multiline_message_stays_one_bounded_line():
    failed = {"ok": False, "operation": "intent_status", "project_id": None, "task_id": None,
              "error": {"code": "INTERNAL_ERROR", "message": "first line\nsecond " + "x" * 600, "retryable": False}}
    text = envelope_mod.sentence(failed)
    assert "\n" not in text and len(text) == envelope_mod.MAX_SENTENCE and text.endswith("…")
    assert text.startswith("intent-loop: intent_status failed (INTERNAL_ERROR): first line second x")

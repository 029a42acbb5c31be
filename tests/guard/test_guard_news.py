"""Issue 22 through the built hooks: a damaged Guard file of ours is noticed by one lstat on a
prompt, repaired after the answer and told in the next receipt; a refusal a Stop finds after its
answer is told in the next prompt's receipt, and never written to the ledger."""
import json
import os

import pytest

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import events, fixture, hook, prompt_payload
from intent_loop.guard import contract_file
from intent_loop.ops.receipts import guard_news_text, restored_text

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws


def guard_path(ws):
    return os.path.join(ws, ".execution-fidelity", "contract.json")


def envelope(ws):
    with open(guard_path(ws), "rb") as fh:
        data = fh.read()
    kind, doc, errors = contract_file.validate_document_bytes(data)
    assert kind == "provider" and not errors, errors
    return doc["envelope"]


def damage(ws, shape):
    path = guard_path(ws)
    with open(path, "rb") as fh:
        data = fh.read()
    cut = data.index(b'"source": "user-intent-plugin"') + 40
    damaged = {"emptied": b"", "a BOM in front": b"\xef\xbb\xbf" + data, "truncated": data[:cut],
               "garbage after the document": data + b"\n}}garbage"}[shape]
    with open(path, "wb") as fh:  # in place, as an editor or a full disk would leave it
        fh.write(damaged)


@pytest.mark.parametrize("shape", ["emptied", "a BOM in front", "truncated", "garbage after the document"])
def test_a_damaged_guard_file_of_ours_is_repaired_after_a_prose_prompt_and_told(env, ws, shape):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship the parser\nintent: must keep the API",
                                            turn="t1"), env)
    before = envelope(ws)
    count = len(events(env, ws))
    damage(ws, shape)
    hook("UserPromptSubmit", prompt_payload(ws, "please go on", turn="t2"), env)  # settles its after-answer work
    after = envelope(ws)
    assert (after["contract_ref"], after["contract_version"], after["snapshot_sha256"]) == \
        (before["contract_ref"], before["contract_version"], before["snapshot_sha256"])
    if shape == "emptied":  # a takeover (issue 33): restored as it was, recorded, told as such
        assert [e["event_type"] for e in events(env, ws)[count:]] == ["source_observed", "contract_restored"]
        told = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t3"), env)[1]
        assert told["systemMessage"] == "intent-loop: " + restored_text("emptied", before["contract_version"])
        again = hook("UserPromptSubmit", prompt_payload(ws, "once more", turn="t4"), env)[1]
        assert "systemMessage" not in again
        return
    assert len(events(env, ws)) == count + 1  # the prompt's own hash-only observation, no new version
    told = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t3"), env)[1]
    news = {"repaired": shape, "version": before["contract_version"]}
    assert told["systemMessage"].startswith("intent-loop: " + guard_news_text(news))
    again = hook("UserPromptSubmit", prompt_payload(ws, "once more", turn="t4"), env)[1]
    assert "systemMessage" not in again


def test_a_file_there_before_we_ever_published_is_never_touched(env, ws):
    os.mkdir(os.path.dirname(guard_path(ws)))
    with open(guard_path(ws), "wb") as fh:
        fh.write(b"hello, this is the user's own file\n")
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship the parser", turn="t1"), env)
    hook("UserPromptSubmit", prompt_payload(ws, "please go on", turn="t2"), env)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    with open(guard_path(ws), "rb") as fh:
        assert fh.read() == b"hello, this is the user's own file\n"


def test_a_refusal_the_stop_finds_is_told_in_the_next_receipt_and_not_recorded(env, ws):
    """A link there before we ever published is the user's: refused, never written through."""
    os.symlink(os.path.join(ws, "elsewhere"), os.path.dirname(guard_path(ws)))
    os.mkdir(os.path.join(ws, "elsewhere"))
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship the parser", turn="t1"), env)
    hook("UserPromptSubmit", prompt_payload(ws, "and on", turn="t1b"), env)  # the command prompt's own refusal told
    count = len(events(env, ws))
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    assert os.listdir(os.path.join(ws, "elsewhere")) == []  # nothing written through the link
    recorded = events(env, ws)[count:]
    assert [e["event_type"] for e in recorded] == ["result_signal_observed"]
    assert "PROVIDER_PATH_FOREIGN" not in json.dumps(recorded)
    told = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t2"), env)[1]
    assert told["systemMessage"].startswith("intent-loop: Guard not updated (PROVIDER_PATH_FOREIGN) at the end of "
                                            "the last turn")

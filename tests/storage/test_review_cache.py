"""Review of cache format 3 through the built prompt hook: a hand-edited cache (digests
recomputed) must never make the hook misreport what it recorded or leave Guard behind."""
import json

from helpers import hook_binaries
from helpers.cache_files import edit_shard
from helpers.dist import requires_dist
from helpers.hook_binaries import hook, project_of, prompt_payload
from intent_loop.guard import provider
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws


def test_a_durable_index_naming_a_claim_its_shard_lacks_neither_misreports_nor_skips_guard(env, ws):
    """The root's durable index names a claim the owner's shard no longer has: the save after the
    append raised KeyError, so the hook said `NOT recorded (INTERNAL_ERROR): type them again` over
    a claim_added and a contract_published v2 it had appended, and the Guard file stayed at v1."""
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship it\nintent: always use tabs", turn="t-1"), env)
    project = project_of(env, ws)
    (claim_id, owner), = reading.verify_all(project, REDUCER).state["durable"].items()
    edit_shard(project, "t-" + owner, lambda d: d["claims"].pop(claim_id))

    out, _answer, _elapsed = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep the api", turn="t-2"), env)
    assert b"INTERNAL_ERROR" not in out and b"NOT recorded" not in out, out
    with open(project.ledger, "rb") as fh:
        events = [json.loads(line) for line in fh]
    versions = [e["payload"]["contract_version"] for e in events if e["event_type"] == "contract_published"]
    assert versions == [1, 2]
    with open(provider.guard_file(ws, {}, project_root=project.root)[0], "rb") as fh:
        assert json.loads(fh.read())["envelope"]["contract_version"] == 2

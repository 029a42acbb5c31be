"""Issue 12's remaining items through the built binaries: `verify` compares the cache with what the
ledger folds to, recover's and status's messages, and the read caps on Codex's own files."""
import json

import test_hooks
from test_hooks import DIST, hook, project_of, prompt_payload, pytestmark  # noqa: F401 (dist/ skip)
from test_hostile_files import _cli
from test_streaming_and_upkeep import _edit_task_shard

from intent_loop.intent.state import REDUCER
from intent_loop.storage import ledger

env = test_hooks.env
ws = test_hooks.ws


def _goal(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it\nintent: must keep the api", turn="t-1"),
         env)
    project = project_of(env, ws)
    state = ledger.load_verified(project, REDUCER).state
    task = state["last_change"]["task_id"]
    return project, task, state


# -- item 1 (the rest): verify re-derives the state and compares it with the cache ----------------
def test_verify_names_a_cache_that_differs_from_the_ledger_and_rebuilds_it(env, ws):
    project, task, state = _goal(env, ws)
    claim = next(c for c, r in state["tasks"][task]["claims"].items() if r["state"] == "active")

    def forge(data):
        data["claims"][claim][0] = "invalidated"  # what the hooks would then stop showing

    _edit_task_shard(project, task, forge)
    proc, _t = _cli(env, ws, "verify", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and not result["ok"]
    assert [f["code"] for f in result["findings"]] == ["CACHE_MISMATCH"]
    assert result["events"] > 0  # the ledger itself verified
    proc, _t = _cli(env, ws, "verify")  # rebuilt: the next verify finds them equal
    assert proc.returncode == 0 and "ledger OK" in proc.stdout and "CACHE" not in proc.stdout
    assert ledger.load_verified(project, REDUCER).state["tasks"][task]["claims"][claim]["state"] == "active"


def test_verify_text_names_the_cache_difference(env, ws):
    project, task, state = _goal(env, ws)
    claim = next(iter(state["tasks"][task]["claims"]))
    _edit_task_shard(project, task, lambda data: data["claims"][claim].__setitem__(0, "superseded"))
    proc, _t = _cli(env, ws, "verify")
    assert proc.returncode == 1
    assert "ledger OK" in proc.stdout and "cache DIFFERED: CACHE_MISMATCH" in proc.stdout, proc.stdout
    proc, _t = _cli(env, ws, "verify", "--all-projects", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"]


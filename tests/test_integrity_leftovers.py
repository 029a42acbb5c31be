"""Issue 12's remaining items through the built binaries: `verify` compares the cache with what the
ledger folds to, recover's and status's messages, and the read caps on Codex's own files."""
import json
import os

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


# -- item 4: recover --export names the full path; status/doctor give the real next action -------
def test_recover_export_to_a_missing_directory_names_the_whole_path(env, ws):
    _goal(env, ws)
    target = "/nonexistent/intent-loop-export/x.jsonl"
    proc, _t = _cli(env, ws, "recover", "--export", target)
    assert proc.returncode == 1
    assert f"could not write {target}" in proc.stderr, proc.stderr
    relative = os.path.join("no-such-dir", "prefix.jsonl")  # a relative name is made absolute
    proc, _t = _cli(env, ws, "recover", "--export", relative, "--json")
    assert proc.returncode == 1
    assert os.path.join(ws, relative) in json.loads(proc.stdout)["error"]["message"]


def test_status_and_doctor_do_not_advise_recover_where_recover_refuses_an_unsafe_ledger(env, ws, tmp_path):
    project, _task, _state = _goal(env, ws)
    real = tmp_path / "elsewhere.jsonl"
    os.rename(project.ledger, real)
    os.symlink(real, project.ledger)  # every command refuses a linked ledger (UNSAFE_PATH)
    proc, _t = _cli(env, ws, "recover", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "UNSAFE_PATH"
    proc, _t = _cli(env, ws, "status")
    chain = next(line for line in proc.stdout.splitlines() if line.startswith("chain:"))
    assert "UNSAFE_PATH" in chain and "run `intent-loop recover`" not in chain, chain
    assert project.ledger in chain and "regular file" in chain, chain
    proc, _t = _cli(env, ws, "status", "--json")
    assert "run `intent-loop recover`" not in json.loads(proc.stdout)["chain"]["next_action"]
    proc, _t = _cli(env, ws, "doctor", "--json")
    chains = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["chains"]
    assert not chains["ok"] and "UNSAFE_PATH" in chains["detail"]
    assert "run `intent-loop recover`" not in chains["next_action"] and "regular file" in chains["next_action"]
    os.unlink(project.ledger)  # the advice works: the file moved back into place verifies
    os.rename(real, project.ledger)
    proc, _t = _cli(env, ws, "verify")
    assert proc.returncode == 0


def test_status_and_doctor_still_advise_recover_for_a_damaged_line(env, ws):
    project, _task, _state = _goal(env, ws)
    with open(project.ledger, "r+b") as fh:
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"ship it", b"SHIP it", 1))
    proc, _t = _cli(env, ws, "status", "--json")  # the damage lies under the checkpoint: found on loading
    assert proc.returncode == 0, proc.stdout + proc.stderr
    chain = json.loads(proc.stdout)["chain"]
    assert chain["error"]["code"] == "LEDGER_HASH_MISMATCH"
    assert chain["next_action"] == "run `intent-loop recover` in the damaged project's directory"


"""Verified physical deletion of a task or a claim: confirmation, re-chain, derived copies, scan."""
import json
import os
import time

import pytest

from helpers.cli_runner import make_cli
from intent_loop.base.canonical import canonical_bytes, dumps
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import provider
from intent_loop.guard.publishing import refresh_quietly
from intent_loop.intent import private_mode, tasks
from intent_loop.intent.state import REDUCER
from intent_loop.intent.state_cache import materialize
from intent_loop.ops import deletion
from intent_loop.storage.ledger import new_uuid4
from intent_loop.storage.reading import load_verified, verify_all
from intent_loop.storage.transaction import mutate


@pytest.fixture
def cli(tmp_path):
    return make_cli(tmp_path)


@pytest.fixture
def project(cli):
    return cli.project()


def _deadline():
    return time.monotonic() + 10


def start(project, cli, statements, *, session_hash=None):
    """A task with direct user goal claims, published to the Guard file like the CLI does."""
    request_id = f"test:{new_uuid4()}"
    holder = {}

    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(time.time()))
        claims = [tasks.user_claim(the_plan, statement=s, facets=["outcome"], scope="task",
                                   source_ref={"kind": "user_event", "event_id": request_id}) for s in statements]
        holder["task"] = tasks.start_task(the_plan, task_id=new_uuid4(), initial_claims=claims,
                                          session_hash=session_hash)
        holder["claims"] = [c["claim_id"] for c in claims]
        return the_plan.drafts

    mutate(project, REDUCER, request_id=request_id, operation="test.start", params={"s": statements},
           plan=plan, deadline=_deadline(),
           after_commit=lambda tx, _mutation: refresh_quietly(tx, workspace=cli.workspace, env=cli.env))
    return holder["task"], holder["claims"]


def _link(state, task_id):
    the_plan = tasks.Plan(state, now=format_utc(time.time()))
    tasks.link_session(the_plan, task_id=task_id, session_hash="d" * 64)
    return the_plan.drafts


def _all_files(project):
    for dirpath, _dirs, files in os.walk(project.dir):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as fh:
                yield os.path.join(dirpath, name), fh.read()


def _ledger(project):
    with open(project.ledger, "rb") as fh:
        return fh.read()


def _assert_gone(project, needles):
    for path, data in _all_files(project):
        for needle in needles:
            assert needle not in data, (path, needle)


# -- confirmation --------------------------------------------------------------------------------
@pytest.mark.parametrize("confirm", ["", "DELETE TASK", "delete task {id}", "DELETE TASK {short}",
                                     "DELETE CLAIM {id}", "DELETE TASK {id} ", " DELETE TASK {id}"])
def test_delete_task_wrong_confirmation_changes_nothing(cli, project, confirm):
    task_id, _claims = start(project, cli, ["keep everything"])
    before = _ledger(project)
    with pytest.raises(IntentLoopError) as info:
        deletion.delete_task(project, task_id, confirm=confirm.format(id=task_id, short=task_id[:8]),
                             workspace=cli.workspace, env=cli.env, deadline=_deadline())
    assert info.value.code == ErrorCode.CONFIRMATION_MISMATCH
    assert _ledger(project) == before


def test_delete_claim_wrong_confirmation_changes_nothing(cli, project):
    _task, (claim_id,) = start(project, cli, ["keep this claim"])
    before = _ledger(project)
    for confirm in (f"DELETE TASK {claim_id}", f"DELETE CLAIM {claim_id[:8]}", "yes"):
        with pytest.raises(IntentLoopError) as info:
            deletion.delete_claim(project, claim_id, confirm=confirm, deadline=_deadline())
        assert info.value.code == ErrorCode.CONFIRMATION_MISMATCH
    assert _ledger(project) == before


def test_unknown_ids_are_not_found(cli, project):
    start(project, cli, ["something"])
    missing = new_uuid4()
    with pytest.raises(IntentLoopError) as info:
        deletion.delete_task(project, missing, confirm=f"DELETE TASK {missing}", deadline=_deadline())
    assert info.value.code == ErrorCode.TASK_NOT_FOUND
    with pytest.raises(IntentLoopError) as info:
        deletion.delete_claim(project, missing, confirm=f"DELETE CLAIM {missing}", deadline=_deadline())
    assert info.value.code == ErrorCode.CLAIM_NOT_FOUND


# -- delete task ----------------------------------------------------------------------------------
def test_delete_task_rechains_clears_and_scans_clean(cli, project):
    keep_task, _keep_claims = start(project, cli, ["the other task stays"])
    task_id, claim_ids = start(project, cli, ["ship the secret parser", "document the launch codes"],
                               session_hash="a" * 64)
    cli.json("claim", "add", "must", "never", "mention", "project", "falcon")  # newest task: task_id
    guard = provider.provider_path(cli.workspace, cli.env)
    assert provider.read_file_state(guard, load_verified(project, REDUCER).state)["task_id"] == task_id
    private_mode.claim_control(project, session_hash="b" * 64, task_id=task_id)
    # a later event of the other task, so the deletion has following events to re-chain
    mutate(project, REDUCER, request_id="test:link", operation="test.link", params={}, deadline=_deadline(),
           plan=lambda st: _link(st, keep_task))
    # quarantine: a torn-tail digest (unattributable), a suffix naming the task, an unrelated suffix
    q = project.quarantine_dir
    with open(os.path.join(q, "20260101T000000Z-aaaa-torn-tail.json"), "wb") as fh:
        fh.write(canonical_bytes({"kind": "torn_tail", "byte_length": 3, "sha256": "0" * 64}))
    with open(os.path.join(q, "20260101T000001Z-bb-suffix.jsonl"), "wb") as fh:
        fh.write(f'{{"task_id":"{task_id}"}}\n'.encode())
    with open(os.path.join(q, "20260101T000001Z-bb-suffix.manifest.json"), "wb") as fh:
        fh.write(b'{"kind":"recovered_suffix"}\n')
    with open(os.path.join(q, "20260101T000002Z-cc-suffix.jsonl"), "wb") as fh:
        fh.write(f'{{"task_id":"{keep_task}"}}\n'.encode())
    with open(os.path.join(project.cache_dir, "seen-" + "c" * 64 + ".json"), "wb") as fh:
        fh.write(b'{"view_sha256":"00"}')
    state = load_verified(project, REDUCER).state
    all_claims = list(state["tasks"][task_id]["claims"])
    statements = [r["claim"]["statement"] for r in state["tasks"][task_id]["claims"].values()]
    old_count = verify_all(project, REDUCER).count

    report = deletion.delete_task(project, task_id, confirm=f"DELETE TASK {task_id}",
                                  workspace=cli.workspace, env=cli.env, deadline=_deadline())

    verified = verify_all(project, REDUCER)
    assert verified.count == old_count - report["removed_events"] == report["events_after"]
    first, last = report["rechained"]
    assert 1 <= first <= last == verified.count
    assert task_id not in verified.state["tasks"] and keep_task in verified.state["tasks"]
    assert report["scan"]["clean"] and report["scan"]["hits"] == [] and report["scan"]["shared_text"] == []
    _assert_gone(project, [task_id.encode()] + [c.encode() for c in all_claims]
                 + [dumps(s).encode() for s in statements])
    assert set(claim_ids) <= set(all_claims)
    cleared = {c["path"] for c in report["cleared"]}
    assert guard in cleared and not os.path.exists(guard)
    assert "quarantine/20260101T000000Z-aaaa-torn-tail.json" in cleared
    assert "quarantine/20260101T000001Z-bb-suffix.jsonl" in cleared
    assert "quarantine/20260101T000001Z-bb-suffix.manifest.json" in cleared
    assert os.path.exists(os.path.join(q, "20260101T000002Z-cc-suffix.jsonl"))
    assert "private-sessions/" + "b" * 64 + ".json" in cleared
    assert not os.path.exists(private_mode.control_path(project, "b" * 64))
    assert "cache/seen-" + "c" * 64 + ".json" in cleared
    # the cache rebuilds to exactly the state of a full verification
    rebuilt = load_verified(project, REDUCER)
    assert rebuilt.state == verified.state
    assert load_verified(project, REDUCER).state == verified.state  # now served from the cache
    assert verified.state["sessions"].get("a" * 64) is None


def test_delete_task_keeps_foreign_provider_file(cli, project):
    task_id, _ = start(project, cli, ["a goal"])
    guard = provider.provider_path(cli.workspace, cli.env)
    with open(guard, "wb") as fh:
        fh.write(b'{"not":"ours"}')
    report = deletion.delete_task(project, task_id, confirm=f"DELETE TASK {task_id}",
                                  workspace=cli.workspace, env=cli.env, deadline=_deadline())
    assert os.path.exists(guard) and guard not in {c["path"] for c in report["cleared"]}


def test_delete_only_task_leaves_empty_verified_ledger(cli, project):
    task_id, _ = start(project, cli, ["the only task"])
    report = deletion.delete_task(project, task_id, confirm=f"DELETE TASK {task_id}", deadline=_deadline())
    assert report["events_after"] == 0 and report["rechained"] is None
    assert _ledger(project) == b"" and verify_all(project, REDUCER).count == 0


def test_shared_text_is_reported_not_a_failure(cli, project):
    _other, _ = start(project, cli, ["keep the API stable"])  # the planted copy in another live claim
    task_id, _ = start(project, cli, ["keep the API stable", "remove the beta flag"])
    report = deletion.delete_task(project, task_id, confirm=f"DELETE TASK {task_id}", deadline=_deadline())
    scan = report["scan"]
    assert scan["clean"] and scan["hits"] == []
    assert len(scan["shared_text"]) == 1 and scan["shared_text"][0]["files"] == ["ledger.jsonl"]
    _assert_gone(project, [task_id.encode(), dumps("remove the beta flag").encode()])
    assert dumps("keep the API stable").encode() in _ledger(project)


def test_scan_finds_a_planted_copy(cli, project):
    task_id, (claim_id,) = start(project, cli, ["a very particular sentence"])
    state = materialize(load_verified(project, REDUCER).state)  # read again after the rewrite below
    with open(os.path.join(project.dir, "notes.txt"), "wb") as fh:
        fh.write(dumps("a very particular sentence").encode() + task_id.encode())
    report = deletion.delete_task(project, task_id, confirm=f"DELETE TASK {task_id}", deadline=_deadline())
    assert not report["scan"]["clean"]
    kinds = {(h["file"], h["kind"]) for h in report["scan"]["hits"]}
    assert kinds == {("notes.txt", "id"), ("notes.txt", "statement")}
    assert claim_id in state["tasks"][task_id]["claims"]


# -- delete claim ---------------------------------------------------------------------------------
def test_delete_claim_that_superseded_another(cli, project):
    goal = cli.json("claim", "add", "goal", "ship", "the", "parser")
    must = cli.json("claim", "add", "must", "use", "tabs")
    new = cli.json("claim", "replace", must["claim_id"][:8], "use", "spaces")
    cli.json("claim", "add", "must", "keep", "tests", "green")
    guard = provider.provider_path(cli.workspace, cli.env)
    assert b"use spaces" in open(guard, "rb").read()
    rc, _out, err = cli("delete", "claim", new["claim_id"], "--confirm", "DELETE CLAIM " + new["claim_id"][:8])
    assert rc == 1 and "CONFIRMATION_MISMATCH" in err
    report = cli.json("delete", "claim", new["claim_id"], "--confirm", "DELETE CLAIM " + new["claim_id"])
    assert report["scan"]["clean"] and report["rechained"]
    assert report["rewritten"][0]["to"] == "claim_invalidated" \
        and report["rewritten"][0]["claim_id"] == must["claim_id"]
    state = verify_all(project, REDUCER).state
    claims = state["tasks"][goal["task_id"]]["claims"]
    assert new["claim_id"] not in claims
    assert claims[must["claim_id"]]["state"] == "invalidated"  # the older instruction is not resurrected
    assert guard in {c["path"] for c in report["cleared"]} and not os.path.exists(guard)
    _assert_gone(project, [new["claim_id"].encode(), dumps("must: use spaces").encode()])
    assert load_verified(project, REDUCER).state == state
    assert cli.json("verify")["ok"]


def test_delete_superseded_claim_strips_references(cli, project):
    cli.json("claim", "add", "goal", "ship", "it")
    must = cli.json("claim", "add", "must", "use", "tabs")
    new = cli.json("claim", "replace", must["claim_id"][:8], "use", "spaces")
    report = cli.json("delete", "claim", must["claim_id"], "--confirm", "DELETE CLAIM " + must["claim_id"])
    assert report["removed_events"] == 1 and report["scan"]["clean"]
    state = verify_all(project, REDUCER).state
    claims = state["tasks"][new["task_id"]]["claims"]
    assert must["claim_id"] not in claims
    assert claims[new["claim_id"]]["state"] == "active" and claims[new["claim_id"]]["claim"]["supersedes"] == []
    _assert_gone(project, [must["claim_id"].encode(), dumps("must: use tabs").encode()])


def test_delete_initial_claim_and_retry_dedup_survives(cli, project):
    task_id, (first, second) = start(project, cli, ["first goal", "second goal"])
    report = deletion.delete_claim(project, first, confirm=f"DELETE CLAIM {first}", workspace=cli.workspace,
                                   env=cli.env, deadline=_deadline())
    assert report["removed_events"] == 0 and report["scan"]["clean"]
    state = verify_all(project, REDUCER).state
    assert list(state["tasks"][task_id]["claims"]) == [second]
    _assert_gone(project, [first.encode(), dumps("first goal").encode()])


def test_delete_dropped_claim_removes_invalidation(cli, project):
    cli.json("claim", "add", "goal", "ship", "it")
    c = cli.json("claim", "add", "must-not", "touch", "vendor/")
    cli.json("claim", "drop", c["claim_id"][:8])
    report = cli.json("delete", "claim", c["claim_id"], "--confirm", "DELETE CLAIM " + c["claim_id"])
    assert report["removed_events"] == 2 and report["scan"]["clean"]
    _assert_gone(project, [c["claim_id"].encode(), dumps("must not: touch vendor/").encode()])


def test_delete_imported_claim(cli, project):
    goal = cli.json("claim", "add", "goal", "ship", "it")
    cli.json("claim", "add", "must", "use", "tabs")
    cli.json("export", "--task", goal["task_id"], "-o", "g.json")
    imported = cli.json("import", "g.json")
    victim = imported["claim_ids"][1]
    report = deletion.delete_claim(project, victim, confirm=f"DELETE CLAIM {victim}", deadline=_deadline())
    assert report["scan"]["clean"]  # the same text lives on in the original task's claim
    assert [s["claim_id"] for s in report["scan"]["shared_text"]] == [victim]
    state = verify_all(project, REDUCER).state
    assert victim not in state["tasks"][imported["task_id"]]["claims"]
    assert len(state["tasks"][imported["task_id"]]["claims"]) == 1


# -- CLI ----------------------------------------------------------------------------------------
def test_cli_delete_task_paths(cli, project):
    goal = cli.json("claim", "add", "goal", "ship", "the", "parser")
    task_id = goal["task_id"]
    out = cli.json("delete", "task", task_id, "--confirm", "DELETE TASK nope", expect=1)
    assert out["error"]["code"] == ErrorCode.CONFIRMATION_MISMATCH
    rc, _out, err = cli("delete", "task", task_id)
    assert rc == 2 and "--confirm" in err
    rc, out, _err = cli("delete", "task", task_id, "--confirm", f"DELETE TASK {task_id}")
    assert rc == 0 and f"deleted task {task_id}" in out
    assert "scan: no deleted id or statement remains" in out
    assert verify_all(project, REDUCER).count == 0
    rc, _out, _err = cli("delete")
    assert rc == 2


def test_delete_one_claim_of_a_multi_claim_request_then_append(cli, project):
    """Deletion drops one event of a three-event request: the request's first event must state its
    new length (request_event_count), or every later append would be read as damage."""
    task_id, _ = start(project, cli, ["the goal"])
    holder = {}

    def three_claims(state):
        the_plan = tasks.Plan(state, now=format_utc(time.time()))
        claims = [tasks.user_claim(the_plan, statement=s, facets=["hard_constraint"], scope="task",
                                   source_ref={"kind": "user_event", "event_id": "prompt-1"})
                  for s in ("must: keep a", "must: keep b", "must: keep c")]
        for claim in claims:
            tasks.add_claim(the_plan, task_id=task_id, claim=claim)
        holder["claims"] = [c["claim_id"] for c in claims]
        return the_plan.drafts

    mutate(project, REDUCER, request_id="test:three-claims", operation="test.three", params={},
           plan=three_claims, deadline=_deadline())
    middle = holder["claims"][1]
    deletion.delete_claim(project, middle, confirm=f"DELETE CLAIM {middle}", workspace=cli.workspace,
                          env=cli.env, deadline=_deadline())
    counts = [e["payload"].get("request_event_count")
              for e in (json.loads(line) for line in _ledger(project).splitlines())
              if e["request_id"] == "test:three-claims"]
    assert counts == [2, None]

    cli.json("claim", "add", "must-not", "touch", "vendor/")
    state = verify_all(project, REDUCER).state
    active = [r["claim"]["claim_id"] for r in state["tasks"][task_id]["claims"].values() if r["state"] == "active"]
    assert middle not in active and holder["claims"][0] in active and holder["claims"][2] in active
    assert load_verified(project, REDUCER).count == verify_all(project, REDUCER).count


@pytest.mark.parametrize("which", ["task", "claim"])
def test_delete_commands_get_the_longer_rewrite_deadline(tmp_path, monkeypatch, which):
    """delete task|claim rewrite and re-verify the whole ledger (about 8 s at 100,000 events
    without a checkpoint), so they run under REWRITE_DEADLINE, not the 10 s of other commands."""
    import types

    from intent_loop.cli import common, portable

    seen = {}

    class Stop(Exception):
        pass

    def fake(paths, item_id, **kwargs):
        seen["left"] = kwargs["deadline"] - time.monotonic()
        raise Stop

    monkeypatch.setattr(portable.deletion, f"delete_{which}", fake)
    console = types.SimpleNamespace(env={"INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)},
                                    cwd=str(tmp_path), project=str(tmp_path))
    args = types.SimpleNamespace(id="x", confirm="y", json=False)
    with pytest.raises(Stop):
        getattr(portable, f"cmd_delete_{which}")(args, console)
    assert common.REWRITE_DEADLINE >= 30 > common.CLI_DEADLINE
    assert common.REWRITE_DEADLINE - 5 < seen["left"] <= common.REWRITE_DEADLINE

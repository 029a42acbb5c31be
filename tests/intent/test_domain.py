"""Domain rules on real ledgers: protection matrix, role/status pairs, request-id reuse, modes,
private sessions, long-term promotion and the hook/compact views."""
import os
import shutil
import subprocess
import sys
import time

import pytest

from intent_loop.base import timestamps
from intent_loop.base.canonical import canonical_bytes
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.intent import private_mode, prompt_commands, tasks, views
from intent_loop.intent.state import ProjectReducer
from intent_loop.ops import apply_commands
from intent_loop.storage import ledger, reading, transaction
from intent_loop.storage.lock import ProjectLock
from intent_loop.storage.paths import session_hash

REDUCER = ProjectReducer()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SESSION = session_hash("session-one")
_counter = [0]


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    home = tmp_path / "home-domain"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", str(tmp_path / "data"))


def deadline():
    return time.monotonic() + 20


def rid(prefix="r"):
    _counter[0] += 1
    return f"{prefix}-{_counter[0]}"


def run(project, workspace, prompt, *, session=SESSION, request_id=None, turn="turn-1"):
    return apply_commands.run_commands(
        project, commands=prompt_commands.parse_prompt(prompt), session_hash=session,
        source_ref={"kind": "user_event", "event_id": turn}, request_id=request_id or rid("prompt"),
        deadline=deadline(), workspace=workspace, env={})


def state_of(project):
    return reading.load_verified(project, REDUCER).state


def linked(project, session=SESSION):
    st = state_of(project)
    return st["tasks"][st["sessions"][session]]


def active_by_statement(task, statement):
    for cid, rec in task["claims"].items():
        if rec["claim"]["statement"] == statement and rec["state"] == "active":
            return cid
    raise AssertionError(f"no active claim {statement!r}")


def mutate(project, plan_fn, *, operation="test", params=None, request_id=None):
    def plan(state):
        p = tasks.Plan(state, now=timestamps.format_utc(time.time()))
        plan_fn(p)
        return p.drafts

    return transaction.mutate(project, REDUCER, request_id=request_id or rid("m"), operation=operation,
                         params=params if params is not None else {}, plan=plan, deadline=deadline())


def inferred(statement="the agent thinks so", confidence=0.5, facets=("outcome",)):
    return claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement=statement, facets=list(facets),
                                scope="task", source_ref={"kind": "agent_turn", "event_id": "t9"},
                                valid_from="", role="agent", epistemic_status="inferred", confidence=confidence)


def other_kind(status, statement="other record"):
    role = claims_mod.ROLE_FOR_STATUS[status]
    kind = {"evidence": "tool_result", "unknown": "agent_turn", "disputed": "agent_turn",
            "inferred": "agent_turn"}[status]
    return claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement=statement, facets=["outcome"], scope="task",
                                source_ref={"kind": kind, "event_id": "t9"}, valid_from="", role=role,
                                epistemic_status=status, confidence=0.5 if status == "inferred" else None)


def user_explicit(statement="user words", facets=("outcome",)):
    return claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement=statement, facets=list(facets), scope="task",
                                source_ref={"kind": "user_event", "event_id": "t1"}, valid_from="")


def expect_code(code, fn, *args, **kwargs):
    with pytest.raises(IntentLoopError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, info.value.message
    return info.value


def ledger_count(project):
    return reading.verify_all(project, REDUCER).count


# -- protection matrix -------------------------------------------------------------------------
@pytest.mark.parametrize("status", ["inferred", "evidence", "unknown", "disputed"])
def test_explicit_claim_cannot_be_replaced_by_non_user_kinds(project, workspace, status):
    run(project, workspace, "intent: goal keep the user's words")
    task = linked(project)
    cid = active_by_statement(task, "keep the user's words")
    before = ledger_count(project)
    for direct in (True, False):
        expect_code(ErrorCode.PROTECTED_CLAIM, mutate, project,
                    lambda p, direct=direct: tasks.replace_claims(p, task_id=task["task_id"], old_ids=[cid],
                                                                  claim=other_kind(status), direct_user=direct,
                                                                  actor="agent"))
    assert ledger_count(project) == before
    assert linked(project)["claims"][cid]["state"] == "active"


def test_explicit_claim_cannot_be_replaced_or_invalidated_indirectly(project, workspace):
    """An import or any non-direct path (direct_user=False) cannot displace the user's words."""
    run(project, workspace, "intent: goal protected goal")
    task = linked(project)
    cid = active_by_statement(task, "protected goal")
    before = ledger_count(project)
    expect_code(ErrorCode.PROTECTED_CLAIM, mutate, project,
                lambda p: tasks.replace_claims(p, task_id=task["task_id"], old_ids=[cid],
                                               claim=user_explicit("imported words"), direct_user=False))
    expect_code(ErrorCode.PROTECTED_CLAIM, mutate, project,
                lambda p: tasks.invalidate_claim(p, task_id=task["task_id"], claim_id=cid, direct_user=False))
    assert ledger_count(project) == before


def test_user_can_replace_and_drop_own_claim(project, workspace):
    run(project, workspace, "intent: goal first wording\nintent: must keep tests green")
    task = linked(project)
    goal = active_by_statement(task, "first wording")
    must = active_by_statement(task, "must: keep tests green")
    receipt = run(project, workspace, f"intent: replace {goal[:8]} second wording\nintent: drop {must[:8]}")
    assert not receipt.rejected, receipt.rejected
    task = linked(project)
    assert task["claims"][goal]["state"] == "superseded"
    assert task["claims"][must]["state"] == "invalidated"
    new = active_by_statement(task, "second wording")
    assert task["claims"][new]["claim"]["supersedes"] == [goal]
    # also through the planner directly with a direct user claim
    mutate(project, lambda p: tasks.replace_claims(p, task_id=task["task_id"], old_ids=[new],
                                                   claim=user_explicit("third wording")))
    mutate(project, lambda p: tasks.invalidate_claim(
        p, task_id=task["task_id"], claim_id=active_by_statement(p.state["tasks"][task["task_id"]], "third wording")))
    assert reading.verify_all(project, REDUCER).count > 0


@pytest.mark.parametrize("old_status,new_status", [
    ("unknown", "inferred"), ("disputed", "inferred"), ("inferred", "unknown"), ("inferred", "disputed")])
def test_unknown_and_disputed_never_merged_with_inferred(project, workspace, old_status, new_status):
    run(project, workspace, "intent: goal base")
    task_id = linked(project)["task_id"]
    old = other_kind(old_status, "the old record")
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id, claim=old, actor="agent"))
    before = ledger_count(project)
    expect_code(ErrorCode.PROTECTED_CLAIM, mutate, project,
                lambda p: tasks.replace_claims(p, task_id=task_id, old_ids=[old["claim_id"]],
                                               claim=other_kind(new_status, "merged"), direct_user=False,
                                               actor="agent"))
    assert ledger_count(project) == before


def test_inferred_can_be_replaced_by_inferred(project, workspace):
    run(project, workspace, "intent: goal base")
    task_id = linked(project)["task_id"]
    old = inferred("guess one")
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id, claim=old, actor="agent"))
    mutate(project, lambda p: tasks.replace_claims(p, task_id=task_id, old_ids=[old["claim_id"]],
                                                   claim=inferred("guess two", 0.75), direct_user=False, actor="agent"))
    assert linked(project)["claims"][old["claim_id"]]["state"] == "superseded"


# -- role/status pairs and confidence ---------------------------------------------------------------
_SOURCE_FOR_STATUS = {"explicit": "user_event", "inferred": "agent_turn", "evidence": "tool_result",
                      "unknown": "agent_turn", "disputed": "agent_turn"}


@pytest.mark.parametrize("status", claims_mod.STATUSES)
@pytest.mark.parametrize("role", claims_mod.ROLES)
def test_legal_role_status_pairs(role, status):
    legal = claims_mod.ROLE_FOR_STATUS[status] == role
    kwargs = dict(claim_id=ledger.new_uuid4(), statement="a statement", facets=["outcome"], scope="task",
                  source_ref={"kind": _SOURCE_FOR_STATUS[status], "event_id": "e1"}, valid_from="",
                  role=role, epistemic_status=status, confidence=0.5 if status == "inferred" else None)
    if legal:
        claims_mod.new_claim(**kwargs)
    else:
        expect_code(ErrorCode.INVALID_CLAIM, claims_mod.new_claim, **kwargs)
    assert {("explicit", "user"), ("inferred", "agent"), ("evidence", "evidence"), ("unknown", "agent"),
            ("disputed", "system")} == set(claims_mod.ROLE_FOR_STATUS.items())


def test_explicit_needs_user_event_and_inferred_needs_confidence():
    expect_code(ErrorCode.INVALID_CLAIM, claims_mod.new_claim, claim_id=ledger.new_uuid4(), statement="x",
                facets=["outcome"], scope="task", source_ref={"kind": "explicit_import", "event_id": "e"},
                valid_from="")
    expect_code(ErrorCode.INVALID_CLAIM, claims_mod.new_claim, claim_id=ledger.new_uuid4(), statement="x",
                facets=["outcome"], scope="task", source_ref={"kind": "agent_turn", "event_id": "e"},
                valid_from="", role="agent", epistemic_status="inferred")
    expect_code(ErrorCode.INVALID_CLAIM, claims_mod.new_claim, claim_id=ledger.new_uuid4(), statement="x",
                facets=["outcome"], scope="task", source_ref={"kind": "user_event", "event_id": "e"},
                valid_from="", confidence=0.5)


@pytest.mark.parametrize("value,stored", [(0.5, 0.5), (0.75, 0.75), (1.0, 1), (1, 1), (0, 0), (0.0, 0), (0.1, 0.1)])
def test_confidence_normalized(value, stored):
    out = claims_mod.normalize_confidence(value)
    assert out == stored and type(out) is type(stored)
    claim = inferred(confidence=value)
    assert claim["confidence"] == stored and type(claim["confidence"]) is type(stored)


@pytest.mark.parametrize("value", [0.755, 1.01, -0.01, 0.001, True, "0.5", None, float("nan")])
def test_confidence_rejected(value):
    expect_code(ErrorCode.INVALID_CLAIM, claims_mod.normalize_confidence, value)


def test_confidence_one_is_stored_as_1_in_ledger(project, workspace):
    run(project, workspace, "intent: goal base")
    task_id = linked(project)["task_id"]
    claim = inferred("fully sure", 1.0)
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id, claim=claim, actor="agent"))
    with open(project.ledger, "rb") as fh:
        data = fh.read()
    assert b'"confidence":1,' in data and b'"confidence":1.0' not in data


# -- REQUEST_ID_REUSED on every mutating operation -------------------------------------------------
def _operations(project, workspace):
    run(project, workspace, "intent: goal base goal")
    task_id = linked(project)["task_id"]
    # a second task, and an open candidate, for the operations that need them
    st = state_of(project)
    return task_id, st


OPS = ["start_task", "add_claim", "replace_claims", "invalidate_claim", "set_mode", "link_session",
       "observe", "candidate_dismissed", "candidate_confirmed", "commands"]


@pytest.mark.parametrize("op", OPS)
def test_request_id_reused_on_every_mutation(project, workspace, op):
    run(project, workspace, "intent: goal base goal\nintent: must keep green")
    task = linked(project)
    task_id = task["task_id"]
    goal = active_by_statement(task, "base goal")
    must = active_by_statement(task, "must: keep green")
    candidate_id = None
    if op.startswith("candidate"):
        for _i in range(3):
            run(project, workspace, "intent: new\nintent: goal repeated signal")
        candidate_id = next(iter(state_of(project)["candidates"]))
        task_id = linked(project)["task_id"]

    def plan_for(variant):
        if op == "start_task":
            return lambda p: tasks.start_task(p, task_id=tasks.derived_task_id(project.project_id, "x" + variant))
        if op == "add_claim":
            return lambda p: tasks.add_claim(p, task_id=task_id, claim=user_explicit("added " + variant))
        if op == "replace_claims":
            return lambda p: tasks.replace_claims(p, task_id=task_id, old_ids=[goal],
                                                  claim=user_explicit("r " + variant))
        if op == "invalidate_claim":
            return lambda p: tasks.invalidate_claim(p, task_id=task_id, claim_id=goal if variant == "1" else must)
        if op == "set_mode":
            return lambda p: tasks.set_mode(p, task_id=task_id, mode="off" if variant == "1" else "private")
        if op == "link_session":
            return lambda p: tasks.link_session(p, task_id=task_id, session_hash=session_hash("other" + variant))
        if op == "observe":
            return lambda p: tasks.observe(p, task_id=task_id, event_type="source_observed", session_hash=SESSION,
                                           source={"kind": "user_event", "event_id": "t" + variant},
                                           char_count=5, actor="user")
        if op == "candidate_dismissed":
            return lambda p: tasks.dismiss_candidate(p, task_id=task_id, candidate_id=candidate_id)
        if op == "candidate_confirmed":
            return lambda p: tasks.confirm_candidate(p, task_id=task_id, candidate_id=candidate_id,
                                                     source_ref={"kind": "user_event", "event_id": "c" + variant})
        raise AssertionError(op)

    request_id = "reused-id-1"
    if op == "commands":
        run(project, workspace, "intent: must one", request_id=request_id)
        count = ledger_count(project)
        again = run(project, workspace, "intent: must one", request_id=request_id)
        assert again.replayed and ledger_count(project) == count
        expect_code(ErrorCode.REQUEST_ID_REUSED, run, project, workspace, "intent: must two", request_id=request_id)
        assert ledger_count(project) == count
        return
    mutation = mutate(project, plan_for("1"), operation=op, params={"v": 1}, request_id=request_id)
    events, replayed = mutation.events, mutation.replayed
    assert events and not replayed
    count = ledger_count(project)
    mutation = mutate(project, plan_for("1"), operation=op, params={"v": 1}, request_id=request_id)
    events2, replayed2 = mutation.events, mutation.replayed
    assert replayed2 and [e["event_id"] for e in events2] == [e["event_id"] for e in events]
    expect_code(ErrorCode.REQUEST_ID_REUSED, mutate, project, plan_for("2"), operation=op, params={"v": 2},
                request_id=request_id)
    assert ledger_count(project) == count


# -- task ids ----------------------------------------------------------------------------------
def test_task_id_derived_from_request_id(project, workspace):
    receipt = run(project, workspace, "intent: goal derive me", request_id="prompt-abc")
    expected = tasks.derived_task_id(project.project_id, "prompt-abc#1")
    assert receipt.task_id == expected
    assert tasks.derived_task_id(project.project_id, "prompt-abc#1") == expected
    assert expected[14] == "5" and expected[19] in "89ab"
    assert tasks.derived_task_id(project.project_id, "prompt-abd#1") != expected
    # an exact retry resolves to the same task and writes nothing
    count = ledger_count(project)
    again = run(project, workspace, "intent: goal derive me", request_id="prompt-abc")
    assert again.replayed and ledger_count(project) == count
    assert list(state_of(project)["tasks"]) == [expected]
    # a different project gives a different id for the same request id
    assert tasks.derived_task_id("0" * 64, "prompt-abc#1") != expected


# -- off mode ------------------------------------------------------------------------------------
def test_off_mode_rejects_claims(project, workspace):
    run(project, workspace, "intent: goal before off")
    run(project, workspace, "intent: off")
    count = ledger_count(project)
    receipt = run(project, workspace, "intent: goal after off\nintent: must also not")
    assert [r.code for r in receipt.rejected] == [ErrorCode.TASK_OFF, ErrorCode.TASK_OFF]
    assert ledger_count(project) == count
    with open(project.ledger, "rb") as fh:
        assert b"after off" not in fh.read()
    expect_code(ErrorCode.TASK_OFF, mutate, project, lambda p: tasks.start_task(
        p, task_id=tasks.derived_task_id(project.project_id, "off2"), mode="off", initial_claims=[user_explicit()]))
    expect_code(ErrorCode.TASK_OFF, mutate, project, lambda p: tasks.start_task(
        p, task_id=tasks.derived_task_id(project.project_id, "off3"), mode="off", label="a label"))


# -- private mode ----------------------------------------------------------------------------------
def _scan(root, needles):
    hits = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                continue
            with open(path, "rb") as fh:
                data = fh.read()
            hits.extend((path, n) for n in needles if n.encode() in data)
    return hits


def test_private_mode_leaves_no_semantic_bytes(project, workspace):
    run(project, workspace, "intent: goal durable public goal")
    first_task = linked(project)["task_id"]
    before = ledger_count(project)
    receipt = run(project, workspace, "intent: private")
    assert not receipt.rejected
    private_task = linked(project)
    assert private_task["task_id"] != first_task
    assert private_task["mode"] == "private" and private_task["claims"] == {}
    assert private_task.get("label") is None
    control = private_mode.read_control(project, SESSION)
    assert control is not None and control["task_id"] == private_task["task_id"]
    assert sorted(os.listdir(project.private_dir)) == [SESSION + ".json"]
    new_events = reading.verify_all(project, REDUCER).count - before
    assert new_events <= 2  # task_started(private, empty) and the link; no claim text
    secrets = ["ZEBRA-private-goal-4711", "QUOKKA-must-not-9921", "private prefer walrus 33"]
    count = ledger_count(project)
    receipt = run(project, workspace, f"intent: goal {secrets[0]}\nintent: must-not {secrets[1]}\n"
                                      f"intent: prefer {secrets[2]}")
    assert not receipt.rejected
    assert [e.outcome for e in receipt.entries] == ["acknowledged"] * 3
    assert [(e.verb, e.ids) for e in receipt.entries] == [("goal", ()), ("must-not", ()), ("prefer", ())]
    assert receipt.notice == apply_commands.PRIVATE_NOTICE
    assert ledger_count(project) == count
    # the hook context is only the fixed notice
    _tid, text = apply_commands.session_context(state_of(project), project, SESSION)
    assert text.startswith(apply_commands.PRIVATE_NOTICE) and "durable public goal" not in text
    assert _scan(project.data_root, secrets) == []
    assert _scan(workspace, secrets) == []
    # `intent: on` removes the control file
    receipt = run(project, workspace, "intent: on")
    assert not receipt.rejected, receipt.rejected
    assert private_mode.read_control(project, SESSION) is None
    assert os.listdir(project.private_dir) == []
    assert linked(project)["task_id"] == first_task and linked(project)["mode"] == "on"  # back to the current task
    assert _scan(project.data_root, secrets) == []


def test_private_makes_only_this_session_private_and_leaves_the_current_task(project, workspace):
    """Issue 35 item 8: the workspace's current task, and so Guard's contract, stay as they were;
    verbs aimed at the durable task are refused until `intent: on`."""
    from intent_loop.intent.continuity import current_task_id

    run(project, workspace, "intent: goal ship it\nintent: ask action:publish")
    task_id = linked(project)["task_id"]
    ask = next(cid for cid, r in linked(project)["claims"].items() if "publish" in r["claim"]["statement"])
    run(project, workspace, "intent: private")
    assert current_task_id(state_of(project)) == task_id
    assert linked(project)["mode"] == "private" and linked(project)["task_id"] != task_id
    assert private_mode.read_control(project, SESSION)["task_id"] == linked(project)["task_id"]
    for line in (f"intent: approve {ask[:8]}", f"intent: drop {ask[:8]}", f"intent: replace {ask[:8]} allow: x",
                 "intent: confirm d4e58df6", "intent: dismiss d4e58df6"):
        receipt = run(project, workspace, line)
        assert [e.code for e in receipt.rejected] == [ErrorCode.TASK_PRIVATE], (line, receipt.entries)
        assert "intent: on" in receipt.rejected[0].reason
    assert current_task_id(state_of(project)) == task_id
    run(project, workspace, "intent: on")
    assert linked(project)["task_id"] == task_id and current_task_id(state_of(project)) == task_id


def test_private_control_cas_sequential(project):
    from intent_loop.storage.paths import ensure_project_layout

    ensure_project_layout(project)
    t1 = tasks.derived_task_id(project.project_id, "t1")
    t2 = tasks.derived_task_id(project.project_id, "t2")
    a, b = session_hash("A"), session_hash("B")
    with ProjectLock(project.dir, deadline=deadline()):
        private_mode.claim_control(project, session_hash=a, task_id=t1)
        private_mode.claim_control(project, session_hash=a, task_id=t1)  # idempotent for the owner
        expect_code(ErrorCode.PRIVATE_CONFLICT, private_mode.claim_control, project, session_hash=b, task_id=t1)
        expect_code(ErrorCode.PRIVATE_CONFLICT, private_mode.claim_control, project, session_hash=a, task_id=t2)
        expect_code(ErrorCode.PRIVATE_CONFLICT, private_mode.release_control, project, session_hash=a, task_id=t2)
        assert private_mode.release_control(project, session_hash=a, task_id=t1)
        private_mode.claim_control(project, session_hash=b, task_id=t1)
    assert private_mode.read_control(project, b)["task_id"] == t1
    assert private_mode.read_control(project, a) is None


_CAS_SCRIPT = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from intent_loop.storage import paths
from intent_loop.intent import private_mode
from intent_loop.errors import IntentLoopError
from intent_loop.storage.lock import ProjectLock
p = paths.project_paths(sys.argv[2], sys.argv[3])
paths.ensure_project_layout(p)
go = float(sys.argv[6])
while time.time() < go:
    time.sleep(0.001)
try:
    with ProjectLock(p.dir, deadline=time.monotonic() + 20):
        private_mode.claim_control(p, session_hash=sys.argv[4], task_id=sys.argv[5])
        time.sleep(0.2)
    print("ok")
except IntentLoopError as exc:
    print(exc.code)
"""


def test_private_control_cas_two_processes(project, workspace, tmp_path):
    task_id = tasks.derived_task_id(project.project_id, "shared")
    go = time.time() + 1.0
    env = dict(os.environ, HOME=str(tmp_path / "home-domain"), INTENT_LOOP_DATA_DIR=project.data_root)
    procs = [subprocess.Popen([sys.executable, "-c", _CAS_SCRIPT, os.path.join(REPO, "lib"), project.data_root,
                               workspace, session_hash(name), task_id, str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for name in ("proc-A", "proc-B")]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        outs.append(out.decode().strip())
    assert sorted(outs) == ["PRIVATE_CONFLICT", "ok"], outs
    assert len(private_mode.controls_for_task(project, task_id)) == 1


# -- long-term promotion ---------------------------------------------------------------------------
def _events(project):
    with open(project.ledger, "rb") as fh:
        return [ledger.loads(line) for line in fh.read().splitlines()]


def test_long_term_promotion_needs_three_tasks_and_confirmation(project, workspace):
    run(project, workspace, "intent: goal Keep the public API stable")
    run(project, workspace, "intent: new\nintent: goal keep the  public API STABLE")
    assert not [e for e in _events(project) if e["event_type"] == "candidate_added"]
    run(project, workspace, "intent: new\nintent: goal Keep the public API stable")
    run(project, workspace, "intent: new\nintent: goal Keep the public API stable")
    added = [e for e in _events(project) if e["event_type"] == "candidate_added"]
    assert len(added) == 1
    assert added[0]["actor"] == "system" and added[0]["payload"]["task_count"] == 3
    st = state_of(project)
    assert all(r["claim"]["scope"] == "task" for t in st["tasks"].values() for r in t["claims"].values())
    candidate_id = added[0]["payload"]["candidate_id"]
    task_id = linked(project)["task_id"]
    mutate(project, lambda p: tasks.confirm_candidate(p, task_id=task_id, candidate_id=candidate_id,
                                                      source_ref={"kind": "user_event", "event_id": "confirm-1"}))
    st = state_of(project)
    assert st["candidates"][candidate_id]["state"] == "confirmed"
    long_term = [r for r in st["tasks"][task_id]["claims"].values() if r["claim"]["scope"] == "long_term"]
    assert len(long_term) == 1
    claim = long_term[0]["claim"]
    assert claim["role"] == "user" and claim["epistemic_status"] == "explicit"
    assert claim["source_ref"]["kind"] == "user_event"
    expect_code(ErrorCode.CANDIDATE_NOT_FOUND, mutate, project, lambda p: tasks.confirm_candidate(
        p, task_id=task_id, candidate_id=candidate_id, source_ref={"kind": "user_event", "event_id": "c2"}))


def test_always_creates_long_term_explicit_claim(project, workspace):
    run(project, workspace, "intent: always use UTC timestamps")
    recs = list(linked(project)["claims"].values())
    assert recs[0]["claim"]["scope"] == "long_term" and recs[0]["claim"]["epistemic_status"] == "explicit"


# -- views ---------------------------------------------------------------------------------------
def test_hook_view_only_user_explicit_text(project, workspace):
    run(project, workspace, "intent: goal visible user goal\nintent: must-not touch prod")
    task_id = linked(project)["task_id"]
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id, claim=inferred("HIDDEN inferred text"),
                                              actor="agent"))
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id, claim=other_kind("evidence", "HIDDEN evidence text"),
                                              actor="evidence"))
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id, claim=other_kind("unknown", "HIDDEN unknown text"),
                                              actor="agent"))
    mutate(project, lambda p: tasks.add_claim(p, task_id=task_id,
                                              claim=other_kind("disputed", "HIDDEN disputed text"), actor="system"))
    view = views.hook_view(state_of(project), task_id)
    assert "visible user goal" in view and "must not: touch prod" in view
    assert "HIDDEN" not in view
    for kind in ("1 inferred", "1 evidence", "1 unknown", "1 disputed"):
        assert kind in view
    assert len(view) <= 2000


def test_hook_view_budget(project, workspace):
    prompt = "\n".join(f"intent: must requirement number {i:03d} " + "x" * 150 for i in range(12))
    run(project, workspace, prompt)
    run(project, workspace, prompt.replace("requirement", "second"))
    task_id = linked(project)["task_id"]
    view = views.hook_view(state_of(project), task_id)
    assert len(view) <= views.HOOK_BUDGET
    assert "more claims omitted" in view
    small = views.hook_view(state_of(project), task_id, budget=600)
    assert len(small) <= 600


def test_compact_view_deterministic_and_capped(project, workspace):
    prompt = "\n".join(f"intent: must item {i:03d}" for i in range(12))
    for block in range(4):
        run(project, workspace, prompt.replace("item", f"block{block} item"))
    task_id = linked(project)["task_id"]
    a = views.compact_view(state_of(project), task_id).encode()
    b = views.compact_view(reading.verify_all(project, REDUCER).state, task_id).encode()
    assert a == b
    assert b"more omitted" in a
    assert a.count(b"\n- ") <= views.COMPACT_RECORDS
    small = views.compact_view(state_of(project), task_id, max_records=5)
    assert "43 more omitted" in small
    chars = views.compact_view(state_of(project), task_id, max_chars=300)
    assert len(chars) <= 300 + 80 and "more omitted" in chars


def test_deleting_cache_gives_identical_state(project, workspace):
    run(project, workspace, "intent: goal cached goal\nintent: must a\nintent: forbid action:delete")
    run(project, workspace, "intent: new\nintent: goal second")
    first = canonical_bytes(state_of(project))
    view1 = views.compact_view(state_of(project), linked(project)["task_id"])
    assert os.listdir(project.cache_dir)
    shutil.rmtree(project.cache_dir)
    second = canonical_bytes(reading.load_verified(project, REDUCER, write_cache=False).state)
    assert first == second
    assert canonical_bytes(reading.verify_all(project, REDUCER).state) == first
    assert views.compact_view(state_of(project), linked(project)["task_id"]) == view1


def test_an_intent_loop_error_survives_pickling_with_its_fields():
    """Issue 26, item 5: a process pool or a multiprocessing queue hands errors on by pickling."""
    import pickle

    from intent_loop.errors import ErrorCode, IntentLoopError

    error = IntentLoopError(ErrorCode.LEDGER_CHAIN_BROKEN, "line 3 does not chain", line=3, details={"offset": 120})
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.code, copy.message, copy.line, copy.details, str(copy)) == \
        (IntentLoopError, error.code, error.message, 3, {"offset": 120}, str(error))

"""The Guard provider document: projection mapping, version semantics across real processes,
atomic publication seen by a concurrent reader, foreign files and withdrawal."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from intent_loop.guard import acceptance, contract_file, document, provider, publishing
from intent_loop.intent import prompt_commands, tasks
from intent_loop.intent.state import ProjectReducer
from intent_loop.ops import apply_commands
from intent_loop.storage import ledger, reading, transaction
from intent_loop.storage.paths import session_hash

REDUCER = ProjectReducer()
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LIB = os.path.join(REPO, "lib")
SESSION = session_hash("provider-session")
_n = [0]


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    home = tmp_path / "home-provider"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("EFG_CONTRACT_PATH", raising=False)


def run(project, workspace, prompt, *, publish=True, session=SESSION):
    _n[0] += 1
    return apply_commands.run_commands(
        project, commands=prompt_commands.parse_prompt(prompt), session_hash=session,
        source_ref={"kind": "user_event", "event_id": f"turn-{_n[0]}"}, request_id=f"p-{_n[0]}",
        deadline=time.monotonic() + 20, workspace=workspace, env={}, publish=publish)


def state_of(project):
    return reading.load_verified(project, REDUCER).state


def linked(project):
    st = state_of(project)
    return st["tasks"][st["sessions"][SESSION]]


def contract_path(workspace):
    return os.path.join(workspace, ".execution-fidelity", "contract.json")


def read_doc(workspace):
    with open(contract_path(workspace), "rb") as fh:
        data = fh.read()
    kind, doc, errors = contract_file.validate_document_bytes(data)
    assert kind == "provider" and errors == [], errors
    return doc


def publications(project):
    with open(project.ledger, "rb") as fh:
        events = [json.loads(line) for line in fh.read().splitlines()]
    return [e["payload"] for e in events if e["event_type"] == "contract_published"]


# -- projection mapping ------------------------------------------------------------------------
def test_projection_maps_every_field(project, workspace):
    run(project, workspace, "\n".join([
        "intent: goal ship the login page",
        "intent: object old object",
        "intent: surface web app",
        "intent: include src/login",
        "intent: exclude src/admin",
        "intent: must keep tests green",
        "intent: must-not change the database schema",
        "intent: allow action:read",
        "intent: ask action:publish",
        "intent: forbid command-prefix:rm -rf",
        "intent: done-when the login test passes (sources: test, file)",
        "intent: done-when a reviewer is happy",
        "intent: goal keep it accessible",
        "intent: object login page",
        "intent: surface web app",
        "intent: surface docs site",
        "intent: prefer small commits",
        "intent: tradeoff speed over polish",
    ]), publish=False)
    task = linked(project)
    # an unprefixed hard constraint counts as a must; inferred claims never feed the projection
    def plan(state):
        p = tasks.Plan(state, now="")
        tasks.add_claim(p, task_id=task["task_id"], claim=tasks.user_claim(
            p, statement="no downtime during deploy", facets=["hard_constraint"], scope="task",
            source_ref={"kind": "user_event", "event_id": "x1"}))
        from intent_loop.intent import claims as cm
        tasks.add_claim(p, task_id=task["task_id"], actor="agent", claim=cm.new_claim(
            claim_id=ledger.new_uuid4(), statement="INFERRED goal", facets=["outcome"], scope="task",
            source_ref={"kind": "agent_turn", "event_id": "a"}, valid_from="", role="agent",
            epistemic_status="inferred", confidence=0.5))
        return p.drafts

    transaction.mutate(project, REDUCER, request_id="extra-1", operation="x", params={}, plan=plan,
                  deadline=time.monotonic() + 20)
    proj = provider.projection_for(linked(project), project_root=workspace)
    assert proj == {
        "objective": "ship the login page; keep it accessible",
        "primary_object": "login page",
        "delivery_surface": ["web app", "docs site"],
        "scope": {"include": ["src/login"], "exclude": ["src/admin"]},
        "must_and_must_not": {"must": ["keep tests green", "no downtime during deploy"],
                              "must_not": ["change the database schema"]},
        "authorization": {"allowed": ["action:read"], "requires_user": ["action:publish"],
                          "forbidden": ["command-prefix:rm -rf"]},
        "completion_evidence": [
            {"requirement": "the login test passes", "acceptable_sources": ["test", "file"]},
            {"requirement": "a reviewer is happy", "acceptable_sources": ["user"]},
        ],
    }
    assert acceptance.validate_projection(proj) == []


def test_projection_defaults_and_incomplete(project, workspace):
    run(project, workspace, "intent: must only a constraint", publish=False)
    assert provider.projection_for(linked(project), project_root=workspace) is None
    run(project, workspace, "intent: goal the goal", publish=False)
    proj = provider.projection_for(linked(project), project_root=workspace)
    assert proj["objective"] == "the goal"
    assert proj["primary_object"] == os.path.basename(workspace)
    assert proj["delivery_surface"] == ["repository"]
    assert proj["scope"] == {"include": [], "exclude": []}
    assert proj["completion_evidence"] == [document.DEFAULT_EVIDENCE]
    assert proj["completion_evidence"][0]["acceptable_sources"] == ["user"]


def test_publication_document_and_gitignore(project, workspace):
    receipt = run(project, workspace, "intent: goal publish me")
    assert receipt.publication["action"] == "published"
    doc = read_doc(workspace)
    env = doc["envelope"]
    assert env["contract_ref"] == "intent:" + linked(project)["task_id"]
    assert env["contract_version"] == 1 and env["source"] == "user-intent-plugin"
    assert env["snapshot_sha256"] == document.projection_sha256(doc["projection"])
    with open(os.path.join(workspace, ".execution-fidelity", ".gitignore"), "rb") as fh:
        assert fh.read() == provider.GITIGNORE
    assert sorted(os.listdir(workspace)) == [".execution-fidelity"]


# -- version semantics in real processes -------------------------------------------------------------
_REFRESH = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from intent_loop.storage import ledger
from intent_loop.storage import reading
from intent_loop.storage import paths
from intent_loop.guard import provider
from intent_loop.storage import transaction
from intent_loop.intent.state import ProjectReducer
p = paths.project_paths(sys.argv[2], sys.argv[3])
count = int(sys.argv[4])
go = float(sys.argv[5]) if len(sys.argv) > 5 else 0
while time.time() < go:
    time.sleep(0.001)
out = []
for _ in range(count):
    with transaction.Transaction(p, ProjectReducer(), deadline=time.monotonic() + 30) as tx:
        r = provider.refresh(tx, workspace=sys.argv[3], env={})
    out.append([r["action"], r.get("version")])
print(json.dumps(out))
"""


def refresh_procs(project, workspace, *, procs=1, count=1, simultaneous=False):
    go = str(time.time() + 1.0) if simultaneous else "0"
    env = dict(os.environ)
    started = [subprocess.Popen([sys.executable, "-c", _REFRESH, LIB, project.data_root, workspace, str(count), go],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for _ in range(procs)]
    results = []
    for proc in started:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        results.extend(json.loads(out))
    return results


def test_versions_unchanged_refreshes_and_changes(project, workspace):
    run(project, workspace, "intent: goal version me", publish=False)
    results = refresh_procs(project, workspace, procs=5, count=10)
    assert len(results) == 50
    assert sorted(results) == [["published", 1]] + [["unchanged", 1]] * 49, results
    assert [p["contract_version"] for p in publications(project)] == [1]
    for expected in (2, 3, 4):
        run(project, workspace, f"intent: must change {expected}", publish=False)
        results = refresh_procs(project, workspace, count=3)
        assert results == [["published", expected], ["unchanged", expected], ["unchanged", expected]]
        assert read_doc(workspace)["envelope"]["contract_version"] == expected
    assert [p["contract_version"] for p in publications(project)] == [1, 2, 3, 4]


def test_twenty_concurrent_refreshes_make_one_version(project, workspace):
    run(project, workspace, "intent: goal concurrency", publish=False)
    refresh_procs(project, workspace)
    run(project, workspace, "intent: must one more", publish=False)
    results = refresh_procs(project, workspace, procs=20, simultaneous=True)
    assert sorted(r[0] for r in results) == ["published"] + ["unchanged"] * 19
    assert all(r[1] == 2 for r in results)
    assert [p["contract_version"] for p in publications(project)] == [1, 2]
    assert read_doc(workspace)["envelope"]["contract_version"] == 2
    reading.verify_all(project, REDUCER)


def test_deleted_cache_never_reuses_a_version(project, workspace):
    run(project, workspace, "intent: goal cache test", publish=False)
    assert refresh_procs(project, workspace) == [["published", 1]]
    shutil.rmtree(project.cache_dir)
    assert refresh_procs(project, workspace) == [["unchanged", 1]]
    run(project, workspace, "intent: must changed", publish=False)
    shutil.rmtree(project.cache_dir)
    assert refresh_procs(project, workspace) == [["published", 2]]
    shutil.rmtree(project.cache_dir)
    os.unlink(contract_path(workspace))  # a takeover (issue 33): the recorded v2 goes back as it was
    assert refresh_procs(project, workspace) == [["restored", 2]]
    versions = [p["contract_version"] for p in publications(project)]
    assert versions == [1, 2]
    assert read_doc(workspace)["envelope"]["contract_version"] == 2


_READER = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
from intent_loop.guard import contract_file, document
path, stop = sys.argv[2], sys.argv[3]
reads, bad, last, missing = 0, [], 0, 0
while not os.path.exists(stop):
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        missing += 1
        continue
    reads += 1
    kind, doc, errors = contract_file.validate_document_bytes(data)
    if kind != "provider" or errors:
        bad.append(["invalid", kind, errors[:2]])
        continue
    env = doc["envelope"]
    if env["snapshot_sha256"] != document.projection_sha256(doc["projection"]):
        bad.append(["hash"])
    if env["contract_version"] < last:
        bad.append(["older", env["contract_version"], last])
    last = max(last, env["contract_version"])
print(json.dumps({"reads": reads, "bad": bad[:5], "nbad": len(bad), "last": last, "missing": missing}))
"""


def test_reader_never_sees_partial_or_older_document(project, workspace, tmp_path):
    run(project, workspace, "intent: goal reader test")
    stop = str(tmp_path / "stop-reader")
    reader = subprocess.Popen([sys.executable, "-c", _READER, LIB, contract_path(workspace), stop],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        n = 0
        while n < 150 and time.monotonic() < deadline:
            n += 1
            receipt = run(project, workspace, f"intent: must requirement {n}")
            assert receipt.publication["action"] == "published"
    finally:
        open(stop, "w").close()
        out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err.decode()
    result = json.loads(out)
    assert result["nbad"] == 0, result
    assert result["missing"] == 0, result
    assert result["reads"] > 100
    assert read_doc(workspace)["envelope"]["contract_version"] == n + 1
    reading.verify_all(project, REDUCER)


# -- foreign files and withdrawal ----------------------------------------------------------------------
LITE = {"objective": "user's own contract", "primary_object": "x", "delivery_surface": ["repository"],
        "scope": {"include": [], "exclude": []}, "must_and_must_not": {"must": [], "must_not": []},
        "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
        "completion_evidence": [{"requirement": "it works", "acceptable_sources": ["test"]}]}


def _other_provider_doc():
    doc = document.build_document(LITE, contract_ref="other:abc", contract_version=7, source_message_refs=[],
                                  updated_at="2026-01-01T00:00:00.000Z")
    return document.render_document(doc)


def _snapshot(path):
    if os.path.islink(path):
        return ("link", os.readlink(path))
    if os.path.isdir(path):
        return ("dir", sorted(os.listdir(path)), os.stat(path).st_mtime_ns)
    with open(path, "rb") as fh:
        return ("file", fh.read(), os.stat(path).st_mtime_ns)


@pytest.mark.parametrize("kind", ["lite", "other_provider", "directory", "symlink", "garbage", "stale_ours_copy"])
def test_foreign_files_are_never_modified(project, workspace, tmp_path, kind):
    path = contract_path(workspace)
    os.makedirs(os.path.dirname(path))
    target = tmp_path / "symlink-target.json"
    target.write_bytes(json.dumps(LITE).encode())
    if kind == "lite":
        with open(path, "w") as fh:
            json.dump(LITE, fh)
    elif kind == "other_provider":
        with open(path, "wb") as fh:
            fh.write(_other_provider_doc())
    elif kind == "directory":
        os.mkdir(path)
        open(os.path.join(path, "inner"), "w").close()
    elif kind == "symlink":
        os.symlink(target, path)
    elif kind == "garbage":
        with open(path, "wb") as fh:
            fh.write(b"\xff\xfe\x00garbage{{{" * 50)
    else:  # a provider document claiming our ref but a version/hash never published
        doc = document.build_document(LITE, contract_ref="intent:" + ledger.new_uuid4(), contract_version=1,
                                      source_message_refs=[], updated_at="2026-01-01T00:00:00.000Z")
        with open(path, "wb") as fh:
            fh.write(document.render_document(doc))
    before = _snapshot(path)
    target_before = target.read_bytes()
    receipt = run(project, workspace, "intent: goal should not clobber")
    assert receipt.publication["action"] == "foreign", receipt.publication
    for prompt in ("intent: must more", "intent: off"):
        receipt = run(project, workspace, prompt)
        assert receipt.publication["action"] == "foreign", receipt.publication
    assert _snapshot(path) == before
    assert target.read_bytes() == target_before
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        assert provider.refresh(tx, workspace=workspace, env={})["action"] == "foreign"
    assert _snapshot(path) == before


@pytest.mark.parametrize("how", ["drop_goal", "off", "new_empty_task"])
def test_our_file_removed_when_no_task_qualifies(project, workspace, how):
    """(`intent: private` is not one of these since issue 35 item 8: it leaves the current task and
    its contract to the other sessions: test_private_keeps_the_contract below.)"""
    run(project, workspace, "intent: goal removable goal\nintent: must stay")
    path = contract_path(workspace)
    assert os.path.exists(path)
    if how == "drop_goal":
        goal = next(cid for cid, r in linked(project)["claims"].items() if r["claim"]["statement"] == "removable goal")
        receipt = run(project, workspace, f"intent: drop {goal[:8]}")
    elif how == "off":
        receipt = run(project, workspace, "intent: off")
    else:
        receipt = run(project, workspace, "intent: new")
    assert not receipt.rejected, receipt.rejected
    assert not os.path.exists(path)
    assert receipt.publication is None or receipt.publication["action"] in ("removed", "absent")
    # a second refresh keeps it absent and touches nothing
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        assert provider.refresh(tx, workspace=workspace, env={})["action"] == "absent"
    assert not os.path.exists(path)


def test_efg_contract_path_resolved_against_workspace(project, workspace):
    env = {"EFG_CONTRACT_PATH": "custom/c.json"}
    assert provider.provider_path(workspace, env) == os.path.join(workspace, "custom", "c.json")
    assert provider.provider_path(workspace, {}) == contract_path(workspace)


@pytest.mark.parametrize("value, expected", [
    ("guard.json ", "guard.json"),  # Guard trims the value (JavaScript trim())
    ("\u00a0\ufeffcustom/c.json\u2028", "custom/c.json"),
    ("  ", None),  # blank: unset, the default path applies
    ("", None),
    ("sub/../c.json", "c.json"),  # resolved lexically, as path.resolve does
])
def test_efg_contract_path_is_trimmed_and_resolved_as_guard_does(workspace, value, expected):
    path = provider.provider_path(workspace, {"EFG_CONTRACT_PATH": value})
    assert path == (os.path.join(workspace, expected) if expected else contract_path(workspace))


@pytest.mark.parametrize("how", ["symlinked-directory", "dot-dot", "absolute-elsewhere"])
def test_a_guard_path_outside_the_project_is_never_written(project, workspace, tmp_path, how):
    outside = tmp_path / "outside"
    outside.mkdir()
    if how == "symlinked-directory":
        os.symlink(outside, os.path.join(workspace, "config"))
        value = "config/guard/contract.json"
    elif how == "dot-dot":
        value = "../outside/contract.json"
    else:
        value = str(outside / "contract.json")
    run(project, workspace, "intent: goal ship it")
    env = {"EFG_CONTRACT_PATH": value}
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        result = publishing.refresh_quietly(tx, workspace=workspace, env=env)
    assert result["action"] == "outside" and result["code"] == "PROVIDER_PATH_OUTSIDE"
    assert list(outside.rglob("*")) == []  # neither the document nor a .gitignore
    assert not os.path.exists(os.path.join(workspace, "config", "guard"))


def test_an_oversized_contract_is_never_published_nor_withdrawn(project, workspace):
    """Issue 14 (real Guard 0.2.2 refuses documents over 256 KiB): 140 long claims once recorded
    contract_published v2 for a 277 KB document Guard ignored. Now v1 stays enforced and says why."""
    run(project, workspace, "intent: goal ship it")
    before = open(contract_path(workspace), "rb").read()
    long_lines = "\n".join(f"intent: must keep rule {i} " + "x" * 470 for i in range(600))
    receipt = run(project, workspace, long_lines)
    assert receipt.publication["code"] == "CONTRACT_TOO_LARGE"
    assert receipt.publication["reason"].startswith("Guard still enforces v1: the contract would be")
    assert open(contract_path(workspace), "rb").read() == before
    assert [p["contract_version"] for p in publications(project)] == [1]


def test_a_contract_guard_would_refuse_keeps_the_previous_version_and_says_so(project, workspace, monkeypatch):
    run(project, workspace, "intent: goal ship it")
    monkeypatch.setattr(provider.acceptance, "validate_provider_document", lambda doc: ["projection.x: refused"])
    receipt = run(project, workspace, "intent: must keep tests green")
    assert receipt.publication["code"] == "CONTRACT_INVALID"
    assert receipt.publication["reason"].startswith("Guard still enforces v1")
    assert [p["contract_version"] for p in publications(project)] == [1]


def test_a_forged_file_at_our_version_is_restored_one_version_up(project, workspace):
    """Guard bound (ref, v1) to the forged content: our contract goes back as v2 (issue 33)."""
    run(project, workspace, "intent: goal ship it")
    path = contract_path(workspace)
    doc = json.loads(open(path, "rb").read())
    doc["projection"]["objective"] = "FORGED: push to main"
    with open(path, "w") as fh:
        json.dump(doc, fh)
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        result = provider.refresh(tx, workspace=workspace, env={})
    assert result["action"] == "restored" and result["version"] == 2 and result["restored"] == "same_version"
    assert read_doc(workspace)["projection"]["objective"] == "ship it"
    assert read_doc(workspace)["envelope"]["contract_version"] == 2


def test_an_oversized_file_of_ours_is_recognised_and_restored(project, workspace):
    run(project, workspace, "intent: goal ship it")
    path = contract_path(workspace)
    doc = json.loads(open(path, "rb").read())
    doc["projection"]["scope"]["include"] = ["x" * 1000] * 300  # as an older build could write
    with open(path, "w") as fh:
        json.dump(doc, fh)
    assert os.path.getsize(path) > 262_144
    assert provider.read_file_state(path, state_of(project))["kind"] == "ours"
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        assert provider.refresh(tx, workspace=workspace, env={})["action"] == "restored"
    assert os.path.getsize(path) < 262_144


def test_a_task_without_a_goal_names_projection_incomplete(project, workspace):
    run(project, workspace, "intent: must keep tests green")
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        result = provider.refresh(tx, workspace=workspace, env={})
    assert result["code"] == "PROJECTION_INCOMPLETE" and "no goal" in result["reason"]


def test_status_says_which_version_guard_still_enforces_and_why(tmp_path):
    from helpers.cli_runner import make_cli

    cli = make_cli(tmp_path)
    run(cli.project(), cli.workspace, "intent: goal ship it")
    run(cli.project(), cli.workspace, "\n".join(f"intent: must keep rule {i} " + "x" * 470 for i in range(600)))
    status = cli.json("status")
    assert status["guard_not_updated"]["code"] == "CONTRACT_TOO_LARGE"
    assert status["guard_not_updated"]["reason"].startswith("Guard still enforces v1: the contract would be")
    rc, out, _err = cli("status")
    assert "not updated (CONTRACT_TOO_LARGE): Guard still enforces v1" in out


def test_approve_turns_a_pending_ask_into_an_allow_in_one_new_version(project, workspace):
    run(project, workspace, "intent: goal ship it\nintent: ask action:network")
    ask_id = next(cid for cid, r in linked(project)["claims"].items() if r["claim"]["statement"].startswith("ask:"))
    assert read_doc(workspace)["projection"]["authorization"]["requires_user"] == ["action:network"]
    receipt = run(project, workspace, f"intent: approve {ask_id[:8]}")
    [approved] = [e for e in receipt.entries if e.outcome == "approved"]
    allow_id = next(cid for cid, r in linked(project)["claims"].items()
                    if r["claim"]["statement"] == "allow: action:network")
    assert approved.ids == (ask_id[:8], allow_id[:8]) and approved.extra["rule"] == "action:network"
    auth = read_doc(workspace)["projection"]["authorization"]
    assert auth["allowed"] == ["action:network"] and auth["requires_user"] == []
    assert [p["contract_version"] for p in publications(project)] == [1, 2]
    assert linked(project)["claims"][ask_id]["state"] == "superseded"


def test_approve_on_any_other_claim_is_invalid_argument(project, workspace):
    run(project, workspace, "intent: goal ship it")
    goal_id = next(iter(linked(project)["claims"]))
    receipt = run(project, workspace, f"intent: approve {goal_id[:8]}")
    assert [e.code for e in receipt.rejected] == ["INVALID_ARGUMENT"]


def test_private_keeps_the_contract(project, workspace):
    """Issue 35 item 8: one session going private does not lift the user's rules for the others."""
    run(project, workspace, "intent: goal kept goal\nintent: forbid action:network")
    path = contract_path(workspace)
    before = _snapshot(path)
    receipt = run(project, workspace, "intent: private")
    assert not receipt.rejected, receipt.rejected
    assert _snapshot(path) == before

"""Issue 33 item 3 through the built hooks: while our task is on and we hold the Guard path, any
other content there is a takeover, restored as we last published it (one version up only when the
other file reused our version), recorded as a `contract_restored` event, its bytes kept under the
data root, and told once to the user and the model; the REAL Guard 0.2.2 loader then binds ours."""
import json
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import cli, events, fixture, hook, project_of, prompt_payload
from intent_loop.guard import document
from intent_loop.ops.receipts import restoration_note, restored_text

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws

# Guard 0.2.2 lies in shared/ beside the checkout (CI lays a copy there), else where this workplace keeps it
_LOADER_IN_SHARED = "efg-0.2.2/plugins/execution-fidelity-guard/src/contract.mjs"
GUARD_LOADER = next((str(place / _LOADER_IN_SHARED) for place in
                     (Path(__file__).resolve().parents[3] / "shared", Path("/work/shared"))
                     if (place / _LOADER_IN_SHARED).exists()), "/work/shared/" + _LOADER_IN_SHARED)
_LOAD = """
import { pathToFileURL } from "node:url";
const { loadContract } = await import(pathToFileURL(process.argv[2]).href);
const r = await loadContract({ cwd: process.argv[3] }, { env: {} });
console.log(JSON.stringify({ status: r.status, ref: r.envelope?.contract_ref ?? null,
  version: r.envelope?.contract_version ?? null, hash: r.envelope?.snapshot_sha256 ?? null,
  forbidden: r.contract?.authorization?.forbidden ?? null, errors: r.errors ?? [] }));
"""
LITE = {"objective": "the agent's own contract", "primary_object": "x", "delivery_surface": ["repository"],
        "scope": {"include": [], "exclude": []}, "must_and_must_not": {"must": [], "must_not": []},
        "authorization": {"allowed": ["action:network"], "requires_user": [], "forbidden": []},
        "completion_evidence": [{"requirement": "done", "acceptable_sources": ["user"]}]}


def guard_binds(tmp_path, cwd):
    """What Guard 0.2.2's own loader makes of the file at `cwd`'s Guard path (node runs it)."""
    node = shutil.which("node")
    if node is None or not os.path.exists(GUARD_LOADER):
        if os.environ.get("CI") == "true":
            pytest.fail("node and Guard 0.2.2's loader are required under CI")
        pytest.skip("node or Guard 0.2.2 (../shared/efg-0.2.2) is missing: the real loader cannot run")
    script = tmp_path / "load.mjs"
    script.write_text(_LOAD)
    done = subprocess.run([node, str(script), GUARD_LOADER, cwd], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def guard_path(ws):
    return os.path.join(ws, ".execution-fidelity", "contract.json")


def _forged(ours, *, version=None, ref=None):
    """What the attacker did: our contract without its rules, re-hashed, under a version of choice."""
    projection = dict(ours["projection"], authorization={"allowed": ["action:network"], "requires_user": [],
                                                         "forbidden": []},
                      must_and_must_not={"must": [], "must_not": []})
    env_ = ours["envelope"]
    doc = document.build_document(projection, contract_ref=ref or env_["contract_ref"],
                                  contract_version=env_["contract_version"] if version is None else version,
                                  source_message_refs=[], updated_at="2026-01-01T00:00:00.000Z")
    return document.render_document(doc)


TAKEOVERS = {  # class -> (what the agent writes, or None to delete; what is found; version restored - ours)
    "equal_to_ours": (lambda ours: _forged(ours), "same_version", 1),
    "ours_plus_one": (lambda ours: _forged(ours, version=ours["envelope"]["contract_version"] + 1),
                      "other_version", 0),
    "two_to_the_53_minus_1": (lambda ours: _forged(ours, version=2 ** 53 - 1), "other_version", 0),
    "another_ref": (lambda ours: _forged(ours, ref=f"intent:{uuid.uuid4()}", version=1), "other_ref", 0),
    "task_contract_lite": (lambda ours: json.dumps(LITE, indent=2).encode() + b"\n", "lite", 0),
    "empty": (lambda ours: b"", "emptied", 0),
    "deleted": (None, "missing", 0),
}


def _publish_ours(tmp_path, env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship the parser\nintent: forbid action:network",
                                            turn="t1"), env)
    with open(guard_path(ws), "rb") as fh:
        ours = json.loads(fh.read())
    bound = guard_binds(tmp_path, ws)
    assert (bound["status"], bound["ref"], bound["version"]) == \
        ("bound", ours["envelope"]["contract_ref"], ours["envelope"]["contract_version"]), bound
    return ours


def _take_over(ws, ours, name):
    make = TAKEOVERS[name][0]
    if make is None:
        os.unlink(guard_path(ws))
        return None
    data = make(ours)
    with open(guard_path(ws), "wb") as fh:
        fh.write(data)
    return data


@pytest.mark.parametrize("trigger", ["Stop", "prompt without commands"])
@pytest.mark.parametrize("name", list(TAKEOVERS))
def test_a_takeover_is_restored_told_once_and_guard_binds_ours(tmp_path, env, ws, name, trigger):
    ours = _publish_ours(tmp_path, env, ws)
    ref, version, digest = (ours["envelope"][k] for k in ("contract_ref", "contract_version", "snapshot_sha256"))
    count = len(events(env, ws))
    replaced = _take_over(ws, ours, name)
    if trigger == "Stop":
        hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    else:  # its one lstat sees the change; the restoration runs after its answer
        hook("UserPromptSubmit", prompt_payload(ws, "please go on", turn="t2"), env)
    _found, expected_class, up = TAKEOVERS[name]
    restored_version = version + up
    bound = guard_binds(tmp_path, ws)
    assert (bound["status"], bound["ref"], bound["version"], bound["hash"]) == \
        ("bound", ref, restored_version, digest), bound
    assert bound["forbidden"] == ["action:network"]
    new = events(env, ws)[count:]
    restorations = [e for e in new if e["event_type"] == "contract_restored"]
    assert len(restorations) == 1, [e["event_type"] for e in new]
    payload = restorations[0]["payload"]
    assert (payload["found"], payload["contract_ref"], payload["contract_version"], payload["snapshot_sha256"]) == \
        (expected_class, ref, restored_version, digest)
    assert restorations[0]["actor"] == "system"
    published = [e["payload"]["contract_version"] for e in new if e["event_type"] == "contract_published"]
    assert published == ([restored_version] if up else [])
    if replaced is None:
        assert payload["kept"] is None
    else:  # the replaced bytes are kept under the data root, so a hand edit is never lost
        with open(os.path.join(project_of(env, ws).dir, payload["kept"]), "rb") as fh:
            assert fh.read() == replaced[:262_144]
    # told once: the next prompt's receipt (user) and context (model), then never again
    _out, told, _t = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t3"), env)
    words = restored_text(expected_class, restored_version)
    assert told["systemMessage"] == "intent-loop: " + words
    assert told["hookSpecificOutput"]["additionalContext"].startswith(restoration_note(words))
    _out, again, _t = hook("UserPromptSubmit", prompt_payload(ws, "once more", turn="t4"), env)
    assert "systemMessage" not in again and words not in json.dumps(again)
    assert len([e for e in events(env, ws) if e["event_type"] == "contract_restored"]) == 1


def test_after_a_forged_2_to_the_53_minus_1_the_next_change_publishes_the_next_version(tmp_path, env, ws):
    ours = _publish_ours(tmp_path, env, ws)
    _take_over(ws, ours, "two_to_the_53_minus_1")
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep the API", turn="t2"), env)
    version = ours["envelope"]["contract_version"] + 1
    words = restored_text("other_version", version)
    assert answer["systemMessage"].startswith("intent-loop: " + words), answer
    assert answer["hookSpecificOutput"]["additionalContext"].startswith(restoration_note(words))
    _out, again, _t = hook("UserPromptSubmit", prompt_payload(ws, "go on", turn="t3"), env)
    assert words not in json.dumps(again)
    bound = guard_binds(tmp_path, ws)
    assert (bound["status"], bound["version"], bound["forbidden"]) == ("bound", version, ["action:network"])
    proc, _t = cli(env, ws, "contract", "publish", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["action"] == "unchanged", proc.stdout


def test_the_restoration_is_in_the_log_and_status_finds_the_file_bound(tmp_path, env, ws):
    ours = _publish_ours(tmp_path, env, ws)
    _take_over(ws, ours, "task_contract_lite")
    proc, _t = cli(env, ws, "contract", "show", "--json")  # before the next refresh: named, not yet restored
    shown = json.loads(proc.stdout)
    assert (shown["file_state"], shown["takeover"]) == ("foreign", "lite"), shown
    proc, _t = cli(env, ws, "status", "--json")
    assert json.loads(proc.stdout)["guard"].startswith("Guard file changed outside intent-loop")
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    proc, _t = cli(env, ws, "log")
    assert proc.returncode == 0 and "the Guard file was changed outside intent-loop" in proc.stdout, proc.stdout
    proc, _t = cli(env, ws, "status", "--json")
    version = ours["envelope"]["contract_version"]
    status = json.loads(proc.stdout)
    assert status["guard"].startswith(f"Guard reads contract v{version}")
    assert [row["guard_restorations"] for row in status["tasks"]] == [1]


def test_a_file_written_after_intent_off_is_the_users_and_never_touched(tmp_path, env, ws):
    _publish_ours(tmp_path, env, ws)
    hook("UserPromptSubmit", prompt_payload(ws, "intent: off", turn="t2"), env)
    assert not os.path.exists(guard_path(ws))  # withdrawn
    users = json.dumps(LITE, indent=2).encode() + b"\n"
    with open(guard_path(ws), "wb") as fh:
        fh.write(users)
    count = len(events(env, ws))
    hook("UserPromptSubmit", prompt_payload(ws, "please go on", turn="t3"), env)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t3"), env)
    hook("UserPromptSubmit", prompt_payload(ws, "intent: on", turn="t4"), env)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t4"), env)
    with open(guard_path(ws), "rb") as fh:
        assert fh.read() == users
    assert not [e for e in events(env, ws)[count:] if e["event_type"] == "contract_restored"]
    assert guard_binds(tmp_path, ws)["ref"].startswith("lite:")


@pytest.mark.parametrize("where", ["inside the workspace", "another project"])
def test_a_folder_replaced_by_a_link_is_restored_and_its_target_never_touched(tmp_path, env, ws, where):
    ours = _publish_ours(tmp_path, env, ws)
    target = os.path.join(ws, "elsewhere") if where == "inside the workspace" else str(tmp_path / "other" / "efg")
    os.makedirs(target)
    forged = _forged(ours)
    with open(os.path.join(target, "contract.json"), "wb") as fh:
        fh.write(forged)
    shutil.rmtree(os.path.dirname(guard_path(ws)))
    os.symlink(target, os.path.dirname(guard_path(ws)))
    assert guard_binds(tmp_path, ws)["forbidden"] == []  # Guard now enforces the forged file
    count = len(events(env, ws))
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    assert not os.path.islink(os.path.dirname(guard_path(ws)))
    bound = guard_binds(tmp_path, ws)
    envelope = ours["envelope"]
    assert (bound["status"], bound["ref"], bound["hash"]) == ("bound", envelope["contract_ref"],
                                                              envelope["snapshot_sha256"]), bound
    assert bound["version"] == envelope["contract_version"] + 1  # the forged file named our version
    assert os.listdir(target) == ["contract.json"]
    with open(os.path.join(target, "contract.json"), "rb") as fh:
        assert fh.read() == forged
    found = [e["payload"]["found"] for e in events(env, ws)[count:] if e["event_type"] == "contract_restored"]
    assert found == ["link"]
    _out, told, _t = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t3"), env)
    assert told["systemMessage"] == "intent-loop: " + restored_text("link", bound["version"])


def test_deleting_the_task_removes_the_kept_bytes_and_the_record_naming_it(tmp_path, env, ws):
    ours = _publish_ours(tmp_path, env, ws)
    _take_over(ws, ours, "equal_to_ours")  # the kept bytes name the task and hold its words
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    project = project_of(env, ws)
    kept = [e["payload"]["kept"] for e in events(env, ws) if e["event_type"] == "contract_restored"]
    assert len(kept) == 1 and os.path.exists(os.path.join(project.dir, kept[0]))
    task = ours["envelope"]["contract_ref"][len("intent:"):]
    proc, _t = cli(env, ws, "delete", "task", task, "--confirm", f"DELETE TASK {task}", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["scan"]["clean"], report
    assert not os.path.exists(os.path.join(project.dir, kept[0]))


def test_intent_off_after_a_takeover_withdraws_it_too_and_keeps_its_bytes(tmp_path, env, ws):
    ours = _publish_ours(tmp_path, env, ws)
    agents = _take_over(ws, ours, "task_contract_lite")
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: off", turn="t2"), env)
    assert not os.path.exists(guard_path(ws))  # what stood in for ours goes with it
    kept = os.listdir(os.path.join(project_of(env, ws).dir, "guard-replaced"))
    assert len(kept) == 1
    with open(os.path.join(project_of(env, ws).dir, "guard-replaced", kept[0]), "rb") as fh:
        assert fh.read() == agents
    assert guard_binds(tmp_path, ws)["status"] == "unbound"


def test_a_takeover_between_sessions_is_restored_by_the_next_sessionstart(tmp_path, env, ws):
    ours = _publish_ours(tmp_path, env, ws)
    _take_over(ws, ours, "task_contract_lite")
    count = len(events(env, ws))
    hook("SessionStart", fixture("session_start.resume.json", ws, session_id="sess-1"), env)
    bound = guard_binds(tmp_path, ws)
    assert (bound["status"], bound["ref"], bound["version"]) == \
        ("bound", ours["envelope"]["contract_ref"], ours["envelope"]["contract_version"]), bound
    found = [e["payload"]["found"] for e in events(env, ws)[count:] if e["event_type"] == "contract_restored"]
    assert found == ["lite"]
    _out, told, _t = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t3"), env)
    # the receipt line; what Guard enforces in this session follows on a line of its own (issue 34)
    assert told["systemMessage"].splitlines()[0].endswith(restored_text("lite", ours["envelope"]["contract_version"]))

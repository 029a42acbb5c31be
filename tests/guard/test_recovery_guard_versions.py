"""Issue 12 item 3 through the built binaries: `recover --apply` keeps Guard's versions.

Before: recovery dropped the damaged suffix's `contract_published` events, so our Guard file was
treated as foreign (frozen at its old content, `doctor` said `[ok] guard_file: foreign`), and once
it was deleted the version went from 2 back to 1 with a different hash. Now the highest version
ever published is carried across the cut (`contract_version_floor`), the Guard file is re-published
above it, and `doctor` names a file of ours at a version the ledger never recorded."""
import json
import os

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import cli, hook, project_of, prompt_payload
from intent_loop.guard import document

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws


def _guard(ws):
    with open(os.path.join(ws, ".execution-fidelity", "contract.json"), "rb") as fh:
        return json.loads(fh.read())["envelope"]


def _lines(project):
    with open(project.ledger, "rb") as fh:
        return fh.read().splitlines()


def _published(project):
    return [(p["contract_ref"], p["contract_version"], p["snapshot_sha256"]) for p in
            (json.loads(line)["payload"] for line in _lines(project)
             if json.loads(line)["event_type"] == "contract_published")]


def _damage_line_of(project, event_type, nth=1):
    """Change one byte of the claim text inside the nth `event_type` line (its hash no longer matches)."""
    lines = _lines(project)
    index = [i for i, line in enumerate(lines) if json.loads(line)["event_type"] == event_type][nth - 1]
    lines[index] = lines[index].replace(b"keep the api", b"KEEP the api", 1)
    assert b"KEEP" in lines[index]
    with open(project.ledger, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines))
    return index + 1


def _two_versions(env, ws):
    """goal (Guard v1 at the prompt), then a must (v2): the v2 publication follows the damage."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    proc, _t = cli(env, ws, "claim", "add", "must", "keep", "the", "api", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["publication"]["version"] == 2
    project = project_of(env, ws)
    before = _guard(ws)
    assert before["contract_version"] == 2
    first_bad = _damage_line_of(project, "claim_added")
    return project, before, first_bad


def test_recover_apply_carries_guards_version_and_republishes_above_it(env, ws):
    project, before, first_bad = _two_versions(env, ws)
    proc, _t = cli(env, ws, "recover", "--apply", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["applied"] and result["first_bad_line"] == first_bad
    ref = before["contract_ref"]
    assert result["version_floors"] == {ref: 2}
    assert result["guard"]["action"] == "published" and result["guard"]["version"] == 3
    # the floor is recorded in the recovered ledger, carrying the manifest's digest
    floor = [json.loads(line) for line in _lines(project) if json.loads(line)["event_type"] == "contract_version_floor"]
    assert len(floor) == 1 and floor[0]["actor"] == "system" and floor[0]["task_id"] is None
    assert floor[0]["payload"]["floors"] == {ref: 2}
    manifest_path = os.path.join(project.quarantine_dir, floor[0]["payload"]["manifest"])
    import hashlib
    assert floor[0]["payload"]["manifest_sha256"] == hashlib.sha256(open(manifest_path, "rb").read()).hexdigest()
    assert json.load(open(manifest_path))["contract_version_floors"] == {ref: 2}
    # the Guard file matches the recovered state at a version Guard never saw
    after = _guard(ws)
    assert after["contract_ref"] == ref and after["contract_version"] == 3
    proc, _t = cli(env, ws, "verify", "--json")
    assert proc.returncode == 0
    proc, _t = cli(env, ws, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["guard_file"]["ok"] and checks["guard_file"]["detail"] == "ours version 3", checks["guard_file"]
    # new publications continue above it, also after the file and the cache are deleted
    os.unlink(os.path.join(ws, ".execution-fidelity", "contract.json"))
    for name in os.listdir(project.cache_dir):
        path = os.path.join(project.cache_dir, name)
        if os.path.isfile(path):
            os.unlink(path)
    proc, _t = cli(env, ws, "claim", "add", "must", "keep", "tests", "green", "--json")
    assert json.loads(proc.stdout)["publication"]["version"] == 4
    versions = [(r, v) for r, v, _h in _published(project)]
    assert versions == [(ref, 1), (ref, 3), (ref, 4)]
    assert (before["contract_version"], before["snapshot_sha256"]) not in [(v, h) for _r, v, h in _published(project)
                                                                           if v == 2]


def test_recover_text_says_what_it_did_with_guard(env, ws):
    _two_versions(env, ws)
    proc, _t = cli(env, ws, "recover", "--apply")
    assert proc.returncode == 0, proc.stderr
    assert "Guard versions carried across the cut (contract_version_floor):" in proc.stdout
    assert "guard file published version 3 at " in proc.stdout


def test_an_earlier_recoverys_floor_survives_a_second_recovery_that_loses_it(env, ws):
    """The floor event can itself end up in a damaged suffix; the first recovery's manifest keeps it."""
    project, before, _first_bad = _two_versions(env, ws)
    assert cli(env, ws, "recover", "--apply")[0].returncode == 0  # v3 published above the floor 2
    os.unlink(os.path.join(ws, ".execution-fidelity", "contract.json"))  # and Guard's copy is gone
    lines = _lines(project)
    floor_index = next(i for i, line in enumerate(lines)
                       if json.loads(line)["event_type"] == "contract_version_floor")
    lines[floor_index] = lines[floor_index].replace(b'"floors":{', b'"floors": {', 1)  # not canonical now
    with open(project.ledger, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines))
    proc, _t = cli(env, ws, "recover", "--apply", "--json")
    result = json.loads(proc.stdout)
    assert result["applied"] and result["version_floors"] == {before["contract_ref"]: 3}  # suffix + manifest
    assert result["guard"]["version"] == 4


def test_recovery_withdraws_a_guard_file_whose_task_was_only_in_the_damaged_suffix(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    project = project_of(env, ws)
    lines = _lines(project)
    lines[0] = lines[0].replace(b"ship it", b"SHIP it", 1)  # the task_started line itself
    with open(project.ledger, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines))
    proc, _t = cli(env, ws, "recover", "--apply", "--json")
    result = json.loads(proc.stdout)
    assert result["verified_lines"] == 0 and result["guard"]["action"] == "removed", result
    assert not os.path.exists(os.path.join(ws, ".execution-fidelity", "contract.json"))


def test_doctor_fails_on_a_guard_file_of_ours_at_a_version_we_never_recorded(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    path = os.path.join(ws, ".execution-fidelity", "contract.json")
    with open(path, "rb") as fh:
        doc = json.loads(fh.read())
    # what a ledger restored from an older copy leaves: Guard saw v7, our ledger knows v1
    restored = document.build_document(doc["projection"], contract_ref=doc["envelope"]["contract_ref"],
                                       contract_version=7, source_message_refs=[],
                                       updated_at="2026-01-01T00:00:00.000Z")
    with open(path, "wb") as fh:
        fh.write(document.render_document(restored))
    proc, _t = cli(env, ws, "doctor", "--json")
    assert proc.returncode == 1
    check = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["guard_file"]
    assert not check["ok"] and check["detail"].startswith("GUARD_VERSION_UNRECORDED: "), check
    assert "contract publish" in check["next_action"]
    # outside a recovery the file's version is never taken (issue 33): our v1 goes back as it was
    proc, _t = cli(env, ws, "contract", "publish", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["version"] == 1
    assert json.loads(proc.stdout)["action"] == "restored"
    assert _guard(ws)["contract_version"] == 1
    proc, _t = cli(env, ws, "doctor", "--json")
    check = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["guard_file"]
    assert check["ok"] and check["detail"] == "ours version 1"


def test_deleting_the_task_also_removes_its_ref_from_the_recovery_floor(env, ws):
    """A floor names the task's ref: deletion, which leaves no trace of a task, drops it too."""
    project, before, _first_bad = _two_versions(env, ws)
    assert cli(env, ws, "recover", "--apply")[0].returncode == 0
    task = before["contract_ref"][len("intent:"):]
    assert task.encode() in open(project.ledger, "rb").read()
    proc, _t = cli(env, ws, "delete", "task", task, "--confirm", f"DELETE TASK {task}", "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["scan"]["clean"], report
    assert not os.path.exists(project.ledger) or task.encode() not in open(project.ledger, "rb").read()
    assert not [json.loads(line) for line in _lines(project) if b"contract_version_floor" in line] \
        if os.path.exists(project.ledger) else True


def test_the_next_stop_restores_our_version_over_an_unrecorded_file_of_ours(env, ws):
    """A file naming our task at v5, which the ledger never recorded: outside `recover --apply` its
    version is never taken (a forged 2^53-1 would leave none to publish; issue 33): the next Stop
    writes the recorded v1 back unchanged."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    path = os.path.join(ws, ".execution-fidelity", "contract.json")
    doc = json.loads(open(path, "rb").read())
    newer = document.build_document(dict(doc["projection"], objective="what Guard saw later"),
                                    contract_ref=doc["envelope"]["contract_ref"], contract_version=5,
                                    source_message_refs=[], updated_at="2026-01-01T00:00:00.000Z")
    with open(path, "wb") as fh:
        fh.write(document.render_document(newer))
    proc, _t = cli(env, ws, "contract", "show", "--json")
    shown = json.loads(proc.stdout)
    assert shown["file_state"] == "unrecorded" and shown["next_version"] == 1, shown
    hook("Stop", hook_binaries.fixture("stop.turn1.json", ws, session_id=prompt_payload(ws, "x")["session_id"]), env)
    after = _guard(ws)
    assert after["contract_version"] == 1 and after["snapshot_sha256"] == doc["envelope"]["snapshot_sha256"]
    assert [v for _r, v, _h in _published(project_of(env, ws))] == [1]

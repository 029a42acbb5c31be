"""Issue 22: `contract publish --dry-run` says exactly what the real run does, and a damaged Guard
file of ours is written back (only ours: a file someone else wrote is never touched).

Everything goes through the built binaries in dist/ (the CLI, the UserPromptSubmit and the Stop
hook) with a throw-away INTENT_LOOP_DATA_DIR and workspace.

A. For ten states of a workspace, `contract publish --dry-run --json` reports the same `action`,
   `version`, `code` and `task_id` as the `contract publish --json` run after it, and writes
   nothing; an action that writes the file carries `decided_by_writing` (only writing can tell
   whether the disk and the permissions allow it).
B. A file of ours, emptied, with a BOM, cut off or with garbage after it, is repaired by
   `contract publish`, by Stop and by a prompt whose commands change the contract: to the
   recorded (contract_ref, contract_version, snapshot_sha256) when nothing changed, one version
   up when something did. A TaskContractLite, another task's document and plain text stay
   byte-identical.
"""
import json
import os
import subprocess
import uuid

import pytest

from helpers.dist import requires_dist
from helpers.files import tree_bytes
from helpers.receipt_words import published, said
from helpers.settle import settle
from intent_loop.guard import contract_file, document
from intent_loop.storage import paths as paths_mod

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(REPO, "dist")
FIXTURES = os.path.join(REPO, "tests", "fixtures", "codex-0.169.0")
CLI = os.path.join(DIST, "intent-loop")
HOOKS = {"UserPromptSubmit": os.path.join(DIST, "intent-loop-user-prompt"),
         "Stop": os.path.join(DIST, "intent-loop-stop")}
TIMEOUT = 60
SESSION = "repair-session-1"
BOM = b"\xef\xbb\xbf"
SOURCE_LINE = b'"source": "user-intent-plugin",\n'
COMPARED = ("action", "version", "code", "task_id")
WRITING_ACTIONS = ("published", "rewritten", "removed")

pytestmark = requires_dist

LITE = {"objective": "the user's own hand-written contract", "primary_object": "the app",
        "delivery_surface": ["repository"], "scope": {"include": ["src/"], "exclude": []},
        "must_and_must_not": {"must": ["keep the API"], "must_not": []},
        "authorization": {"allowed": ["action:read"], "requires_user": [], "forbidden": []},
        "completion_evidence": [{"requirement": "the tests pass", "acceptable_sources": ["test"]}]}


# -- a workspace, its data root and the binaries -----------------------------------------------------
class Box:
    """One throw-away workspace (`ws`, its realpath) and data root, and the binaries run in it."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        home = tmp_path / "home"
        home.mkdir()
        ws = tmp_path / "ws"
        ws.mkdir()
        self.ws = os.path.realpath(str(ws))  # the CLI's project root is its cwd's realpath
        self.data = str(tmp_path / "data")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                    "INTENT_LOOP_DATA_DIR": self.data}
        self.guard_path = os.path.join(self.ws, ".execution-fidelity", "contract.json")
        self._turn = 0

    # the CLI
    def cli(self, *argv, extra_env=None):
        """The CLI on this workspace as its project (--project: a fresh one is not recorded yet)."""
        env = dict(self.env, **(extra_env or {}))
        proc = subprocess.run([CLI, *argv, "--project", self.ws], cwd=self.ws, env=env, capture_output=True,
                              timeout=TIMEOUT)
        return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")

    def cli_json(self, *argv, extra_env=None):
        rc, out, err = self.cli(*argv, "--json", extra_env=extra_env)
        try:
            return rc, json.loads(out)
        except ValueError:
            pytest.fail(f"`intent-loop {' '.join(argv)} --json` printed no JSON (rc {rc}): {out!r} {err!r}")

    def claim(self, verb, text):
        rc, result = self.cli_json("claim", "add", verb, *text.split())
        assert rc == 0 and result.get("ok") is True, result
        return result

    def publish(self, *, dry_run, extra_env=None):
        argv = ("contract", "publish", "--dry-run") if dry_run else ("contract", "publish")
        rc, result = self.cli_json(*argv, extra_env=extra_env)
        return rc, result

    # the hooks
    def hook(self, event, fixture_name, **changes):
        with open(os.path.join(FIXTURES, fixture_name), "rb") as fh:
            payload = json.loads(fh.read())
        self._turn += 1
        payload.update({"cwd": self.ws, "session_id": SESSION, "turn_id": f"repair-turn-{self._turn}"}, **changes)
        proc = subprocess.run([HOOKS[event]], input=json.dumps(payload).encode(), capture_output=True,
                              env=self.env, timeout=TIMEOUT)
        settle(self.data, self.ws, timeout=TIMEOUT)  # what the hook left to run after its answer
        assert proc.returncode == 0, proc.stderr
        answer = json.loads(proc.stdout)
        assert answer.get("continue") is True, answer
        return answer

    def prompt(self, text):
        """Type `text` as a prompt of SESSION; returns the receipt the model got (its context) and
        the user's system message."""
        answer = self.hook("UserPromptSubmit", "user_prompt_submit.turn1.json", prompt=text)
        context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        message = answer.get("systemMessage", "")
        assert "NOT recorded" not in message, message
        return context, message

    def stop(self):
        self.hook("Stop", "stop.turn1.json")

    # what is on disk
    def project(self):
        return paths_mod.project_paths(self.data, self.ws)

    def ledger_bytes(self):
        try:
            with open(self.project().ledger, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            return None

    def events(self):
        data = self.ledger_bytes() or b""
        return [json.loads(line) for line in data.splitlines() if line.strip()]

    def event_count(self, event_type):
        return sum(1 for e in self.events() if e["event_type"] == event_type)

    def published_versions(self):
        return [e["payload"]["contract_version"] for e in self.events() if e["event_type"] == "contract_published"]

    def guard_bytes(self):
        with open(self.guard_path, "rb") as fh:
            return fh.read()

    def write_guard(self, data):
        os.makedirs(os.path.dirname(self.guard_path), exist_ok=True)
        with open(self.guard_path, "wb") as fh:
            fh.write(data)

    def snapshot(self):
        """Everything a publication could touch: the ledger and every byte and link in the
        workspace (and the file `../outside.json` would name)."""
        return {"ledger": self.ledger_bytes(), "workspace": tree_bytes(self.ws),
                "outside": os.path.lexists(os.path.join(os.path.dirname(self.ws), "outside.json"))}


def valid_provider(data):
    kind, doc, errors = contract_file.validate_document_bytes(data)
    assert kind == "provider" and errors == [], (kind, errors, data[:200])
    return doc


def identity(doc):
    env = doc["envelope"]
    return env["contract_ref"], env["contract_version"], env["snapshot_sha256"]


@pytest.fixture
def box(tmp_path):
    return Box(tmp_path)


# -- A. the dry run equals the real run ---------------------------------------------------------------
def _long_musts(start, count):
    # "must: keep rule NNN xxx...": about 450 characters each, under the 500-character claim limit
    return [f"intent: must keep rule {i:03d} " + "x" * 430 for i in range(start, start + count)]


def _state_no_task(box):
    return {}


def _state_task_without_goal(box):
    box.claim("must", "keep tests green")
    return {}


def _state_goal_and_file_deleted(box):
    box.claim("goal", "ship the dry run")
    os.unlink(box.guard_path)
    return {}


def _state_file_current(box):
    box.claim("goal", "ship the dry run")
    box.claim("must", "keep tests green")
    return {"version": valid_provider(box.guard_bytes())["envelope"]["contract_version"]}


def _state_new_claim_file_restored(box):
    box.claim("goal", "ship the dry run")
    older = box.guard_bytes()
    box.claim("must", "keep tests green")
    assert box.guard_bytes() != older
    box.write_guard(older)
    return {"older_version": valid_provider(older)["envelope"]["contract_version"]}


def _state_too_large(box):
    _context, message = box.prompt("intent: goal ship the dry run")
    assert published(1) in message, message
    lines = _long_musts(0, 600)
    for start in range(0, len(lines), 100):  # one prompt holds many commands; six keep each hook fast
        chunk = lines[start:start + 100]
        context, message = box.prompt("\n".join(chunk))
        assert said(context, "recorded", "must") == len(chunk), (message, context[-300:])
    before = box.guard_bytes()
    doc = valid_provider(before)
    assert doc["envelope"]["contract_version"] == max(box.published_versions())
    assert len(doc["projection"]["must_and_must_not"]["must"]) < 600  # the full contract never fit
    return {"before": before, "version": doc["envelope"]["contract_version"]}


def _state_directory_is_a_symlink(box):
    box.claim("goal", "ship the dry run")
    directory = os.path.dirname(box.guard_path)
    os.unlink(box.guard_path)
    os.unlink(os.path.join(directory, ".gitignore"))
    os.rmdir(directory)
    elsewhere = os.path.join(box.ws, "elsewhere")
    os.mkdir(elsewhere)
    os.symlink(elsewhere, directory)
    return {"elsewhere": elsewhere}


def _state_path_outside(box):
    box.claim("goal", "ship the dry run")
    return {"extra_env": {"EFG_CONTRACT_PATH": "../outside.json"},
            "outside": os.path.join(os.path.dirname(box.ws), "outside.json")}


def _state_foreign_lite(box):
    box.write_guard(json.dumps(LITE, indent=2).encode() + b"\n")
    kind, _doc, errors = contract_file.validate_document_bytes(box.guard_bytes())
    assert kind == "lite" and errors == [], errors
    box.claim("goal", "ship the dry run")
    return {"before": box.guard_bytes()}


def _state_task_off(box):
    box.claim("goal", "ship the dry run")
    ours = box.guard_bytes()
    rc, result = box.cli_json("off")
    assert rc == 0 and result.get("ok") is True, result
    if not os.path.exists(box.guard_path):  # `off` withdrew it at once: put it back, as if that had failed
        box.write_guard(ours)
    return {}


STATES = {
    "no_task": _state_no_task,
    "task_without_goal": _state_task_without_goal,
    "goal_recorded_file_deleted": _state_goal_and_file_deleted,
    "file_current": _state_file_current,
    "new_claim_file_restored_to_older_bytes": _state_new_claim_file_restored,
    "too_large": _state_too_large,
    "directory_replaced_by_symlink": _state_directory_is_a_symlink,
    "path_outside_the_workspace": _state_path_outside,
    "foreign_task_contract_lite": _state_foreign_lite,
    "task_switched_off": _state_task_off,
}


def _check_real_run(name, box, real, rc, info):
    """What the real run must have done in each state (issue 22's list)."""
    if name == "no_task":
        assert real["action"] == "absent", real
        assert not os.path.lexists(os.path.dirname(box.guard_path))
    elif name == "task_without_goal":
        assert real["action"] == "absent" and real.get("code") == "PROJECTION_INCOMPLETE", real
        assert real.get("task_id"), real
    elif name == "goal_recorded_file_deleted":  # a takeover (issue 33): the recorded version goes back
        assert real["action"] == "restored" and real["restored"] == "missing", real
        assert identity(valid_provider(box.guard_bytes()))[1] == real["version"]
    elif name == "file_current":
        assert real["action"] == "unchanged" and real["version"] == info["version"], real
    elif name == "new_claim_file_restored_to_older_bytes":
        assert real["action"] == "restored" and real["restored"] == "other_version", real
        assert real["version"] == info["older_version"] + 1, real
        assert identity(valid_provider(box.guard_bytes()))[1] == real["version"]
    elif name == "too_large":
        assert real["action"] == "too_large" and real.get("code") == "CONTRACT_TOO_LARGE", real
        assert box.guard_bytes() == info["before"]
        assert max(box.published_versions()) == info["version"]
    elif name == "directory_replaced_by_symlink":  # a takeover of the path we hold (issue 33)
        assert real["action"] == "restored" and real["restored"] == "link", real
        assert rc == 0, real
        assert not os.path.islink(os.path.dirname(box.guard_path))  # the link itself went, a folder instead
        assert identity(valid_provider(box.guard_bytes()))[1] == real["version"]
        assert os.listdir(info["elsewhere"]) == []  # nothing written through the link
    elif name == "path_outside_the_workspace":
        assert real["action"] == "outside" and real.get("code") == "PROVIDER_PATH_OUTSIDE", real
        assert not os.path.lexists(info["outside"])
    elif name == "foreign_task_contract_lite":
        assert real["action"] == "foreign", real
        assert box.guard_bytes() == info["before"]
        assert "a file intent-loop did not write" in real.get("reason", ""), real
        assert box.guard_path in real.get("reason", ""), real
    elif name == "task_switched_off":
        assert real["action"] == "removed", real
        assert not os.path.lexists(box.guard_path)
    else:
        raise AssertionError(name)


@pytest.mark.parametrize("name", list(STATES))
def test_dry_run_reports_what_the_real_run_does_and_writes_nothing(box, name):
    info = STATES[name](box) or {}
    extra_env = info.get("extra_env")
    before = box.snapshot()
    _rc, dry = box.publish(dry_run=True, extra_env=extra_env)
    assert dry.get("dry_run") is True, dry
    assert box.snapshot() == before, "the dry run wrote something"
    rc, real = box.publish(dry_run=False, extra_env=extra_env)
    assert real.get("dry_run") is False, real
    assert {k: dry.get(k) for k in COMPARED} == {k: real.get(k) for k in COMPARED}, (dry, real)
    if dry.get("action") in WRITING_ACTIONS:
        said = dry.get("decided_by_writing")
        assert isinstance(said, str) and said.strip(), dry
    _check_real_run(name, box, real, rc, info)


@pytest.mark.parametrize("name", list(STATES))
def test_dry_run_exit_status_and_ok_match_the_real_run(box, name):
    info = STATES[name](box) or {}
    dry_rc, dry = box.publish(dry_run=True, extra_env=info.get("extra_env"))
    real_rc, real = box.publish(dry_run=False, extra_env=info.get("extra_env"))
    assert (dry_rc, dry.get("ok")) == (real_rc, real.get("ok")), (dry, real)


# -- B. a damaged Guard file of ours is repaired, and only ours --------------------------------------
def _record_ours(box):
    """A goal and a `must` typed in SESSION: the file is ours at version N with hash H."""
    context, _message = box.prompt("intent: goal ship the repair\nintent: must keep tests green")
    assert said(context, "recorded", "goal") == said(context, "recorded", "must") == 1, context
    good = box.guard_bytes()
    return good, identity(valid_provider(good))


def _cut_after_source_line(good):
    at = good.index(SOURCE_LINE)
    return good[:at + len(SOURCE_LINE)]


DAMAGE = {
    "emptied": lambda good: b"",
    "bom_in_front": lambda good: BOM + good,
    "tail_cut_at_60_percent": lambda good: good[:len(good) * 6 // 10],
    "tail_cut_after_source_line": _cut_after_source_line,
    "garbage_appended": lambda good: good + b"\n}}garbage",
}
TRIGGERS = ("contract_publish", "stop_hook", "prompt_with_a_command")


def _trigger(box, how):
    """Refresh the Guard file one of three ways; the JSON result of `contract publish`, else None."""
    if how == "contract_publish":
        _rc, result = box.publish(dry_run=False)
        return result
    if how == "stop_hook":
        signals = box.event_count("result_signal_observed")
        box.stop()
        assert box.event_count("result_signal_observed") == signals + 1  # Stop ran for SESSION's task
        return None
    context, _message = box.prompt("intent: must keep docs")
    assert said(context, "recorded", "must") == 1, context
    return None


@pytest.mark.parametrize("how", TRIGGERS)
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_file_of_ours_is_repaired(box, damage, how):
    good, (ref, version, digest) = _record_ours(box)
    versions_before = box.published_versions()
    damaged = DAMAGE[damage](good)
    assert contract_file.validate_document_bytes(damaged)[2] != []  # Guard would call it invalid
    box.write_guard(damaged)
    result = _trigger(box, how)
    doc = valid_provider(box.guard_bytes())
    if how == "prompt_with_a_command":  # the contract changed: one version up, with the new claim
        assert doc["envelope"]["contract_ref"] == ref
        assert doc["envelope"]["contract_version"] == version + 1, doc["envelope"]
        assert doc["envelope"]["snapshot_sha256"] != digest
        assert "keep docs" in doc["projection"]["must_and_must_not"]["must"]
        assert box.published_versions() == versions_before + [version + 1]
        return
    # nothing changed: the recorded publication is written back, never a new version
    assert identity(doc) == (ref, version, digest)
    assert box.published_versions() == versions_before
    if how == "contract_publish":  # emptied is a takeover (issue 33), restored as it was
        assert result["action"] == ("restored" if damage == "emptied" else "rewritten"), result
        assert (result.get("version"), result.get("sha256")) == (version, digest), result


def _other_task_document(_good):
    projection = dict(LITE, objective="another task's contract")
    doc = document.build_document(projection, contract_ref=f"intent:{uuid.uuid4()}", contract_version=3,
                                  source_message_refs=[], updated_at="2026-01-01T00:00:00.000Z")
    data = document.render_document(doc)
    assert valid_provider(data)["envelope"]["source"] == "user-intent-plugin"
    return data


FOREIGN = {
    "task_contract_lite": lambda _good: json.dumps(LITE, indent=2).encode() + b"\n",
    "provider_document_of_another_contract_ref": _other_task_document,
    "plain_text_hello": lambda _good: b"hello",
}


@pytest.mark.parametrize("how", TRIGGERS)
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_file_someone_else_wrote_after_we_published_is_restored_over(box, kind, how):
    """Issue 33: while our task is on and we hold the path, any other file there is a takeover."""
    good, (ref, version, digest) = _record_ours(box)
    foreign = FOREIGN[kind](good)
    box.write_guard(foreign)
    result = _trigger(box, how)
    doc = valid_provider(box.guard_bytes())
    assert doc["envelope"]["contract_ref"] == ref
    if how == "contract_publish":
        assert result["action"] == "restored" and identity(doc) == (ref, version, digest), result
        assert result["restored"] in ("lite", "other_ref", "other"), result


@pytest.mark.parametrize("how", TRIGGERS)
@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_file_someone_else_wrote_before_we_published_is_never_overwritten(box, kind, how):
    box.write_guard(FOREIGN[kind](b""))
    foreign = box.guard_bytes()
    box.prompt("intent: goal ship the repair\nintent: must keep tests green")
    result = _trigger(box, how)
    assert box.guard_bytes() == foreign
    if how == "contract_publish":
        assert result["action"] == "foreign", result

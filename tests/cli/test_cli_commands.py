"""The CLI's report, claim, contract and health commands, in-process through main(argv)."""
import json
import os
import time

import pytest

from helpers.cli_runner import make_cli
from helpers.receipt_words import said
from intent_loop.intent.state import REDUCER
from intent_loop.storage.cache import checkpoint
from intent_loop.storage.ledger import Draft
from intent_loop.storage.paths import session_hash
from intent_loop.storage.transaction import Transaction


@pytest.fixture
def cli(tmp_path, monkeypatch):
    runner = make_cli(tmp_path)
    monkeypatch.setenv("HOME", runner.env["HOME"])  # code that reads os.environ sees the same home
    return runner


@pytest.fixture
def project(cli):
    return cli.project()


def _goal(cli, text="ship the parser"):
    return cli.json("claim", "add", "goal", *text.split())


# -- claims ---------------------------------------------------------------------------------
def test_claim_add_starts_task_and_publishes(cli):
    r = _goal(cli)
    assert r["ok"] and r["started_task"] and r["events"][0] == "task_started"
    assert r["publication"]["action"] == "published" and r["publication"]["version"] == 1
    r2 = cli.json("claim", "add", "must-not", "touch", "vendor/")
    assert r2["task_id"] == r["task_id"] and not r2["started_task"]
    assert r2["publication"]["version"] == 2
    rc, out, _ = cli("claim", "add", "must", "keep", "tests", "green")
    assert rc == 0 and said(out, "recorded", "must") == 1  # the prompt receipt's words


def test_claim_add_errors(cli):
    rc, _, err = cli("claim", "add", "gaol", "x")
    assert rc == 1 and "UNKNOWN_VERB" in err
    rc, out, _ = cli("claim", "add", "must", "x", "--task", "abcd", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "TASK_NOT_FOUND"
    rc, _, err = cli("claim", "add", "goal")
    assert rc == 2


def test_claim_replace_and_drop(cli):
    task = _goal(cli)["task_id"]
    must = cli.json("claim", "add", "must", "use", "tabs")["claim_id"]
    r = cli.json("claim", "replace", must[:8], "use", "spaces", "--task", task[:6])
    assert r["replaced"] == must
    shown = cli.json("show", "--all")
    statements = [c["statement"] for c in shown["history"]]
    assert "must: use spaces" in statements
    d = cli.json("claim", "drop", r["claim_id"][:8])
    assert d["claim_id"] == r["claim_id"]
    rc, out, _ = cli("claim", "drop", r["claim_id"][:8], "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "CLAIM_NOT_FOUND"
    rc, out, _ = cli("claim", "drop", "ab", "--json")
    assert rc == 2 and json.loads(out)["error"]["code"] == "INVALID_ARGUMENT"


def test_claim_without_task_is_no_task(cli):
    rc, out, _ = cli("claim", "drop", "abcd1234", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "NO_TASK"


def test_modes_off_private_on(cli):
    task = _goal(cli)["task_id"]
    r = cli.json("off")
    assert r["mode"] == "off" and r["changed"] and r["publication"]["action"] == "removed"
    rc, out, _ = cli("show", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "TASK_OFF"
    rc, out, _ = cli("claim", "add", "must", "x", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "TASK_OFF"
    assert cli.json("private", "--task", task)["mode"] == "private"
    assert cli.json("show") == {"task_id": task, "mode": "private"}
    assert cli.json("on")["changed"]
    assert cli.json("on")["changed"] is False
    assert "ship the parser" in cli("show")[1]


def test_candidates(cli, project):
    # three distinct tasks carrying the same statement produce a candidate
    import time

    from intent_loop.base.timestamps import format_utc
    from intent_loop.intent import tasks as tasks_mod
    from intent_loop.storage.transaction import mutate

    for n in range(3):
        def plan(state, n=n):
            p = tasks_mod.Plan(state, now=format_utc(time.time()))
            claim = tasks_mod.user_claim(p, statement="always run the linter", facets=["soft_constraint"],
                                         scope="task", source_ref={"kind": "user_event", "event_id": f"e{n}"})
            tasks_mod.start_task(p, task_id=tasks_mod.derived_task_id(project.project_id, f"r{n}"),
                                 initial_claims=[claim])
            return p.drafts
        mutate(project, REDUCER, request_id=f"seed-{n}", operation="seed", params={"n": n}, plan=plan,
               deadline=time.monotonic() + 10)
    listed = cli.json("candidate", "list")["candidates"]
    assert len(listed) == 1 and listed[0]["task_count"] == 3
    cid = listed[0]["candidate_id"]
    r = cli.json("candidate", "confirm", cid[:8])
    assert r["candidate_id"] == cid and r["events"] == ["candidate_confirmed"]
    rc, out, _ = cli("candidate", "dismiss", cid[:8], "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "CANDIDATE_NOT_FOUND"
    assert cli("candidate", "list")[1].strip() == "no open candidates"


# -- status / show / timeline -------------------------------------------------------------------
def test_status(cli, project):
    r = cli.json("status")
    assert r["tasks"] == [] and r["data_root_chosen_by"] == "INTENT_LOOP_DATA_DIR" and r["hook_failures"] == 0
    task = _goal(cli)["task_id"]
    logs = os.path.join(cli.env["INTENT_LOOP_DATA_DIR"], "logs")
    os.makedirs(logs)
    with open(os.path.join(logs, "hook-failures.jsonl"), "w") as fh:
        fh.write("{}\n{}\n")
    r = cli.json("status")
    assert r["project_id"] == project.project_id and r["newest_task"] == task
    assert r["tasks"][0]["active_claims"] == 1 and r["tasks"][0]["mode"] == "on"
    assert r["provider_file"]["kind"] == "ours" and r["hook_failures"] == 2 and r["chain"]["ok"]
    rc, out, _ = cli("status")
    assert rc == 0 and "(newest)" in out
    assert cli("status") == cli("status")


def test_show_compact_all_and_max_chars(cli):
    _goal(cli)
    for n in range(5):
        cli.json("claim", "add", "must", f"requirement number {n}")
    rc, out, _ = cli("show")
    assert rc == 0 and "6 active claims" in out
    rc, short, _ = cli("show", "--max-chars", "120")
    assert "more omitted" in short
    full = cli.json("show", "--all")
    assert len(full["history"]) == 6 and full["snapshot"]["published"]["version"] == 6
    rc, _, err = cli("show", "--max-chars", "0")
    assert rc == 2 and "INVALID_ARGUMENT" in err
    assert cli("show", "--all") == cli("show", "--all")


def test_show_all_is_words_by_default_and_data_with_json(cli):
    """Issue 25: `show --all` printed a raw JSON dump; now it prints the task in words."""
    _goal(cli)
    first = cli.json("claim", "add", "must", "keep the API")["claim_id"]
    cli.json("claim", "replace", first[:8], "keep the public API")
    rc, out, _ = cli("show", "--all")
    assert rc == 0 and not out.lstrip().startswith("{")
    lines = out.splitlines()
    assert lines[0].startswith("task ") and "(on), started " in lines[0]
    assert lines[1] == "Guard contract: v3"
    assert "active claims (2), by facet:" in lines
    assert any(line.strip().startswith("[") and "keep the public API (explicit, yours, scope task)" in line
               for line in lines)
    history = lines[lines.index("history: every claim of the task, oldest first (3):") + 1:]
    assert [line.split()[0] for line in history] == ["active", "superseded", "active"], history
    assert cli.json("show", "--all")["history"][1]["state"] == "superseded"


def test_show_without_task(cli):
    rc, _, err = cli("show")
    assert rc == 1 and "NO_TASK" in err


def test_timeline_filters(cli, project):
    task = _goal(cli)["task_id"]
    cli.json("claim", "add", "must", "keep", "tests", "green")
    # a hook-style observation for a session, recorded hash-only
    sess = session_hash("codex-session-1")
    with Transaction(project, REDUCER, deadline=__import__("time").monotonic() + 10) as tx:
        tx.append([Draft("source_observed", task, "user", {
            "host_session_hash": sess, "source": {"kind": "user_event", "sha256": "a" * 64}, "char_count": 42})],
            request_id="obs-1", fingerprint="f")
    events = cli.json("timeline")["events"]
    types = [e["event_type"] for e in events]
    assert types == ["task_started", "contract_published", "claim_added", "contract_published", "source_observed"]
    assert events[0]["summary"]["claims"][0]["statement"] == "ship the parser"
    obs = events[-1]["summary"]
    assert obs == {"char_count": 42, "source_kind": "user_event", "hash_kinds": ["sha256"]}
    assert [e["event_type"]
            for e in cli.json("timeline", "--session", "codex-session-1")["events"]] == ["source_observed"]
    assert cli.json("timeline", "--session", "other")["events"] == []
    assert {e["actor"] for e in cli.json("timeline", "--actor", "system")["events"]} == {"system"}
    assert len(cli.json("timeline", "--type", "contract_published")["events"]) == 2
    assert len(cli.json("timeline", "--task", task[:8])["events"]) == 5
    assert cli.json("timeline", "--since", "2999-01-01T00:00:00Z")["events"] == []
    assert len(cli.json("timeline", "--until", "2999-01-01T00:00:00Z",
                        "--since", "2000-01-01T00:00:00+02:00")["events"]) == 5
    first = events[0]["occurred_at"]
    assert len(cli.json("timeline", "--until", "2000-01-01T00:00:00Z")["events"]) == 0
    assert cli.json("timeline", "--since", first)["events"]
    rc, out, _ = cli("timeline", "--since", "yesterday", "--json")
    assert rc == 2 and json.loads(out)["error"]["code"] == "INVALID_ARGUMENT"
    rc, _, err = cli("timeline", "--until", "2026-02-30T00:00:00Z")
    assert rc == 2 and "INVALID_ARGUMENT" in err
    rc, out, _ = cli("timeline")
    assert rc == 0 and "char_count=42" in out
    assert "ship the parser" in out


# -- contract -----------------------------------------------------------------------------------
def test_contract_show_and_publish(cli):
    r = cli.json("contract", "show")
    assert r["task_id"] is None and r["file_state"] == "missing" and r["reason"]
    rc, _, _ = cli("contract", "publish")
    assert rc == 0
    task = _goal(cli)["task_id"]
    r = cli.json("contract", "show")
    assert r["task_id"] == task and r["file_state"] == "bound" and r["current_version"] == r["next_version"] == 1
    assert r["projection"]["objective"] == "ship the parser"
    assert cli.json("contract", "publish", "--dry-run")["action"] == "unchanged"
    os.unlink(r["path"])
    assert cli.json("contract", "show")["file_state"] == "missing"
    assert cli.json("contract", "publish", "--dry-run")["action"] == "restored"  # a takeover (issue 33)
    assert not os.path.exists(r["path"])
    p = cli.json("contract", "publish")
    assert p["action"] == "restored" and p["version"] == 1 and os.path.exists(r["path"])
    rc, out, _ = cli("contract", "show")
    assert rc == 0 and "bound" in out
    # a new empty-goal task shadows nothing, an off task withdraws the file
    cli.json("off")
    r = cli.json("contract", "show")
    assert r["task_id"] is None and r["shadowed_tasks"] == [task] and r["file_state"] == "missing"


def test_contract_publish_foreign_file(cli):
    path = cli.json("contract", "show")["path"]  # the user's file, there before we ever published
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as fh:
        fh.write('{"objective": "theirs"}')
    _goal(cli)
    assert cli.json("contract", "show")["file_state"] == "foreign"
    cli.json("claim", "add", "must", "be", "fast")
    assert cli.json("contract", "publish", expect=1)["action"] == "foreign"
    assert open(path).read() == '{"objective": "theirs"}'


def test_contract_validate(cli, tmp_path):
    _goal(cli)
    path = cli.json("contract", "show")["path"]
    rc, out, _ = cli("contract", "validate", path)
    assert rc == 0 and "valid provider" in out
    bad = tmp_path / "bad.json"
    doc = json.load(open(path))
    doc["projection"]["objective"] = "   "
    doc["projection"]["authorization"]["forbidden"] = ["action :rm"]
    bad.write_text(json.dumps(doc))
    r = cli.json("contract", "validate", str(bad), expect=1)
    assert r["kind"] == "provider" and len(r["errors"]) >= 2
    rc, out, _ = cli("contract", "validate", str(bad))
    assert rc == 1 and out.count("  - ") == len(r["errors"])
    rc, _, err = cli("contract", "validate", str(tmp_path / "nope.json"))
    assert rc == 2 and "INVALID_ARGUMENT" in err
    rc, _, _ = cli("contract")
    assert rc == 2


# -- recover ------------------------------------------------------------------------------------
def _ledger_lines(project):
    with open(project.ledger, "rb") as fh:
        return fh.read().split(b"\n")[:-1]


def _damaged_middle(cli, project):
    _goal(cli)
    for n in range(3):
        cli.json("claim", "add", "must", f"rule {n}")
    lines = _ledger_lines(project)
    original = b"".join(line + b"\n" for line in lines)
    index = next(i for i, line in enumerate(lines) if b"rule 1" in line)
    assert index == 4
    lines[index] = lines[index].replace(b"rule 1", b"RULE 1", 1)
    with open(project.ledger, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines))
    return original, lines


def test_recover_middle_damage(cli, project, tmp_path):
    original, lines = _damaged_middle(cli, project)
    assert cli.json("verify", expect=1)["error"]["line"] == 5
    damaged = open(project.ledger, "rb").read()
    dry = cli.json("recover")
    assert dry["verified_lines"] == 4 and dry["first_bad_line"] == 5 and not dry["applied"]
    assert dry["error"]["code"] == "LEDGER_HASH_MISMATCH"
    assert open(project.ledger, "rb").read() == damaged  # dry run writes nothing
    export = tmp_path / "prefix.jsonl"
    r = cli.json("recover", "--export", str(export))
    assert export.read_bytes() == b"".join(line + b"\n" for line in lines[:4])
    rc, out, _ = cli("recover", "--export", str(export), "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "FILE_EXISTS"
    r = cli.json("recover", "--apply")
    assert r["applied"] and r["verified_lines"] == 4
    recovered = open(project.ledger, "rb").read()
    assert recovered.startswith(export.read_bytes())  # the verified prefix, byte for byte
    # nothing invented beyond the Guard version the suffix had published and the Guard file
    # re-published above it (issue 12 item 3)
    added = [json.loads(line) for line in recovered[len(export.read_bytes()):].splitlines()]
    assert [e["event_type"] for e in added] == (["contract_version_floor"] if r["version_floors"] else []) + (
        ["contract_published"] if r["guard"]["action"] == "published" else [])
    assert all(e["payload"]["floors"] == r["version_floors"] for e in added[:1] if r["version_floors"])
    suffix = open(r["quarantine"], "rb").read()
    assert export.read_bytes() + suffix == damaged  # nothing silently dropped
    assert os.stat(r["quarantine"]).st_mode & 0o777 == 0o600
    manifest = json.load(open(r["quarantine"].replace("-suffix.jsonl", "-suffix.manifest.json")))
    assert manifest["first_bad_line"] == 5 and manifest["byte_length"] == len(suffix)
    assert manifest["error_code"] == "LEDGER_HASH_MISMATCH"
    assert cli.json("verify")["events"] == 4 + len(added)
    root = os.path.join(project.cache_dir, checkpoint.ROOT_FILE)
    assert not os.path.exists(root) or cli.json("status")["chain"]["ok"]
    assert cli.json("recover")["error"] is None
    assert cli.json("claim", "add", "must", "go", "on")["ok"]  # the project is writable again


def test_recover_torn_and_corrupt_tail(cli, project):
    _goal(cli)
    cli.json("claim", "add", "must", "x1")
    good = open(project.ledger, "rb").read()
    with open(project.ledger, "ab") as fh:
        fh.write(b'{"actor":"user","garbage"\n{"partial')
    dry = cli.json("recover")
    assert dry["verified_bytes"] == len(good) and dry["error"]["code"] == "LEDGER_MALFORMED"
    r = cli.json("recover", "--apply")
    assert open(project.ledger, "rb").read() == good
    assert open(r["quarantine"], "rb").read() == b'{"actor":"user","garbage"\n'  # the partial line: digest only
    assert cli("verify")[0] == 0
    with open(project.ledger, "ab") as fh:
        fh.write(b'{"partial')
    assert cli.json("recover")["error"]["code"] == "LEDGER_TORN_TAIL"
    assert cli.json("recover", "--apply")["applied"]
    assert open(project.ledger, "rb").read() == good


def test_recover_on_healthy_ledger_changes_nothing(cli, project):
    _goal(cli)
    before = open(project.ledger, "rb").read()
    r = cli.json("recover", "--apply")
    assert not r["applied"] and r["error"] is None
    assert open(project.ledger, "rb").read() == before
    assert os.listdir(project.quarantine_dir) == []


# -- doctor -------------------------------------------------------------------------------------
def _checks(result):
    return {c["name"]: c for c in result["checks"]}


def _install_hooks(cli):
    codex = os.path.join(os.environ["HOME"], ".codex")
    os.makedirs(codex, exist_ok=True)
    with open(os.path.join(codex, "hooks.json"), "w") as fh:
        json.dump({"hooks": {"Stop": [{"command": "/x/intent-loop-stop"}]}}, fh)


def test_doctor_healthy_then_broken_chain_and_residue(cli, project):
    _goal(cli)
    _install_hooks(cli)
    r = json.loads(cli("doctor", "--json")[1])
    checks = _checks(r)
    assert checks["chains"]["ok"] and checks["lock_residue"]["ok"] and checks["hooks_installed"]["ok"]
    assert checks["data_root"]["ok"] and checks["other_roots"]["ok"]
    failing = [c["name"] for c in r["checks"] if not c["ok"]]
    assert set(failing) <= {"interpreter"}  # only the machine's own build may be off
    assert cli("doctor")[0] == (1 if failing else 0)
    assert "ship the parser" not in cli("doctor")[1]
    # damage the chain
    lines = _ledger_lines(project)
    lines[1] = lines[1].replace(b'"actor":"system"', b'"actor":"agent"', 1)
    with open(project.ledger, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines))
    r = cli.json("doctor", expect=1)
    assert not _checks(r)["chains"]["ok"] and "line 2" in _checks(r)["chains"]["detail"]
    assert _checks(r)["chains"]["next_action"]
    rc, out, _ = cli("doctor")
    assert rc == 1 and "[FAIL] chains" in out


def test_doctor_lock_residue_and_other_roots(cli, project, tmp_path):
    _goal(cli)
    os.mkdir(project.lock_dir + ".deadbeef.released")
    r = cli.json("doctor", expect=1)
    assert not _checks(r)["lock_residue"]["ok"] \
        and "ledger.lock.deadbeef.released" in _checks(r)["lock_residue"]["detail"]
    other = tmp_path / "home" / ".codex" / "plugin-data" / "intent-loop" / "v1" / "projects" / ("a" * 64)
    other.mkdir(parents=True)
    r = cli.json("doctor", expect=1)
    assert not _checks(r)["other_roots"]["ok"]


def test_doctor_fails_on_recent_hook_failures_only_and_names_their_codes(cli, project):
    _goal(cli)
    _install_hooks(cli)
    log = os.path.join(project.data_root, "logs", "hook-failures.jsonl")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    old = {"at": int(time.time()) - 3 * 86400, "event": "Stop", "where": "handler", "code": "LOCK_TIMEOUT"}
    with open(log, "w") as fh:
        fh.write(json.dumps(old) + "\n")
    assert _checks(json.loads(cli("doctor", "--json")[1]))["hook_failures"]["ok"]
    recent = {"at": int(time.time()) - 60, "event": "UserPromptSubmit", "where": "after_answer", "code": "WRITE_FAILED"}
    with open(log, "a") as fh:
        fh.write(json.dumps(recent) + "\n" + json.dumps(recent) + "\n" + "not json\n")
    check = _checks(cli.json("doctor", expect=1))["hook_failures"]
    assert not check["ok"] and check["next_action"]
    assert check["detail"].startswith("2 in the last 24 h (4 logged in all)")
    assert "2x WRITE_FAILED at UserPromptSubmit/after_answer" in check["detail"]


def test_doctor_without_hooks_fails_with_next_action(cli):
    r = cli.json("doctor", expect=1)
    c = _checks(r)["hooks_installed"]
    assert not c["ok"] and "install" in c["next_action"]


def test_help_of_every_command(cli):
    for argv in (["status"], ["show"], ["timeline"], ["claim", "add"], ["claim", "replace"], ["claim", "drop"],
                 ["candidate", "list"], ["candidate", "confirm"], ["private"], ["off"], ["on"], ["contract", "show"],
                 ["contract", "validate"], ["contract", "publish"], ["doctor"], ["recover"], ["verify"]):
        rc, out, _ = cli(*argv, "--help")
        assert rc == 0, argv


def test_recover_never_keeps_a_torn_partial_line_verbatim(cli, project):
    """Issue 12 item 4: the damaged suffix's complete lines go to quarantine as the manifest
    describes them; a torn partial last line only by its byte length and SHA-256 (seed 000)."""
    import hashlib

    original, lines = _damaged_middle(cli, project)
    secret = b'{"actor":"user","payload":{"statement":"TORN-SECRET-4411'
    with open(project.ledger, "ab") as fh:
        fh.write(secret)
    r = cli.json("recover", "--apply")
    suffix = open(r["quarantine"], "rb").read()
    assert b"TORN-SECRET-4411" not in suffix and suffix.endswith(b"\n")
    manifest = json.load(open(r["quarantine"].replace("-suffix.jsonl", "-suffix.manifest.json")))
    assert manifest["torn_tail"] == {"byte_length": len(secret), "sha256": hashlib.sha256(secret).hexdigest()}
    assert manifest["byte_length"] == len(suffix)
    for name in os.listdir(project.quarantine_dir):
        assert b"TORN-SECRET-4411" not in open(os.path.join(project.quarantine_dir, name), "rb").read()


def test_verify_text_names_a_torn_tail_and_no_line_none(cli, project):
    cli.json("claim", "add", "goal", "ship", "it")
    with open(project.ledger, "ab") as fh:
        fh.write(b'{"act')
    rc, out, _err = cli("verify")
    assert rc == 0 and "ledger OK" in out and "torn partial last line of 5 bytes" in out
    os.rename(project.ledger, project.ledger + ".moved")
    os.symlink(project.ledger + ".moved", project.ledger)
    rc, out, _err = cli("verify")
    assert rc == 1 and "line None" not in out and "UNSAFE_PATH" in out

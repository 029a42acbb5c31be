"""`intent-loop contract withdraw [--all-projects] [--apply]` (issue 35, item 7): before intent-loop is
removed, its Guard files can be taken away, since Guard has no staleness check and would keep the
last contract in force with nobody updating it. A dry run changes nothing; --apply removes only our
files, records the withdrawal (the task Guard gets turned off), and a file that is not ours stays
byte for byte; a project whose folder is gone is reported, not a traceback."""
import json
import os
import shutil

import pytest

from helpers.cli_runner import CliRun


@pytest.fixture
def at(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))

    def make(name):
        workspace = tmp_path / name
        workspace.mkdir()
        return CliRun(tmp_path / "data", workspace, home=home)

    return make


def _guard(cli):
    return cli.project().root + "/.execution-fidelity/contract.json"


def _publish(cli, goal):
    cli.json("claim", "add", "goal", *goal.split())
    with open(_guard(cli), "rb") as fh:
        assert b'"contract_ref"' in fh.read()


def _events(cli):
    with open(cli.project().ledger, "rb") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _by_project(result):
    return {p["project_id"]: p for p in result["projects"]}


def test_a_dry_run_lists_our_file_and_changes_nothing(at):
    a = at("a")
    _publish(a, "ship the parser")
    before = open(_guard(a), "rb").read(), open(a.project().ledger, "rb").read()
    for argv in (("contract", "withdraw"), ("contract", "withdraw", "--all-projects")):
        result = a.json(*argv)
        assert result["dry_run"] is True and result["ok"] is True
        mine = _by_project(result)[a.project().project_id]
        assert [(f["path"], f["action"]) for f in mine["files"]] == [(_guard(a), "removed")]
        assert mine["task_turned_off"] is not None
    rc, out, _err = a("contract", "withdraw")
    assert rc == 0 and _guard(a) in out
    assert (open(_guard(a), "rb").read(), open(a.project().ledger, "rb").read()) == before


def test_apply_removes_only_our_files_in_every_project_and_records_the_withdrawal(at):
    a, b, c = at("a"), at("b"), at("c")
    _publish(a, "ship the parser")
    _publish(b, "fix the login loop")
    # c: the user's own Guard contract, and a task intent-loop never published (no goal)
    foreign = b'{"contract_ref": "mine:1", "contract_version": 7}\n'
    c.json("claim", "add", "must", "keep", "tests", "green")
    os.makedirs(os.path.dirname(_guard(c)))
    with open(_guard(c), "wb") as fh:
        fh.write(foreign)
    result = c.json("contract", "withdraw", "--all-projects", "--apply")
    assert result["ok"] is True and result["dry_run"] is False
    projects = _by_project(result)
    for cli in (a, b):
        entry = projects[cli.project().project_id]
        assert [(f["path"], f["action"]) for f in entry["files"]] == [(_guard(cli), "removed")]
        assert not os.path.lexists(_guard(cli))
        off = [e for e in _events(cli) if e["event_type"] == "mode_set"]
        assert [(e["payload"]["mode"], e["actor"], e["task_id"]) for e in off] == [
            ("off", "user", entry["task_turned_off"])]
    assert [f["action"] for f in projects[c.project().project_id]["files"]] == ["foreign"]
    assert open(_guard(c), "rb").read() == foreign
    # done: nothing of ours is left to withdraw, and the next dry run says so
    again = c.json("contract", "withdraw", "--all-projects")
    assert not [f for p in again["projects"] for f in p["files"] if f["action"] == "removed"]
    assert open(_guard(c), "rb").read() == foreign


def test_a_project_whose_folder_is_gone_is_reported_not_a_traceback(at):
    a, b = at("a"), at("b")
    _publish(a, "ship the parser")
    _publish(b, "fix the login loop")
    gone_id = a.project().project_id
    shutil.rmtree(a.workspace)
    for apply in ((), ("--apply",)):
        result = b.json("contract", "withdraw", "--all-projects", *apply)
        entry = _by_project(result)[gone_id]
        assert entry["state"] == "gone" and entry["files"] == [], entry
        assert result["ok"] is True
    rc, out, err = b("contract", "withdraw", "--all-projects")
    assert rc == 0 and gone_id[:12] in out and "INTERNAL_ERROR" not in out + err


def test_apply_is_refused_in_the_agents_shell_and_the_dry_run_is_not(at):
    a = at("a")
    _publish(a, "ship the parser")
    a.env["CODEX_TOOL_CALL_ID"] = "call_1"
    assert a("contract", "withdraw")[0] == 0
    rc, _out, err = a("contract", "withdraw", "--apply")
    assert rc == 1 and "AGENT_SHELL" in err
    assert b'"contract_ref"' in open(_guard(a), "rb").read()

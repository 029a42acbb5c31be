"""Error codes that no other test reached, each triggered through the public CLI and asserted."""
import collections
import json
import os

import pytest

from helpers.cli_runner import make_cli


@pytest.fixture
def cli(tmp_path, monkeypatch):
    runner = make_cli(tmp_path)
    monkeypatch.setenv("HOME", runner.env["HOME"])
    return runner


def _error_code(cli, *argv):
    rc, out, err = cli(*argv, "--json")
    assert rc == 1, (rc, out, err)
    return json.loads(out)["error"]["code"]


def test_a_task_prefix_shared_by_two_tasks_is_ambiguous(cli, tmp_path):
    """17 tasks: by pigeonhole two task ids share their first hex digit, whatever ids they get."""
    cli.json("claim", "add", "goal", "ship", "the", "parser")
    graph = tmp_path / "graph.json"
    cli.json("export", "-o", str(graph))
    for _ in range(16):
        cli.json("import", str(graph))
    task_ids = [task["task_id"] for task in cli.json("status")["tasks"]]
    assert len(task_ids) == 17
    digit, count = collections.Counter(task_id[0] for task_id in task_ids).most_common(1)[0]
    assert count >= 2

    assert _error_code(cli, "show", "--task", digit) == "AMBIGUOUS_ID"


def test_exporting_a_private_task_is_refused(cli):
    cli.json("claim", "add", "goal", "ship", "the", "parser")
    cli.json("private")

    assert _error_code(cli, "export") == "TASK_PRIVATE"


def test_a_contract_directory_symlinked_outside_the_project_is_never_written(cli, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, tmp_path / "ws" / ".execution-fidelity")

    recorded = cli.json("claim", "add", "goal", "ship", "the", "parser")
    assert recorded["publication"]["code"] == "PROVIDER_PATH_OUTSIDE"  # the claim is recorded all the same
    assert recorded["publication"]["action"] == "outside"
    assert os.listdir(elsewhere) == []
    shown = cli.json("contract", "show")
    assert shown["file_state"] == "outside"


def test_a_contract_directory_symlinked_inside_the_project_is_not_written_through(cli, tmp_path):
    inside = tmp_path / "ws" / "real-guard-dir"
    inside.mkdir()
    os.symlink(inside, tmp_path / "ws" / ".execution-fidelity")

    recorded = cli.json("claim", "add", "goal", "ship", "the", "parser")
    assert recorded["publication"]["code"] == "PROVIDER_PATH_FOREIGN"
    rc, out, _err = cli("contract", "publish", "--json")  # refused in the plan: an action, exit 1
    assert rc == 1 and json.loads(out)["code"] == "PROVIDER_PATH_FOREIGN"
    assert os.listdir(inside) == []


def test_a_contract_directory_that_cannot_be_created_fails_the_write(cli, tmp_path):
    cli.env["EFG_CONTRACT_PATH"] = "guard/" + "x" * 300 + "/contract.json"  # a name the system refuses

    recorded = cli.json("claim", "add", "goal", "ship", "the", "parser")
    assert recorded["publication"]["code"] == "PROVIDER_WRITE_FAILED"
    rc, out, _err = cli("contract", "publish", "--json")  # refused: an action, exit 1
    assert rc == 1 and json.loads(out)["code"] == "PROVIDER_WRITE_FAILED"


def test_a_dangling_link_on_the_way_to_the_contract_is_never_written_through(cli, tmp_path):
    os.symlink(tmp_path / "ws" / "nowhere", tmp_path / "ws" / "guard")  # dangling: guard/sub is not made
    cli.env["EFG_CONTRACT_PATH"] = "guard/sub/contract.json"

    recorded = cli.json("claim", "add", "goal", "ship", "the", "parser")
    assert recorded["publication"]["code"] == "PROVIDER_PATH_FOREIGN"
    rc, out, _err = cli("contract", "publish", "--json")  # refused: an action, exit 1
    assert rc == 1 and json.loads(out)["code"] == "PROVIDER_PATH_FOREIGN"
    assert not os.path.lexists(tmp_path / "ws" / "nowhere")

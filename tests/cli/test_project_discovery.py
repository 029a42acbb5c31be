"""The command line finds the project as git finds a repository (issue 25, item 1): from a subfolder
it walks up to the nearest recorded project (a ledger exists for its project id) and says which;
outside every project a read says so and a write is refused unless --project DIR; the hooks keep
using Codex's cwd, since Guard reads <cwd>/.execution-fidelity/."""
import json

import pytest

from helpers.cli_runner import CliRun
from helpers.dist import requires_dist
from helpers.mcp_client import run_hook
from intent_loop.storage import paths as paths_mod


@pytest.fixture
def place(tmp_path):
    root, home, ws = tmp_path / "data", tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    (ws / "src" / "deep").mkdir(parents=True)
    return root, home, ws, tmp_path


def cli_in(root, home, cwd):
    return CliRun(root, cwd, home=home, discover=True)


def test_from_a_subfolder_the_nearest_recorded_project_is_found_and_named(place):
    root, home, ws, _tmp = place
    assert cli_in(root, home, ws)("claim", "add", "goal", "Ship", "--project", ".")[0] == 0
    rc, out, err = cli_in(root, home, ws / "src" / "deep")("show")
    assert rc == 0 and "goal: Ship" in out, (out, err)
    assert err.strip() == f"intent-loop: project {ws} (the nearest recorded project above this folder)"
    rc, out, err = cli_in(root, home, ws)("show")  # in the project itself: nothing to say
    assert rc == 0 and err == ""
    rc, out, _err = cli_in(root, home, ws / "src")("claim", "add", "must", "keep", "the", "API")
    assert rc == 0  # a write inside a recorded project goes to it
    assert "keep the API" in cli_in(root, home, ws)("show")[1]
    assert not (root / "projects" / paths_mod.project_paths(str(root), str(ws / "src")).project_id).exists()


def test_the_nearest_of_two_nested_projects_wins(place):
    root, home, ws, _tmp = place
    inner = ws / "src"
    cli_in(root, home, ws)("claim", "add", "goal", "Outer", "--project", ".")
    cli_in(root, home, inner)("claim", "add", "goal", "Inner", "--project", ".")
    out = cli_in(root, home, inner / "deep")("show")[1]
    assert "Inner" in out and "Outer" not in out


def test_outside_every_project_reads_say_so_and_writes_refuse_without_project(place):
    root, home, _ws, tmp = place
    nowhere = tmp / "nowhere"
    nowhere.mkdir()
    cli = cli_in(root, home, nowhere)
    for argv in (("show",), ("log",), ("timeline",), ("export",), ("verify",), ("contract", "show")):
        rc, out, _err = cli(*argv, "--json")
        assert rc == 1 and json.loads(out)["error"]["code"] == "NO_PROJECT", argv
    rc, out, err = cli("show")
    assert rc == 1 and "is not a project intent-loop has recorded, nor inside one" in err
    for argv in (("claim", "add", "goal", "Ship"), ("contract", "publish"), ("private",), ("recover", "--apply")):
        rc, out, _err = cli(*argv, "--json")
        assert rc == 1 and json.loads(out)["error"]["code"] == "NO_PROJECT", argv
        assert "--project ." in json.loads(out)["error"]["message"]
    assert not (root / "projects").exists() or list((root / "projects").iterdir()) == []
    assert not (nowhere / ".execution-fidelity").exists()
    status = cli.json("status")
    assert status["project_id"] is None and status["project_error"]["code"] == "NO_PROJECT"
    rc, out, _err = cli("status")
    assert rc == 0 and "project:   none:" in out


def test_home_is_not_made_a_project_by_a_stray_write(place):
    root, home, _ws, _tmp = place
    rc, out, _err = cli_in(root, home, home)("claim", "add", "goal", "Oops", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "NO_PROJECT"
    assert list(home.iterdir()) == []


def test_project_dir_works_anywhere_on_the_line_and_must_be_a_directory(place):
    root, home, ws, tmp = place
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    cli = cli_in(root, home, elsewhere)
    assert cli("--project", str(ws), "claim", "add", "goal", "Ship")[0] == 0
    assert "goal: Ship" in cli("show", "--project", str(ws))[1]
    assert "goal: Ship" in cli("--project", str(ws), "show")[1]
    rc, out, _err = cli("show", "--project", str(tmp / "missing"), "--json")
    assert rc == 2 and json.loads(out)["error"]["code"] == "INVALID_ARGUMENT"  # a usage error


@requires_dist
def test_the_hooks_keep_codexs_cwd(place):
    """A hook in a subfolder of a recorded project records the subfolder's own project: Guard reads
    the contract from <cwd>/.execution-fidelity/, so the hooks never walk up."""
    root, home, ws, _tmp = place
    env = {"INTENT_LOOP_DATA_DIR": str(root), "HOME": str(home), "PATH": "/usr/bin:/bin"}
    cli_in(root, home, ws)("claim", "add", "goal", "Outer", "--project", ".")
    sub = ws / "src"
    run_hook("UserPromptSubmit", env, cwd=sub, session_id="019b0000-0000-7000-8000-0000000000d1",
             prompt="intent: goal Inner by the hook")
    assert (sub / ".execution-fidelity" / "contract.json").is_file()
    assert "Inner by the hook" in cli_in(root, home, sub)("show")[1]
    assert "Inner by the hook" not in cli_in(root, home, ws)("show")[1]

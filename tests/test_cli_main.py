"""The CLI's main owns the exit status: no traceback ever reaches a user."""
import io
import json

from intent_loop.cli import inspect as inspect_cmd
from intent_loop.cli.common import Console
from intent_loop.cli.main import EXIT_INTERNAL, main


def _run(monkeypatch, tmp_path, *argv, env_extra=None):
    def broken_status(args, console):
        raise KeyError("tasks")  # stands in for any bug

    monkeypatch.setattr(inspect_cmd, "cmd_status", broken_status)
    env = {"INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path), **(env_extra or {})}
    console = Console(stdout=io.StringIO(), stderr=io.StringIO(), env=env, cwd=str(tmp_path))
    rc = main(list(argv), console=console)
    return rc, console.stdout.getvalue(), console.stderr.getvalue()


def test_an_unexpected_exception_is_internal_error_without_traceback(monkeypatch, tmp_path):
    rc, out, err = _run(monkeypatch, tmp_path, "status")
    assert rc == EXIT_INTERNAL == 3
    assert err.startswith("intent-loop: INTERNAL_ERROR: unexpected KeyError;")
    assert "INTENT_LOOP_DEBUG=1" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert out == ""


def test_internal_error_as_json(monkeypatch, tmp_path):
    rc, out, _err = _run(monkeypatch, tmp_path, "status", "--json")
    assert rc == 3
    assert json.loads(out)["error"]["code"] == "INTERNAL_ERROR"


def test_debug_variable_shows_the_traceback(monkeypatch, tmp_path):
    rc, _out, err = _run(monkeypatch, tmp_path, "status", env_extra={"INTENT_LOOP_DEBUG": "1"})
    assert rc == 3
    assert "Traceback (most recent call last)" in err and "broken_status" in err
    assert err.rstrip().splitlines()[-1].startswith("intent-loop: INTERNAL_ERROR:")


def test_a_bare_intent_loop_and_help_print_the_help_and_succeed(capsys):
    """Issue 25: what a person types first is neither a usage error nor an invalid choice."""
    import io

    from intent_loop.cli.common import Console
    from intent_loop.cli.main import main

    for argv in ([], ["help"]):
        console = Console(stdout=io.StringIO(), stderr=io.StringIO(), env={})
        assert main(argv, console=console) == 0
        assert "COMMAND" in console.stdout.getvalue() and "status" in console.stdout.getvalue()
    console = Console(stdout=io.StringIO(), stderr=io.StringIO(), env={})
    assert main(["help", "show"], console=console) == 0  # argparse prints a command's --help itself
    assert "--max-chars" in capsys.readouterr().out

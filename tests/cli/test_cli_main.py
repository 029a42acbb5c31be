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


def _leaf_commands(parser, prefix=()):
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            for name, sub in action.choices.items():
                if sub._defaults.get("func") is not None:
                    yield prefix + (name,), sub._defaults
                yield from _leaf_commands(sub, prefix + (name,))


def test_who_may_run_each_command_is_set_where_it_registers_and_refused_in_the_agents_shell(tmp_path):
    """Issue 26: the user-only flag is each command's own default, not a list of function names."""
    import json

    from helpers.cli_runner import make_cli
    from intent_loop.cli.common import USER_ONLY, USER_ONLY_WHEN_APPLIED
    from intent_loop.cli.main import build_parser

    flags = {" ".join(words): defaults.get("user_only") for words, defaults in _leaf_commands(build_parser())}
    assert {c for c, f in flags.items() if f == USER_ONLY} == {
        "claim replace", "claim drop", "candidate confirm", "candidate dismiss", "private", "off", "on", "import",
        "delete task", "delete claim", "link", "unlink"}
    assert {c for c, f in flags.items() if f == USER_ONLY_WHEN_APPLIED} == {
        "recover", "install", "uninstall", "contract withdraw"}
    assert flags["claim add"] is None  # in the agent's shell it records a proposal instead
    cli = make_cli(tmp_path)
    cli.env.update(CODEX_TOOL_CALL_ID="call_1")
    for argv in (["claim", "replace", "0000", "x"], ["private"], ["delete", "task", "x", "--confirm", "y"],
                 ["link"], ["recover", "--apply"], ["install", "--apply"]):
        rc, out, _err = cli(*argv, "--json")
        assert rc == 1 and json.loads(out)["error"]["code"] == "AGENT_SHELL", argv
    rc, out, _err = cli("recover", "--json")  # a dry run stays open
    assert (json.loads(out).get("error") or {}).get("code") != "AGENT_SHELL"

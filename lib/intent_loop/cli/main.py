"""The `intent-loop` command line: `main(argv) -> int`, one module per command group."""
import argparse
import importlib
import sys

from intent_loop.cli.common import USER_ONLY, USER_ONLY_WHEN_APPLIED, Console, report_error
from intent_loop.errors import ErrorCode, IntentLoopError

# Each module defines register(subparsers); order is the order of `intent-loop --help`.
COMMAND_MODULES = ("inspect", "history", "claims_cmd", "maintenance", "portable", "contract_cmd", "install", "link",
                   "replay", "demo", "mcp_cmd")
EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
DEBUG_VARIABLE = "INTENT_LOOP_DEBUG"


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so main() owns the exit status. Every parser, the
    top level and each command's, takes --project DIR, so it may stand anywhere on the line (absent,
    it sets nothing: a subcommand's default never hides the top level's value)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_argument("--project", metavar="DIR", default=argparse.SUPPRESS,
                          help="the project to work on (default: the nearest recorded project from the "
                               "current directory upward, as git finds a repository)")

    def error(self, message):
        raise _UsageError(f"{self.prog}: {message} (see `{self.prog} --help`)")


class _UsageError(Exception):
    pass


def build_parser():
    parser = _Parser(prog="intent-loop", description=(
        "Look at, fix and manage what the intent-loop hooks recorded for the project in the "
        "current directory. Every command takes --help."))
    parser.add_argument("--version", action="store_true", help="print the release of intent-loop and exit")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"intent_loop.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"intent_loop.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


MAINTENANCE_SECONDS = 30.0


def main(argv=None, *, console=None):
    """Run one command; 0 done, 1 a check found a problem or the operation failed, 2 usage error,
    3 an internal error (a bug: INTERNAL_ERROR)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if console is None:
        try:
            console = Console()
        except FileNotFoundError:  # os.getcwd(): the folder it was run from is deleted
            return report_error(Console(cwd="/"), IntentLoopError(ErrorCode.CWD_GONE, (
                "the current folder no longer exists; cd into your project (or pass --project DIR from "
                "another folder) and run the command again")), as_json="--json" in argv)
    parser = build_parser()
    if not argv or argv == ["help"]:  # what a person types first: the help, and success
        console.out(parser.format_help())
        return EXIT_OK
    if argv[0] == "help":  # `intent-loop help show` is `intent-loop show --help`
        argv = [*argv[1:], "--help"]
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        console.err(str(exc))
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version print and "exit"
        return int(exc.code or 0)
    if getattr(args, "version", False) and not getattr(args, "func", None):
        from intent_loop.base.release import VERSION

        console.out(f"intent-loop {VERSION}")
        return EXIT_OK
    if not getattr(args, "func", None):
        console.out(parser.format_help())
        return EXIT_USAGE
    if getattr(args, "project", None) is not None:
        console.project = args.project
    try:
        _refuse_in_agent_shell(args, console)
        return args.func(args, console)
    except IntentLoopError as exc:
        return report_error(console, exc, as_json=getattr(args, "json", False))
    except Exception as exc:  # the one catch-all: no traceback reaches a user (library code never has one)
        return _report_internal_error(console, exc, as_json=getattr(args, "json", False))
    finally:
        _run_maintenance()


def _run_maintenance():
    """Storage maintenance the command asked for (a request index to rebuild): done before exit,
    best effort, since its output is a cache and the command's answer is already printed."""
    import time

    from intent_loop.storage import maintenance

    for _paths, job in maintenance.take_maintenance():
        try:
            job(time.monotonic() + MAINTENANCE_SECONDS)
        except Exception:  # noqa: S110 - a cache left stale is rebuilt by the next call that needs it
            pass


def is_agent_shell(env):
    """Codex 0.169.0 sets CODEX_TOOL_CALL_ID (and CODEX_THREAD_ID) in every command its agent runs,
    in every sandbox mode (checked with the real CLI). It marks an honest agent's commands; a
    command the model writes can unset it, so this is a guard against mistakes, not a boundary."""
    return bool(env.get("CODEX_TOOL_CALL_ID") or env.get("CODEX_THREAD_ID"))


def _refuse_in_agent_shell(args, console):
    """A command registered as user-only (cli/common.py USER_ONLY) is refused in the agent's shell;
    `claim add` there records a proposal instead, and an apply-gated one's dry run stays open."""
    who = getattr(args, "user_only", None)
    if (who == USER_ONLY or (who == USER_ONLY_WHEN_APPLIED and getattr(args, "apply", False))) \
            and is_agent_shell(console.env):
        raise IntentLoopError(ErrorCode.AGENT_SHELL, (
            "this command speaks as the user, and it runs in a shell Codex's agent started (CODEX_TOOL_CALL_ID "
            "is set); the agent records through the MCP tools, and the user runs this in their own terminal"))


def _report_internal_error(console, exc, *, as_json):
    """INTERNAL_ERROR with a one-line hint; INTENT_LOOP_DEBUG=1 adds the traceback on stderr."""
    if console.env.get(DEBUG_VARIABLE) == "1":
        import traceback

        console.err("".join(traceback.format_exception(exc)).rstrip())
    error = IntentLoopError(ErrorCode.INTERNAL_ERROR, (
        f"unexpected {type(exc).__name__}; stored data was not changed by this report. "
        f"Run again with {DEBUG_VARIABLE}=1 to see the traceback, and report it"))
    report_error(console, error, as_json=as_json)
    return EXIT_INTERNAL


def run():
    """Entry point of dist/intent-loop."""
    from intent_loop.launch.extracted_runtime import finish_extraction

    finish_extraction()
    sys.exit(main())

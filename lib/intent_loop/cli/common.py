"""What every command shares: where output goes, the project of the cwd, the task to act on."""
import os
import sys
import time

from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.state import REDUCER
from intent_loop.intent.tasks import resolve_task
from intent_loop.storage.paths import project_paths, resolve_data_root
from intent_loop.storage.reading import load_verified

CLI_DEADLINE = 10.0  # seconds a command may wait for the project lock and work
# `delete task` and `delete claim` rewrite and re-verify the whole ledger (and, without a checkpoint,
# verify it first): about 8 s at 100,000 events on a busy 2-core machine, too close to 10 s. Their
# lock heartbeats from a background thread the whole time (storage/lock.py), so other processes see
# a live holder; a hook waiting behind it still gives up at its own 2 s.
REWRITE_DEADLINE = 60.0
USAGE_CODES = frozenset((ErrorCode.INVALID_ARGUMENT,))


def _escapes():
    from intent_loop.intent.claims import UNSAFE_CHARACTERS

    return {ord(ch): f"\\u{ord(ch):04x}" for ch in UNSAFE_CHARACTERS if ch != "\n"}


_ESCAPES = None


def terminal_safe(text):
    """`text` with every control and bidi character but LF and TAB written as `\\uXXXX`: text stored
    before the character rule (or an imported file) can never retitle a terminal, clear it or
    reorder what it shows. The same escape is valid inside JSON strings, so --json stays JSON."""
    global _ESCAPES
    if _ESCAPES is None:
        _ESCAPES = _escapes()
    text = text.translate(_ESCAPES)
    if text.isascii():
        return text
    from intent_loop.intent.claims import unsafe_characters

    for ch in unsafe_characters(text):  # the invisible format characters (Cf, TAG block) left
        if ch != "\n":
            text = text.replace(ch, _json_escape(ch))
    return text


def _json_escape(ch):
    """`\\uXXXX`, as a surrogate pair above the BMP: valid in JSON strings and plain to read."""
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


# Who may run a command (set where each command registers: `p.set_defaults(user_only=...)`): one that
# speaks as the user (changes what the user asked for, which tasks exist, what is installed) is
# refused in a shell the agent runs (cli/main.py is_agent_shell); an apply-gated one only with --apply.
USER_ONLY = "always"
USER_ONLY_WHEN_APPLIED = "when applied"


class Console:
    """stdout/stderr, the environment and the cwd; tests pass their own."""

    def __init__(self, *, stdout=None, stderr=None, env=None, cwd=None, project=None):
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.env = dict(os.environ) if env is None else env
        self.cwd = cwd or os.getcwd()
        self.project = project  # --project DIR: the project to work on, found by walking up when None

    def out(self, text=""):
        text = terminal_safe(text)
        self.stdout.write(text if text.endswith("\n") else text + "\n")

    def err(self, text):
        text = terminal_safe(text)
        self.stderr.write(text if text.endswith("\n") else text + "\n")

    def json(self, value):
        """Stable JSON for machines: sorted keys, two-space indent."""
        import json  # only the CLI pays for it

        self.out(json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False))

    def is_terminal(self):
        return hasattr(self.stderr, "isatty") and self.stderr.isatty()

    def progress(self, done, total):
        """Progress for long operations on a terminal (erased when done); quiet when piped."""
        if self.is_terminal() and total:
            self.stderr.write(f"\r{100 * done // total:3d}%" if done < total else "\r    \r")
            self.stderr.flush()


def report_error(console, exc, *, as_json=False):
    if as_json:
        console.json({"ok": False, "error": exc.to_dict()})
    else:
        console.err(f"intent-loop: {exc.code}: {exc.message}")
    return 2 if exc.code in USAGE_CODES else 1


def deadline(seconds=CLI_DEADLINE):
    return time.monotonic() + seconds


def data_root(console):
    """(root, how_chosen) for this process's environment."""
    return resolve_data_root(console.env, executable=sys.argv[0] if sys.argv else None)


def current_project(console, *, writes=False):
    """The project this command works on, found as git finds a repository: `--project DIR` when
    given, else the nearest directory from the current one upward that is a project intent-loop
    recorded (its ledger exists), which is said on stderr when it is not the current directory
    itself. Where there is none: NO_PROJECT, for a read (it says so) and for a write (`writes`),
    which needs --project DIR to start a project there. The hooks never come here: they use
    Codex's cwd, since Guard reads `<cwd>/.execution-fidelity/`."""
    root, _how = data_root(console)
    explicit = getattr(console, "project", None)
    if explicit is not None:
        directory = os.path.abspath(os.path.join(console.cwd, os.path.expanduser(explicit)))
        if not os.path.isdir(directory):
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"--project {explicit}: not a directory")
        return project_paths(root, directory)
    found = find_recorded_project(root, console.cwd)
    if found is not None:
        if found.root != os.path.realpath(console.cwd):
            console.err(f"intent-loop: project {found.root} (the nearest recorded project above this folder)")
        return found
    here = os.path.realpath(console.cwd)
    if writes:
        raise IntentLoopError(ErrorCode.NO_PROJECT, (
            f"{here} is not a project intent-loop has recorded, nor inside one; to start one here, pass "
            "--project . (or --project DIR for another folder); Codex's hooks start one by themselves"))
    raise IntentLoopError(ErrorCode.NO_PROJECT, (
        f"{here} is not a project intent-loop has recorded, nor inside one: run the command in a project's "
        "folder or below it, or pass --project DIR"))


def find_recorded_project(root, cwd):
    """ProjectPaths of the nearest directory from `cwd` upward whose ledger exists, or None."""
    from intent_loop.storage.ledger import is_project_present

    directory = os.path.realpath(cwd)
    while True:
        try:
            paths = project_paths(root, directory)
        except IntentLoopError:  # a directory that can be no project (the filesystem root): go on up
            paths = None
        if paths is not None and is_project_present(paths):
            return paths
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def damage_next_action(error):
    """What to do about a ledger that does not verify (an IntentLoopError, or None when unknown):
    `recover` only where it helps. It refuses a linked, special or hard-linked ledger with
    UNSAFE_PATH just as every other command does, and a newer schema with FUTURE_SCHEMA."""
    code = getattr(error, "code", None)
    if code == ErrorCode.UNSAFE_PATH:
        where = error.message.split("; inspect")[0]  # "refusing <path>: <why>"
        return (f"{where}: every command refuses it (`recover` too); put the real ledger there as a regular file "
                "of its own (or remove what stands there), then run `intent-loop verify`")
    if code == ErrorCode.FUTURE_SCHEMA:
        return "upgrade intent-loop: a newer version wrote this ledger (`recover` refuses it too)"
    return "run `intent-loop recover` in the damaged project's directory"


def load_checkpointed(paths):
    """The project's Verified, leaving a checkpoint behind even when `cache/` was deleted (a large
    unverified part is verified by the streaming verifier, see storage/ledger.py)."""
    from intent_loop.storage.ledger import is_project_present
    from intent_loop.storage.paths import check_regular_file, ensure_directory

    if is_project_present(paths) and check_regular_file(paths.ledger) is not None:
        try:
            ensure_directory(paths.cache_dir)
        except IntentLoopError:
            pass  # the cache is an accelerator: without it the read still verifies
    return load_verified(paths, REDUCER)


def load_state(paths):
    return load_checkpointed(paths).state


def pick_task(state, task_option):
    """--task ID (a unique prefix) or the most recently changed task."""
    if task_option is not None:  # `--task ""` is a mistake, never "the default task"
        return resolve_task(state, task_option)
    newest = state["last_change"]["task_id"]
    if newest is None:
        raise IntentLoopError(ErrorCode.NO_TASK,
                              "this project has no task yet; `intent-loop claim add goal <text>` starts one")
    return newest


def add_json_flag(parser):
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")


def show_group_help(parser):
    """A command group run without its subcommand prints the group's help (usage error, exit 2)."""
    def show_help(args, console):
        console.out(parser.format_help())
        return 2

    parser.set_defaults(func=show_help)


def add_task_option(parser, *, default="the most recently changed task"):
    parser.add_argument("--task", metavar="ID", help=f"a task id or unique prefix (default: {default})")


def finish_command(parser, func, *, task=False, **defaults):
    """End a command's parser: the options every command ends with (--task first with `task`, then
    --json), and `func` with `defaults` (`user_only`, ...) as what the parsed command runs."""
    if task:
        add_task_option(parser)
    add_json_flag(parser)
    parser.set_defaults(func=func, **defaults)

"""The one table of the entry points: each binary of dist/, the source launcher's entry that runs the
same code from the committed tree (hooks/intent-loop), and, for the hooks, the Codex handler.

build.py builds from it, both plugins' hooks.json files are generated from it, `install` writes its
handlers and recognises them by it, and `replay` and the tests find the binaries through it.
Codex trusts a hook by the hash of its handler definition (command, timeout, status message):
changing a value here silently disables every installed hook until its user trusts it again.
"""

HOOK_PREFIX = "intent-loop-"  # every hook binary's name starts so; `install` recognises its handlers by it
HANDLER_TIMEOUT = 5  # seconds Codex gives a handler
STATUS_MESSAGE = "intent-loop"
PLUGIN_COMMAND = "${PLUGIN_ROOT}/dist/"  # how dist/marketplace's hooks.json names a binary
# The plugin Codex installs from the repository runs the committed source tree through one POSIX
# sh launcher (hooks/intent-loop, docs/install.md), its first argument naming the entry point.
SOURCE_LAUNCHER = "hooks/intent-loop"
SOURCE_COMMAND = '"${PLUGIN_ROOT}/hooks/intent-loop" '  # quoted: a Codex home may hold a space
# Claude Code runs a hook with `/bin/sh -c` and sets CLAUDE_PLUGIN_ROOT, never PLUGIN_ROOT (which would
# expand to nothing there): its hooks file, hooks/hooks.json, names the same launcher by its variable.
CLAUDE_SOURCE_COMMAND = '"${CLAUDE_PLUGIN_ROOT}/hooks/intent-loop" '
# What a plugin hook runs on native Windows, where neither launcher can: Codex 0.169.0 takes a
# handler's `commandWindows` there instead of `command` (unverified without Windows: docs/install.md).
WINDOWS_NOTICE = ('echo {"continue":true,"systemMessage":"intent-loop does not run on native Windows; '
                  'run Codex inside WSL to use it"}')


class Binary:
    """One file of dist/: `module:function` is its entry point; hooks have a Codex event."""

    __slots__ = ("name", "entry", "module", "function", "event", "matcher")

    def __init__(self, name, *, entry, module, function, event=None, matcher=None):
        self.name, self.entry, self.module, self.function = name, entry, module, function
        self.event, self.matcher = event, matcher

    @property
    def is_hook(self):
        return self.event is not None

    def __repr__(self):
        return f"Binary({self.name!r}, entry={self.module}:{self.function}, event={self.event!r})"


BINARIES = (
    Binary("intent-loop-session-start", entry="session-start", module="hooks.session_start", function="main",
           event="SessionStart", matcher="startup|resume|clear|compact|fork"),
    Binary("intent-loop-user-prompt", entry="user-prompt", module="hooks.user_prompt", function="main",
           event="UserPromptSubmit"),
    Binary("intent-loop-stop", entry="stop", module="hooks.stop", function="main", event="Stop"),
    Binary("intent-loop", entry="cli", module="intent_loop.cli.main", function="run"),
    # The MCP server Codex starts per session (docs/mcp.md); not a hook, so install never writes it
    # into hooks.json (its name starts with HOOK_PREFIX but `install` only looks at hook handlers).
    Binary("intent-loop-mcp", entry="mcp", module="intent_loop.mcp.server", function="run"),
)
HOOKS = tuple(binary for binary in BINARIES if binary.is_hook)
HOOK_EVENTS = tuple(hook.event for hook in HOOKS)
BY_NAME = {binary.name: binary for binary in BINARIES}
BINARY_FOR_EVENT = {binary.event: binary.name for binary in HOOKS}


def handler_group(hook, command, *, windows=None):
    """The matcher group Codex reads for one hook; the key order is part of the bytes Codex hashes.
    `windows`: the handler's commandWindows (the plugins' hooks.json files; `install` writes none)."""
    group = {"matcher": hook.matcher} if hook.matcher else {}
    handler = {"type": "command", "command": command}
    if windows is not None:
        handler["commandWindows"] = windows
    handler.update(timeout=HANDLER_TIMEOUT, statusMessage=STATUS_MESSAGE)
    group["hooks"] = [handler]
    return group


def claude_handler_group(hook):
    """The matcher group Claude Code reads for one hook (hooks/hooks.json): the same entry and
    matcher, Claude Code's variable, and no Codex-only fields."""
    group = {"matcher": hook.matcher} if hook.matcher else {}
    group["hooks"] = [{"type": "command", "command": CLAUDE_SOURCE_COMMAND + hook.entry, "timeout": HANDLER_TIMEOUT}]
    return group


def source_command(binary):
    """How the repository plugin's hooks.json runs a hook: the source launcher and its entry."""
    return SOURCE_COMMAND + binary.entry

"""The one table of the binaries in dist/: each one's entry point and, for the hooks, its Codex handler.

build.py builds from it, the plugin's hooks.json is generated from it, `install` writes its
handlers and recognises them by it, and `replay` and the tests find the binaries through it.
Codex trusts a hook by the hash of its handler definition (command, timeout, status message):
changing a value here silently disables every installed hook until its user trusts it again.
"""

HOOK_PREFIX = "intent-loop-"  # every hook binary's name starts so; `install` recognises its handlers by it
HANDLER_TIMEOUT = 5  # seconds Codex gives a handler
STATUS_MESSAGE = "intent-loop"
PLUGIN_COMMAND = "${PLUGIN_ROOT}/dist/"  # how the plugin's hooks.json names a binary


class Binary:
    """One file of dist/: `module:function` is its entry point; hooks have a Codex event."""

    __slots__ = ("name", "module", "function", "event", "matcher")

    def __init__(self, name, *, module, function, event=None, matcher=None):
        self.name, self.module, self.function = name, module, function
        self.event, self.matcher = event, matcher

    @property
    def is_hook(self):
        return self.event is not None

    def __repr__(self):
        return f"Binary({self.name!r}, entry={self.module}:{self.function}, event={self.event!r})"


BINARIES = (
    Binary("intent-loop-session-start", module="hooks.session_start", function="main",
           event="SessionStart", matcher="startup|resume|clear|compact"),
    Binary("intent-loop-user-prompt", module="hooks.user_prompt", function="main", event="UserPromptSubmit"),
    Binary("intent-loop-stop", module="hooks.stop", function="main", event="Stop"),
    Binary("intent-loop", module="intent_loop.cli.main", function="run"),
    # The MCP server Codex starts per session (docs/mcp.md); not a hook, so install never writes it
    # into hooks.json (its name starts with HOOK_PREFIX but `install` only looks at hook handlers).
    Binary("intent-loop-mcp", module="intent_loop.mcp.server", function="run"),
)
HOOKS = tuple(binary for binary in BINARIES if binary.is_hook)
BY_NAME = {binary.name: binary for binary in BINARIES}
BINARY_FOR_EVENT = {binary.event: binary.name for binary in HOOKS}


def handler_group(hook, command):
    """The matcher group Codex reads for one hook; the key order is part of the bytes Codex hashes."""
    group = {"matcher": hook.matcher} if hook.matcher else {}
    group["hooks"] = [{"type": "command", "command": command, "timeout": HANDLER_TIMEOUT,
                       "statusMessage": STATUS_MESSAGE}]
    return group

"""The stdio MCP server process: the handshake, ping, tools/list and tools/call, until EOF or SIGTERM.

Only what the handshake and `tools/list` need is imported at start: Codex lists the tools of an
optional server only if they arrive within about one second of the session start
(docs/mcp.md), and every module here is a slice of that. The tools load on the first call.
"""
import sys
import time

from intent_loop.base import fast_os
from intent_loop.mcp import rpc

SUPPORTED_VERSIONS = ("2025-06-18", "2025-03-26", "2024-11-05")
ROOTS_TIMEOUT = 5.0  # seconds a client that offered roots gets to answer roots/list
INSTRUCTIONS = ("intent-loop: the user's recorded intent. Read it with intent_get_snapshot; record what you "
                "observed with intent_add_evidence, intent_add_inference, intent_mark_unknown, intent_mark_dispute: "
                "yours, never the user's words (intent_add_explicit only proposes). If the user's `intent:` lines "
                "got no intent-loop receipt, call intent_status and tell the user they were NOT recorded, why "
                "(hooks.cause) and what to do (hooks.next_action). Guard pausing an `ask` rule: tell the user "
                "`intent: approve <id>` allows it; a forbid only the user lifts.")


class Server:
    """One client connection over (stdin, stdout); `serve()` returns when the input ends or once
    `shutdown` says a signal asked it to stop (after the request under way is answered)."""

    def __init__(self, *, stdin_fd=0, stdout_fd=1, env=None, executable=None, shutdown=None):
        self.shutdown = rpc.Shutdown() if shutdown is None else shutdown
        self.reader = rpc.LineReader(stdin_fd, shutdown=self.shutdown)
        self.writer = rpc.Writer(stdout_fd, shutdown=self.shutdown)
        self.env = fast_os.environment if env is None else env
        self.executable = executable
        self.client_capabilities = {}
        self.queued = []  # messages that arrived while waiting for the client's roots/list answer
        self.next_request = 0
        self.tools = None  # intent_loop.mcp.tools, loaded on the first tools/call

    def serve(self):
        while not self.shutdown.requested:
            message = self._next_message()
            if message is None or self.shutdown.requested:
                return
            try:
                reply = self.handle(message)
            except Exception as exc:  # the server's one catch-all: a bug answers an error, never a crash
                reply = rpc.error_reply(message.get("id"), rpc.INTERNAL, f"internal error: {type(exc).__name__}")
                if "id" not in message:
                    reply = None
            if reply is not None:
                self.writer.send(reply)

    def _next_message(self):
        if self.queued:
            return self.queued.pop(0)
        while True:
            line = self.reader.next_line()
            if line is None:
                return None
            if line is rpc.LineReader.TOO_LONG:
                self.writer.send(rpc.error_reply(None, rpc.INVALID_REQUEST,
                                                 f"invalid request: a line is at most {rpc.LINE_CAP} bytes"))
                continue
            if not line.strip():
                continue
            message, error = rpc.parse(line)
            if error is not None:
                self.writer.send(error)
                continue
            return message

    def handle(self, message):
        """The reply to one message, or None (notifications and the client's replies get none)."""
        method = message.get("method")
        if method is None:
            return None  # a response to a request of ours that nobody waits for any more
        is_notification = "id" not in message
        if is_notification:
            return None  # notifications/initialized, cancelled, progress ...: nothing to answer
        request_id = message["id"]
        params = message.get("params", {})
        if not isinstance(params, dict):
            return rpc.error_reply(request_id, rpc.INVALID_PARAMS, '"params" must be an object')
        if method == "initialize":
            return rpc.result_reply(request_id, self._initialize(params))
        if method == "ping":
            return rpc.result_reply(request_id, {})
        if method == "tools/list":
            from intent_loop.mcp.tool_table import TOOLS

            return rpc.result_reply(request_id, {"tools": TOOLS})
        if method == "tools/call":
            return self._call(request_id, params)
        return rpc.error_reply(request_id, rpc.METHOD_NOT_FOUND, f"method not found: {method}")

    def _initialize(self, params):
        capabilities = params.get("capabilities")
        self.client_capabilities = capabilities if isinstance(capabilities, dict) else {}
        asked = params.get("protocolVersion")
        from intent_loop.launch.extracted_runtime import running_build_id

        return {
            "protocolVersion": asked if asked in SUPPORTED_VERSIONS else SUPPORTED_VERSIONS[0],
            "capabilities": {"tools": {"listChanged": False}, "experimental": {rpc.SANDBOX_META: {}}},
            "serverInfo": {"name": "intent-loop", "version": (running_build_id() or "source")[:12]},
            "instructions": INSTRUCTIONS,
        }

    def _call(self, request_id, params):
        name, arguments = params.get("name"), params.get("arguments", {})
        if arguments is None:
            arguments = {}
        from intent_loop.mcp.tool_table import TOOL_NAMES

        if not isinstance(name, str) or name not in TOOL_NAMES:
            return rpc.error_reply(request_id, rpc.INVALID_PARAMS, f"unknown tool: {name!r}")
        if not isinstance(arguments, dict):
            return rpc.error_reply(request_id, rpc.INVALID_PARAMS, '"arguments" must be an object')
        if self.tools is None:
            from intent_loop.mcp import tools

            self.tools = tools.Tools(env=self.env, executable=self.executable, ask_roots=self.ask_roots)
        meta = params.get("_meta")
        return rpc.result_reply(request_id, self.tools.call(name, arguments, meta if isinstance(meta, dict) else {}))

    # -- a request of ours: roots/list -----------------------------------------------------
    def offers_roots(self):
        return isinstance(self.client_capabilities.get("roots"), dict)

    def ask_roots(self):
        """The client's roots (a list), or None when it offers none or does not answer in time."""
        if not self.offers_roots():
            return None
        self.next_request += 1
        our_id = f"intent-loop-roots-{self.next_request}"
        self.writer.send({"jsonrpc": "2.0", "id": our_id, "method": "roots/list", "params": {}})
        until = time.monotonic() + ROOTS_TIMEOUT
        while time.monotonic() < until:
            line = self.reader.next_line()  # a client that never answers blocks here; Codex offers no roots
            if line is None or line is rpc.LineReader.TOO_LONG:
                return None
            message, error = rpc.parse(line)
            if error is not None:
                continue
            if "method" not in message and message.get("id") == our_id:
                roots = (message.get("result") or {}).get("roots") if isinstance(message.get("result"), dict) else None
                return roots if isinstance(roots, list) else None
            self.queued.append(message)
        return None


def serve_stdio(*, env=None):
    """The process's whole life: SIGTERM (or SIGINT) and end of input all end it with status 0.

    The signal handler only sets a flag (rpc.Shutdown): a write under way finishes, its lock
    given back as usual, and the process exits before the next request. Nothing is imported or
    compiled on the way out: `_exit` skips the interpreter's finalisation."""
    shutdown = rpc.Shutdown()
    shutdown.install()
    try:
        Server(env=env, executable=sys.argv[0] if sys.argv else None, shutdown=shutdown).serve()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    fast_os._exit(0)


def run():
    """Entry point of dist/intent-loop-mcp."""
    if fast_os.getenv("INTENT_LOOP_EXTRACTING") is not None:  # only the first run after shiv extracted it
        from intent_loop.launch.extracted_runtime import finish_extraction

        finish_extraction()
    serve_stdio()

"""One tool call from start to envelope: bind it to a project and session, read the state, resolve
the task, run the tool, and turn every outcome (a bug included) into the result envelope."""
import time

from intent_loop.base.canonical import sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.state import REDUCER
from intent_loop.mcp import arguments, envelope
from intent_loop.mcp.binding import bind
from intent_loop.mcp.private_memory import PrivateMemory
from intent_loop.mcp.results import NO_TASK_MESSAGE
from intent_loop.storage.ledger import new_uuid4

WRITE_DEADLINE = 10.0  # seconds a write may wait for the project lock and work (Codex allows 30)


class Tools:
    """The tools of one server process; `memory` holds the private sessions' records."""

    def __init__(self, *, env, executable, ask_roots):
        self.env = env
        self.executable = executable
        self.ask_roots = ask_roots
        self.memory = PrivateMemory()

    def call(self, name, args, meta):
        """The CallToolResult of one call; never raises (SIGTERM only sets a flag: the call finishes)."""
        call = None
        try:
            handler = _handler(name)
            arguments.check_names(args, _argument_names(name))  # before any state is read (issue 26)
            call = Call(self, name, args, bind(meta, args, env=self.env, executable=self.executable,
                                               ask_roots=self.ask_roots))
            result = handler(call)
            out = envelope.success(name, project_id=call.paths.project_id, task_id=call.task_id, result=result)
        except IntentLoopError as exc:
            out = envelope.failure(name, exc, project_id=call.paths.project_id if call else None,
                                   task_id=call.task_id if call else None)
        except Exception as exc:  # the one catch-all of a call: a bug becomes INTERNAL_ERROR, the server lives on
            if self.env.get("INTENT_LOOP_DEBUG") == "1":  # as the CLI: the traceback only when asked, on stderr
                import traceback

                traceback.print_exception(exc)
            error = IntentLoopError(ErrorCode.INTERNAL_ERROR, (
                f"unexpected {type(exc).__name__} in intent-loop's MCP server; nothing was changed by this "
                "report. Please report it with the tool name and arguments"))
            out = envelope.failure(name, error, project_id=call.paths.project_id if call else None)
        return envelope.tool_result(out)


def handlers():
    """{tool name: handler} of every tool of mcp/tool_table.py (a test pins that both list the same
    tools): reads, the agent's writes, and the amendments that change or remove a record."""
    from intent_loop.mcp import amendments, reads, writes

    return {
        "intent_status": reads.intent_status, "intent_get_snapshot": reads.intent_get_snapshot,
        "intent_list_candidates": reads.intent_list_candidates, "intent_export": reads.intent_export,
        "intent_start_task": writes.intent_start_task, "intent_add_explicit": writes.intent_add_explicit,
        "intent_add_inference": writes.intent_add_inference, "intent_add_evidence": writes.intent_add_evidence,
        "intent_mark_unknown": writes.intent_mark_unknown, "intent_mark_dispute": writes.intent_mark_dispute,
        "intent_replace_claim": amendments.intent_replace_claim, "intent_invalidate": amendments.intent_invalidate,
        "intent_import": amendments.intent_import, "intent_delete": amendments.intent_delete,
        "intent_set_mode": amendments.intent_set_mode,
    }


def _argument_names(name):
    """The arguments a tool takes, from its input schema (mcp/tool_table.py), project_root aside."""
    from intent_loop.mcp.tool_table import TOOLS

    schema = next(tool["inputSchema"] for tool in TOOLS if tool["name"] == name)
    return tuple(n for n in schema["properties"] if n not in arguments.COMMON)


def _handler(name):
    handler = handlers().get(name)
    if handler is None:  # the server answers only the tools of its table (mcp/server.py)
        raise AssertionError(f"tool {name} has no handler")
    return handler


class Call:
    """What one call works on: its binding, the verified state (lock-free read) and the task."""

    def __init__(self, tools, name, args, binding):
        self.tools = tools
        self.name = name
        self.args = args
        self.binding = binding
        self.paths = binding.paths
        self.env = tools.env
        self.memory = tools.memory
        self.task_id = None
        from intent_loop.storage.paths import check_real_directory
        from intent_loop.storage.reading import load_verified

        self.verified = load_verified(self.paths, REDUCER) if check_real_directory(self.paths.dir) else None
        self.state = self.verified.state if self.verified is not None else REDUCER.initial()

    def linked_task_id(self):
        """The thread's own task, else the workspace's current task it follows (docs/hooks.md, the
        continuity table): never a private or off one. No call links or moves anything."""
        from intent_loop.intent.continuity import Place

        session = self.binding.session
        if session is None:
            return None
        return Place(self.state, self.paths, session).task_id

    def resolve_task(self, *, required):
        """The task named by task_id (it must belong to this project) or the session's linked task."""
        typed = self.args.get("task_id")
        if typed is not None:
            if not isinstance(typed, str) or not typed:
                raise arguments.invalid("task_id is a task id of this project (intent_status shows the linked one)")
            from intent_loop.intent.tasks import resolve_task

            self.task_id = resolve_task(self.state, typed)
        else:
            self.task_id = self.linked_task_id()
        if self.task_id is None and required:
            raise IntentLoopError(ErrorCode.NO_TASK, NO_TASK_MESSAGE)
        return self.task_id

    def is_private(self, task_id):
        """The hooks' rule (private_mode.is_private_here), checked on every call: this session's
        private control, the task's mode, or any session's control naming the task."""
        from intent_loop.intent.private_mode import controls_for_task

        if self.is_private_session():
            return True
        task = self.state["tasks"].get(task_id)
        return task is not None and (task["mode"] == "private" or bool(controls_for_task(self.paths, task_id)))

    def private_to_another_session(self, task_id):
        """Another session's private control names the task, and this session holds none."""
        from intent_loop.intent.private_mode import controls_for_task

        return not self.is_private_session() and bool(controls_for_task(self.paths, task_id))

    def is_private_session(self):
        """This session holds a private control: it is in private mode."""
        from intent_loop.intent.private_mode import read_control

        return self.binding.session is not None and read_control(self.paths, self.binding.session) is not None

    def request_id(self):
        """`mcp:` + SHA-256 of the session, Codex's turn and call ids (or the model's own key) and the
        tool: call ids repeat across sessions, and no MCP id can equal a hook's or the CLI's."""
        typed = arguments.request_id(self.args.get("request_id"))
        thread = self.binding.thread_id or ""
        if typed is not None:
            parts = ("key", thread, typed, self.name)
        elif self.binding.call_id is not None:
            parts = ("call", thread, self.binding.turn_id or "", self.binding.call_id, self.name)
        else:
            parts = ("once", new_uuid4(), self.name)
        return "mcp:" + sha256_hex("\0".join(("intent-loop-mcp-v1",) + parts).encode("utf-8"))

    def deadline(self):
        return time.monotonic() + WRITE_DEADLINE

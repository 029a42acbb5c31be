"""Which project and which Codex session a tool call acts for, from Codex's call metadata.

The project root comes from `_meta["codex/sandbox-state-meta"].sandboxCwd` (the hooks' cwd), and the
session from `_meta.threadId` (the hooks' session_id): the model types neither. The project id and
session hash are computed by the same functions the hooks use (a project recorded under another
spelling of its directory keeps its id here too: storage.paths.project_paths).
"""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.mcp.rpc import SANDBOX_META
from intent_loop.storage.paths import paths_for, resolve_data_root, root_spellings, session_hash

TURN_META = "x-codex-turn-metadata"
# Claude Code 2.1.332 sends no session, turn or call id with a tools/call, only this (docs/hosts.md):
# the model's tool-use id, the same for a retry of that call, so it stands in for Codex's callId.
CLAUDE_TOOL_USE_META = "claudecode/toolUseId"
_HEX = "0123456789abcdefABCDEF"


class Binding:
    """The resolved target of one call: project paths, the session hash, Codex's ids for the call."""

    __slots__ = ("paths", "data_root_source", "session", "thread_id", "turn_id", "call_id")

    def __init__(self, paths, *, data_root_source, thread_id, turn_id, call_id):
        self.paths = paths
        self.data_root_source = data_root_source
        self.thread_id = thread_id
        self.turn_id = turn_id
        self.call_id = call_id
        self.session = session_hash(thread_id) if thread_id is not None else None


def _metadata_invalid(why):
    return IntentLoopError(ErrorCode.PROJECT_ROOT_METADATA_INVALID,
                           f"Codex's sandbox metadata names no usable project directory ({why})")


def path_of_file_url(url, *, invalid=_metadata_invalid):
    """The local path of a `file:` URL (empty or localhost host, percent-decoded UTF-8)."""
    if not isinstance(url, str) or not url.startswith("file://"):
        raise invalid("sandboxCwd is not a file: URL")
    host, slash, rest = url[len("file://"):].partition("/")
    if host not in ("", "localhost") or not slash or "?" in rest or "#" in rest:
        raise invalid("only a local file:///absolute/path URL is accepted")
    raw = bytearray()
    i, text = 0, "/" + rest
    while i < len(text):
        char = text[i]
        if char == "%":
            pair = text[i + 1:i + 3]
            if len(pair) != 2 or any(c not in _HEX for c in pair):
                raise invalid("a malformed percent escape")
            raw.append(int(pair, 16))
            i += 3
        else:
            raw += char.encode("utf-8")
            i += 1
    try:
        path = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise invalid("the path is not UTF-8") from exc
    if "\0" in path:
        raise invalid("the path holds a NUL byte")
    return path


def project_root(meta, arguments, *, ask_roots):
    """The project directory a call acts for: (its realpath as the client gave it, its on-disk
    spelling), storage.paths.root_spellings (see the module docstring for the order)."""
    explicit = arguments.get("project_root")
    if explicit is not None:
        if not isinstance(explicit, str):
            raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT, "project_root must be an absolute path")
        explicit = root_spellings(explicit)  # INVALID_PROJECT_ROOT before anything else is looked at
    sandbox = meta.get(SANDBOX_META)
    if sandbox is not None:
        if not isinstance(sandbox, dict) or "sandboxCwd" not in sandbox:
            raise _metadata_invalid("no sandboxCwd")
        spellings = root_spellings(path_of_file_url(sandbox["sandboxCwd"]))
        if explicit is not None and explicit[1] != spellings[1]:
            raise IntentLoopError(ErrorCode.PROJECT_ROOT_MISMATCH, (
                f"project_root names {explicit[1]}, but this Codex session works in {spellings[1]}; "
                "leave project_root out, the session's directory is used"))
        return spellings
    if explicit is not None:
        return explicit
    roots = ask_roots()
    if roots is not None:
        local = [r.get("uri") for r in roots if isinstance(r, dict) and str(r.get("uri", "")).startswith("file:")]
        if len(local) == 1:
            def invalid(why):
                return IntentLoopError(ErrorCode.PROJECT_ROOT_REQUIRED, f"the client's root is unusable ({why})")

            return root_spellings(path_of_file_url(local[0], invalid=invalid))
    raise IntentLoopError(ErrorCode.PROJECT_ROOT_REQUIRED, (
        "no project directory: this client sends neither Codex's sandbox metadata nor exactly one file "
        "root; pass project_root (an absolute path)"))


def bind(meta, arguments, *, env, executable, ask_roots):
    given, root = project_root(meta, arguments, ask_roots=ask_roots)
    data_root, how = resolve_data_root(env, executable=executable)
    paths = paths_for(data_root, given, root)
    thread = meta.get("threadId")
    turn_meta = meta.get(TURN_META)
    turn = turn_meta.get("turn_id") if isinstance(turn_meta, dict) else None
    call = meta.get("callId") or meta.get(CLAUDE_TOOL_USE_META)
    return Binding(paths, data_root_source=how,
                   thread_id=thread if isinstance(thread, str) and thread else None,
                   turn_id=turn if isinstance(turn, str) else None,
                   call_id=call if isinstance(call, str) and call else None)

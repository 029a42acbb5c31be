"""The one exception type of intent-loop and its stable error codes."""


class ErrorCode:
    """Stable codes (never renamed, never reused); every one is documented in docs/errors.md.

    A plain class of string constants rather than enum.Enum: `import enum` costs ~7 ms,
    more than half of a hook's whole budget (docs: startup-performance.md).
    """

    # where data lives, and identity
    DATA_DIR_REQUIRED = "DATA_DIR_REQUIRED"
    INVALID_PROJECT_ROOT = "INVALID_PROJECT_ROOT"
    UNSAFE_PATH = "UNSAFE_PATH"
    # the lock
    LOCK_TIMEOUT = "LOCK_TIMEOUT"
    LOCK_CONFLICT = "LOCK_CONFLICT"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    # the ledger
    LEDGER_MALFORMED = "LEDGER_MALFORMED"
    LEDGER_HASH_MISMATCH = "LEDGER_HASH_MISMATCH"
    LEDGER_CHAIN_BROKEN = "LEDGER_CHAIN_BROKEN"
    LEDGER_TORN_TAIL = "LEDGER_TORN_TAIL"
    FOREIGN_PROJECT = "FOREIGN_PROJECT"
    FUTURE_SCHEMA = "FUTURE_SCHEMA"
    INVALID_TEXT = "INVALID_TEXT"
    INVALID_EVENT = "INVALID_EVENT"
    WRITE_FAILED = "WRITE_FAILED"
    DURABILITY_UNCERTAIN = "DURABILITY_UNCERTAIN"
    INVALID_REQUEST_ID = "INVALID_REQUEST_ID"
    INVALID_HOOK_PAYLOAD = "INVALID_HOOK_PAYLOAD"
    REQUEST_ID_REUSED = "REQUEST_ID_REUSED"
    # the derived cache healing itself (issue 11)
    CACHE_REBUILDING = "CACHE_REBUILDING"
    CACHE_MISMATCH = "CACHE_MISMATCH"
    CHAIN_BROKEN_FOUND = "CHAIN_BROKEN_FOUND"
    # tasks, claims, modes
    TASK_NOT_FOUND = "TASK_NOT_FOUND"
    CLAIM_NOT_FOUND = "CLAIM_NOT_FOUND"
    CANDIDATE_NOT_FOUND = "CANDIDATE_NOT_FOUND"
    AMBIGUOUS_ID = "AMBIGUOUS_ID"
    NO_TASK = "NO_TASK"
    NO_PROJECT = "NO_PROJECT"
    INVALID_STATEMENT = "INVALID_STATEMENT"
    INVALID_CLAIM = "INVALID_CLAIM"
    PROTECTED_CLAIM = "PROTECTED_CLAIM"
    TOO_MANY_INITIAL_CLAIMS = "TOO_MANY_INITIAL_CLAIMS"
    CREDENTIAL_IN_ID = "CREDENTIAL_IN_ID"
    TASK_OFF = "TASK_OFF"
    TASK_PRIVATE = "TASK_PRIVATE"
    PRIVATE_CONFLICT = "PRIVATE_CONFLICT"
    # the intent: command grammar
    UNKNOWN_VERB = "UNKNOWN_VERB"
    EMPTY_TEXT = "EMPTY_TEXT"
    RESERVED_PREFIX = "RESERVED_PREFIX"
    INVALID_SOURCE = "INVALID_SOURCE"
    RULE_SYNTAX = "RULE_SYNTAX"
    # export, import, deletion
    IMPORT_INVALID = "IMPORT_INVALID"
    CONFIRMATION_MISMATCH = "CONFIRMATION_MISMATCH"
    FILE_EXISTS = "FILE_EXISTS"
    # the Guard provider document
    PROJECTION_INCOMPLETE = "PROJECTION_INCOMPLETE"
    CONTRACT_INVALID = "CONTRACT_INVALID"
    CONTRACT_TOO_LARGE = "CONTRACT_TOO_LARGE"
    PROVIDER_PATH_FOREIGN = "PROVIDER_PATH_FOREIGN"
    PROVIDER_PATH_OUTSIDE = "PROVIDER_PATH_OUTSIDE"
    PROVIDER_WRITE_FAILED = "PROVIDER_WRITE_FAILED"
    GUARD_VERSION_UNRECORDED = "GUARD_VERSION_UNRECORDED"
    # the MCP server: which project a tool call is for
    PROJECT_ROOT_REQUIRED = "PROJECT_ROOT_REQUIRED"
    PROJECT_ROOT_METADATA_INVALID = "PROJECT_ROOT_METADATA_INVALID"
    PROJECT_ROOT_MISMATCH = "PROJECT_ROOT_MISMATCH"
    AGENT_LIMIT = "AGENT_LIMIT"
    NEAR_COMMAND = "NEAR_COMMAND"
    # installation and the command line
    HOOKS_CONFIG_INVALID = "HOOKS_CONFIG_INVALID"
    RUNTIME_BROKEN = "RUNTIME_BROKEN"
    CODEX_CONFIG_INVALID = "CODEX_CONFIG_INVALID"
    MCP_SERVER_FOREIGN = "MCP_SERVER_FOREIGN"
    PLUGIN_INSTALLED = "PLUGIN_INSTALLED"
    PYTHON_NOT_FOUND = "PYTHON_NOT_FOUND"  # said by the sh launchers (launch/find_python.sh) and doctor
    PLUGIN_NOT_INSTALLED = "PLUGIN_NOT_INSTALLED"  # said by the launcher `link` writes
    LINK_EXISTS = "LINK_EXISTS"
    AGENT_SHELL = "AGENT_SHELL"
    CWD_GONE = "CWD_GONE"  # the command line run from a folder that was deleted
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    # a bug of intent-loop itself: only the CLI's main raises it, from an unexpected exception
    INTERNAL_ERROR = "INTERNAL_ERROR"


class IntentLoopError(Exception):
    """Raised by library code; `code` is an ErrorCode value, `message` says what to do next."""

    def __init__(self, code, message, *, line=None, details=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.line = line
        self.details = details or {}

    def __reduce__(self):
        """Picklable with its keywords (the default pickling would pass the joined text as `code`)."""
        return _rebuild, (self.code, self.message, self.line, self.details)

    def to_dict(self):
        out = {"code": self.code, "message": self.message}
        if self.line is not None:
            out["line"] = self.line
        if self.details:
            out["details"] = self.details
        return out


def _rebuild(code, message, line, details):
    return IntentLoopError(code, message, line=line, details=details)

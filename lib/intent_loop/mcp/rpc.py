"""Newline-delimited JSON-RPC 2.0 over stdio: reading capped lines, classifying messages, replies,
and the waits on stdin and stdout that SIGTERM ends (Shutdown)."""
import _signal  # the C module: `import signal` builds enums
import posix
from select import POLLIN, POLLOUT, poll

from intent_loop.base import fast_os
from intent_loop.base.canonical import dumps, loads

try:
    from select import PIPE_BUF
except ImportError:  # pragma: no cover - POSIX systems have it
    PIPE_BUF = 512

# Codex's experimental capability: a server that declares it gets the sandbox state in each call's _meta
SANDBOX_META = "codex/sandbox-state-meta"
LINE_CAP = 4 * 1024 * 1024  # bytes of one message; a longer line is refused and skipped, never buffered
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = -32700, -32600, -32601, -32602, -32603


class Shutdown:
    """SIGTERM (and SIGINT) as a flag, never as an exception.

    A handler that raised did so inside whatever the main thread was running (it was seen inside
    CPython's compiler), and the server died with SIGSEGV instead of exiting 0. The handler now
    only sets `requested`: the request under way runs to its end and the server stops before the
    next one. The waits are where it could otherwise sit for good (stdin, as Codex sends no end
    of input first; stdout, when the client has stopped reading): they poll the descriptor
    together with the pipe the interpreter's C-level handler writes the signal's number into
    (`_signal.set_wakeup_fd`), so a signal landing just before a poll still ends it. Until
    `install()` (a Server driven in-process) the waits are plain blocking I/O.
    """

    SIGNALS = (_signal.SIGTERM, _signal.SIGINT)

    def __init__(self):
        self.requested = False
        self.wake_fd = None

    def install(self):
        """Take over SIGTERM and SIGINT (from the main thread)."""
        wake_fd, write_fd = posix.pipe()  # both ends close on exec
        posix.set_blocking(wake_fd, False)
        posix.set_blocking(write_fd, False)
        _signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)  # before the handlers: no signal is missed
        self.wake_fd = wake_fd
        for signum in self.SIGNALS:
            _signal.signal(signum, self.on_signal)

    def on_signal(self, signum, frame):
        self.requested = True  # nothing more: this runs between any two bytecodes of the main thread

    def _drain(self):
        """Empty the wakeup pipe; a number of ours sets `requested` (the C-level handler writes it
        before the Python-level one runs, which may not have happened yet)."""
        while True:
            try:
                data = posix.read(self.wake_fd, 64)
            except BlockingIOError:
                return
            if not data:
                return
            if any(signum in data for signum in self.SIGNALS):
                self.requested = True

    def wait(self, fd, events):
        """Whether `fd` is ready for `events` (POLLIN or POLLOUT): blocks until it is or until a
        signal asks the server to stop; once stopping, it answers for this moment and never waits."""
        if self.wake_fd is None:
            return True  # not installed: the read or write itself blocks
        poller = poll()
        poller.register(fd, events)
        if not self.requested:
            poller.register(self.wake_fd, POLLIN)
        while True:
            ready = {ready_fd for ready_fd, _what in poller.poll(0 if self.requested else None)}
            if self.wake_fd in ready:
                self._drain()
            if fd in ready:  # ready, hung up or in error: the read or write that follows says which
                return True
            if self.requested:
                if self.wake_fd in ready:
                    poller.unregister(self.wake_fd)
                    continue  # one last look at `fd` alone, without waiting
                return False


class LineReader:
    """Whole lines from a file descriptor; a line over the cap comes back as TOO_LONG, once."""

    TOO_LONG = object()

    def __init__(self, fd, *, cap=LINE_CAP, shutdown=None):
        self.fd = fd
        self.cap = cap
        self.shutdown = Shutdown() if shutdown is None else shutdown
        self.buffer = b""
        self.skipping = False  # inside a line that is over the cap: drop bytes up to its newline
        self.eof = False

    def next_line(self):
        """bytes of the next line (no newline), TOO_LONG, or None at end of input or once a signal
        asked the server to stop (lines already read are then left unserved)."""
        scanned = 0  # bytes of the buffer known to hold no newline: a long line is scanned once
        while True:
            if self.shutdown.requested:
                return None
            at = self.buffer.find(b"\n", scanned)
            if at >= 0:
                line, self.buffer, scanned = self.buffer[:at], self.buffer[at + 1:], 0
                if self.skipping:
                    self.skipping = False
                    continue
                if len(line) > self.cap:
                    return self.TOO_LONG
                return line
            if self.skipping:
                self.buffer = b""
            elif len(self.buffer) > self.cap:
                self.buffer, self.skipping = b"", True
                return self.TOO_LONG
            if self.eof:
                line, self.buffer = self.buffer, b""
                return None if self.skipping or not line.strip() else line
            self.shutdown.wait(self.fd, POLLIN)
            if self.shutdown.requested:
                return None
            chunk = fast_os.read(self.fd, 1 << 16)
            if not chunk:
                self.eof = True
            scanned = len(self.buffer)
            self.buffer += chunk


class Writer:
    """One message per line, written whole (a partial write is finished, EPIPE ends quietly).

    Written in pieces of at most PIPE_BUF bytes, each once a poll says the descriptor is writable,
    which a pipe then takes without blocking: the server never sits in a write a signal cannot
    end. Once stopping, what the client does not take at once is abandoned."""

    def __init__(self, fd, *, shutdown=None):
        self.fd = fd
        self.shutdown = Shutdown() if shutdown is None else shutdown

    def send(self, message):
        view = memoryview(dumps(message).encode("utf-8", "replace") + b"\n")
        piece = PIPE_BUF if self.shutdown.wake_fd is not None else len(view)
        while view:
            if not self.shutdown.wait(self.fd, POLLOUT):
                return
            try:
                view = view[fast_os.write(self.fd, view[:piece]):]
            except InterruptedError:
                continue


def error_reply(request_id, code, message):
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def result_reply(request_id, result):
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def is_valid_id(value):
    return value is None or (isinstance(value, (str, int)) and not isinstance(value, bool))


def parse(line):
    """(message dict, None) or (None, error reply) for one line."""
    if line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]
    try:
        message = loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None, error_reply(None, PARSE_ERROR, "parse error: each line must be one JSON-RPC message")
    if not isinstance(message, dict):  # batches were removed from MCP in 2025-06-18
        return None, error_reply(None, INVALID_REQUEST, "invalid request: one JSON object per line, no batches")
    request_id = message.get("id")
    if message.get("jsonrpc") != "2.0" or not is_valid_id(request_id):
        return None, error_reply(request_id if is_valid_id(request_id) else None, INVALID_REQUEST,
                                 'invalid request: "jsonrpc" must be "2.0" and "id" a string or integer')
    if "method" in message and not isinstance(message["method"], str):
        return None, error_reply(request_id, INVALID_REQUEST, 'invalid request: "method" must be a string')
    if "method" not in message and "id" not in message:
        return None, error_reply(None, INVALID_REQUEST, 'invalid request: no "method"')
    return message, None

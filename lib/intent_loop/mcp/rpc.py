"""Newline-delimited JSON-RPC 2.0 over stdio: reading capped lines, classifying messages, replies."""
from intent_loop.storage import fast_os
from intent_loop.storage.canonical import dumps, loads

LINE_CAP = 4 * 1024 * 1024  # bytes of one message; a longer line is refused and skipped, never buffered
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL = -32700, -32600, -32601, -32602, -32603


class LineReader:
    """Whole lines from a file descriptor; a line over the cap comes back as TOO_LONG, once."""

    TOO_LONG = object()

    def __init__(self, fd, *, cap=LINE_CAP):
        self.fd = fd
        self.cap = cap
        self.buffer = b""
        self.skipping = False  # inside a line that is over the cap: drop bytes up to its newline
        self.eof = False

    def next_line(self):
        """bytes of the next line (no newline), TOO_LONG, or None at end of input."""
        scanned = 0  # bytes of the buffer known to hold no newline: a long line is scanned once
        while True:
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
            chunk = fast_os.read(self.fd, 1 << 16)
            if not chunk:
                self.eof = True
            scanned = len(self.buffer)
            self.buffer += chunk


class Writer:
    """One message per line, written whole (a partial write is finished, EPIPE ends quietly)."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, message):
        view = memoryview(dumps(message).encode("utf-8", "replace") + b"\n")
        while view:
            try:
                view = view[fast_os.write(self.fd, view):]
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

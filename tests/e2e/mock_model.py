"""A stdlib-only mock of the OpenAI Responses API for driving the real Codex CLI offline.

`POST <base>/v1/responses` answers every request with a two-event SSE stream, which is enough
for Codex 0.169 to finish a turn (docs/codex-hooks.md, "Running real Codex offline"):
`response.output_item.done` carrying one assistant message, then `response.completed`.
Every request body is recorded (parsed JSON when possible) so a test can look at the
developer messages hook context turned into.

    with MockModelServer() as server:      # 127.0.0.1, an ephemeral port, served in a thread
        base_url = server.base_url         # http://127.0.0.1:PORT/v1
        ...
        server.requests                    # [{"method", "path", "headers", "body", "json"}, ...]

Run it alone (`python3 tests/e2e/mock_model.py [PORT]`) to poke at it by hand.
"""
import ctypes
import ctypes.util
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ASSISTANT_TEXT = "Done."


def sse_event(name, data):
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def turn_stream(number, text=ASSISTANT_TEXT, items=None):
    """The SSE bytes of one finished response: `items` (default: one assistant message), then
    response.completed."""
    if items is None:
        items = [{"type": "message", "id": f"msg_mock_{number}", "status": "completed", "role": "assistant",
                  "content": [{"type": "output_text", "text": text, "annotations": []}]}]
    out = b"".join(sse_event("response.output_item.done", {"type": "response.output_item.done",
                                                           "output_index": index, "item": item})
                   for index, item in enumerate(items))
    return out + sse_event("response.completed", {"type": "response.completed",
                                                  "response": {"id": f"resp_mock_{number}"}})


def function_call(call_id, name, arguments, namespace="mcp__intent_loop"):
    """An output item calling an MCP tool as Codex 0.169.0 needs it: namespaced, arguments as a string."""
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "namespace": namespace,
            "name": name, "arguments": json.dumps(arguments), "status": "completed"}


def function_outputs(body):
    """{call_id: output} of every function_call_output in a request body's input."""
    return {item.get("call_id"): item.get("output") for item in body.get("input") or []
            if isinstance(item, dict) and item.get("type") == "function_call_output"}



def request_body(headers, rfile):
    """An HTTP/1.1 request's body: Content-Length bytes, or a chunked body (git and Codex send both)."""
    length = int(headers.get("Content-Length") or 0)
    if length:
        return rfile.read(length)
    if headers.get("Transfer-Encoding", "").lower() != "chunked":
        return b""
    chunks = []
    while True:
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):  # the trailer
                pass
            return b"".join(chunks)
        chunks.append(rfile.read(size))
        rfile.readline()

class RecordingHandler(BaseHTTPRequestHandler):
    """What both mocks (this one and mock_anthropic.py) share: every request recorded on the server
    (`requests`, under `lock`), answers of a given type and length, no log lines."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # keep pytest output clean; requests are recorded instead
        pass

    def _record(self, body):
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        entry = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
                 "body": body, "json": parsed}
        with self.server.lock:
            self.server.requests.append(entry)
            return len(self.server.requests)

    def _send(self, status, content_type, payload):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()



class _Handler(RecordingHandler):
    server_version = "intent-loop-mock-model/1"

    def do_POST(self):
        body = request_body(self.headers, self.rfile)
        number = self._record(body)
        if self.path.split("?", 1)[0].rstrip("/").endswith("/responses"):
            self.server.gate.wait(timeout=120)  # a test holds the turn open (steering) by clearing it
            items = None
            if self.server.responder is not None:  # a test scripts the output items (tool calls)
                try:
                    items = self.server.responder(json.loads(body), number)
                except ValueError:
                    items = None
            self._send(200, "text/event-stream", turn_stream(number, self.server.assistant_text, items))
        else:
            self._send(404, "application/json", b'{"error":{"message":"mock: not found"}}')

    def do_GET(self):
        self._record(b"")
        if self.path.split("?", 1)[0].rstrip("/").endswith("/models"):
            self._send(200, "application/json", b'{"object":"list","data":[],"models":[]}')
        else:
            self._send(404, "application/json", b'{"error":{"message":"mock: not found"}}')


class MockServer:
    """A mock on 127.0.0.1 in a daemon thread, recording every request; a context manager that shuts
    it down. Subclasses name their request handler (HANDLER) and what the handler reads from the
    server (_configure); mock_anthropic.MockAnthropicServer is the other one.

    netns: a network namespace file (e.g. /proc/PID/ns/net of an `unshare -n` process). The
    serving thread joins it with setns(2) before binding, so only processes in that namespace
    (`nsenter --net=...`) can reach the mock: the rest of the test process stays where it was.
    """

    HANDLER = None
    NAME = "mock"

    def __init__(self, host="127.0.0.1", port=0, assistant_text=ASSISTANT_TEXT, netns=None):
        self.host, self._port, self.assistant_text, self.netns = host, port, assistant_text, netns
        self.responder = None  # body, number -> the scripted answer (None: the plain assistant message)
        self.httpd = None
        self.thread = None
        self._ready = threading.Event()
        self._error = None

    def respond_with(self, responder):
        """Script the answers: `responder(body, number)` returns what to answer, or None."""
        self.responder = responder
        self.httpd.responder = responder

    @property
    def port(self):
        return self.httpd.server_address[1]

    @property
    def requests(self):
        with self.httpd.lock:
            return list(self.httpd.requests)

    def posts_to(self, suffix):
        """The parsed JSON bodies of every POST to a path ending in `suffix`, in arrival order."""
        return [r["json"] for r in self.requests
                if r["method"] == "POST" and r["path"].split("?", 1)[0].rstrip("/").endswith(suffix)
                and isinstance(r["json"], dict)]

    def _configure(self, httpd):
        """What the handler reads from the server besides requests, lock, assistant_text, responder."""

    def _serve(self):
        try:
            if self.netns is not None:
                enter_netns(self.netns)
            httpd = ThreadingHTTPServer((self.host, self._port), self.HANDLER)
            httpd.daemon_threads = True
            httpd.requests = []
            httpd.lock = threading.Lock()
            httpd.assistant_text = self.assistant_text
            httpd.responder = None
            self._configure(httpd)
            self.httpd = httpd
        except BaseException as exc:  # reported by start()
            self._error = exc
            return
        finally:
            self._ready.set()
        httpd.serve_forever(poll_interval=0.1)

    def start(self, timeout=10):
        self.thread = threading.Thread(target=self._serve, name=self.NAME, daemon=True)
        self.thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"{self.NAME} server did not start")
        if self._error is not None:
            raise self._error
        return self

    def stop(self):
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()


class MockModelServer(MockServer):
    """The Responses API mock (this module's docstring)."""

    HANDLER = _Handler
    NAME = "mock-model"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.gate = threading.Event()  # set: answer at once; clear it to hold every answer back
        self.gate.set()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}/v1"

    def response_bodies(self):
        """The parsed JSON bodies of every POST .../responses, in arrival order."""
        return self.posts_to("/responses")

    def _configure(self, httpd):
        httpd.gate = self.gate

    def stop(self):
        self.gate.set()  # a held answer must not outlive the server
        super().stop()


def enter_netns(path):
    """setns(2) the CALLING THREAD into the network namespace at `path` (needs CAP_SYS_ADMIN)."""
    clone_newnet = 0x40000000
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if libc.setns(fd, clone_newnet) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


def message_texts(item):
    """The text of a Responses API input item of type message (str content or content parts)."""
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    texts = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def developer_messages(body):
    """Every developer-role message text in one request body's `input`."""
    out = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "developer":
            out.append("\n".join(message_texts(item)))
    return out


if __name__ == "__main__":
    server = MockModelServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else 0).start()
    print(f"mock model at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()

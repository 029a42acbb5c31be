"""A stdlib-only mock of the Anthropic Messages API for driving the real Claude Code CLI offline.

Claude Code 2.1.332 with ANTHROPIC_BASE_URL=<this server> and CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
sends only `POST /v1/messages?beta=true` with `"stream": true` (../shared/docs/claude-code-hooks.md,
facts 1-3). Each is answered with the stream Claude Code accepts: message_start, then per content
block content_block_start, (ping after the first), content_block_delta (`text_delta`, or
`input_json_delta` for a `tool_use` block), content_block_stop, then message_delta (`stop_reason`
`tool_use` when a block is a tool call, else `end_turn`) and message_stop. Every request is
recorded (parsed JSON when possible) so a test can read where hook context landed.

    with MockAnthropicServer(netns=...) as server:   # 127.0.0.1, an ephemeral port, a thread
        env["ANTHROPIC_BASE_URL"] = server.base_url  # http://127.0.0.1:PORT
        server.respond_with(lambda body, number: [tool_use("Bash", {...})] if ... else None)
        server.message_bodies()                       # every POST /v1/messages body, in order

A responder returns the content blocks of one reply (text(...), tool_use(...)); None gives the
default one text block "Done.". `HEAD /api/hello` (sent without the variable above) answers 200,
`POST /v1/messages/count_tokens` a token count; anything else 404.

Run it alone (`python3 tests/e2e/mock_anthropic.py [PORT]`) to poke at it by hand.
"""
import itertools
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mock_model import MockServer, RecordingHandler, request_body  # noqa: E402

ASSISTANT_TEXT = "Done."
MODEL = "claude-mock-1"
_ids = itertools.count(1)


def text(value):
    """A text content block of a reply."""
    return {"type": "text", "text": value}


def tool_use(name, arguments, use_id=None):
    """A tool_use content block: the model calls tool `name` with `arguments` (a dict)."""
    return {"type": "tool_use", "id": use_id or f"toolu_mock_{next(_ids):04d}", "name": name, "input": arguments}


def sse_event(name, data):
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def message_stream(number, blocks, model=MODEL):
    """The SSE bytes of one whole streamed reply holding `blocks` (text or tool_use)."""
    out = [sse_event("message_start", {"type": "message_start", "message": {
        "id": f"msg_mock_{number}", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0}}})]
    for index, block in enumerate(blocks):
        if block["type"] == "tool_use":
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        out.append(sse_event("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": start}))
        if index == 0:
            out.append(sse_event("ping", {"type": "ping"}))
        out.append(sse_event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        out.append(sse_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
    out.append(sse_event("message_delta", {"type": "message_delta",
                                           "delta": {"stop_reason": stop, "stop_sequence": None},
                                           "usage": {"output_tokens": 5}}))
    out.append(sse_event("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class _Handler(RecordingHandler):
    server_version = "intent-loop-mock-anthropic/1"

    def do_POST(self):
        body = request_body(self.headers, self.rfile)
        number = self._record(body)
        path = self.path.split("?", 1)[0].rstrip("/")
        if path.endswith("/v1/messages/count_tokens"):
            self._send(200, "application/json", b'{"input_tokens":10}')
            return
        if not path.endswith("/v1/messages"):
            self._send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"mock"}}')
            return
        blocks = None
        if self.server.responder is not None:
            try:
                blocks = self.server.responder(json.loads(body), number)
            except Exception as exc:  # a broken script must show up, not hang Claude Code  # noqa: BLE001
                self.server.errors.append(repr(exc))
                blocks = [text(f"mock responder failed: {exc!r}")]
        if not blocks:
            blocks = [text(self.server.assistant_text)]
        self._send(200, "text/event-stream", message_stream(number, blocks))

    def do_HEAD(self):
        self._record(b"")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self._record(b"")
        self._send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"mock"}}')


class MockAnthropicServer(MockServer):
    """The Messages API mock on 127.0.0.1 in a daemon thread (mock_model.MockServer: netns, the
    recorded requests, start and stop). `respond_with(responder)`: `responder(body, number)` returns
    content blocks, or None for "Done."."""

    HANDLER = _Handler
    NAME = "mock-anthropic"

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def errors(self):
        return list(self.httpd.errors)

    def message_bodies(self):
        """The parsed JSON bodies of every POST /v1/messages, in arrival order."""
        return self.posts_to("/v1/messages")

    def _configure(self, httpd):
        httpd.errors = []


# -- reading a request body -------------------------------------------------------------------
def _texts(content):
    if isinstance(content, str):
        return [content]
    return [part["text"] for part in content or [] if isinstance(part, dict) and isinstance(part.get("text"), str)]


def system_entries(body):
    """The text of every system-role entry of `messages` (where Claude Code 2.1.332 puts hook
    context: `<Event> hook additional context: <text>`), in order."""
    return ["\n".join(_texts(m.get("content"))) for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "system"]


_NEXT_SECTION = re.compile(r"\n\n(?:[A-Za-z]+ hook additional context: |# Environment\n|Today's date is )")


def hook_contexts(body, event):
    """The additionalContext texts of hook `event` (SessionStart, UserPromptSubmit) in one request:
    each runs from its label to the next hook's label or Claude Code's own next section."""
    label = f"{event} hook additional context: "
    found = []
    for entry in system_entries(body):
        for piece in entry.split(label)[1:]:
            cut = _NEXT_SECTION.search(piece)
            found.append(piece[:cut.start()] if cut else piece)
    return found


def user_texts(body):
    """Every text part of every user message (typed prompts, task notifications; no tool results)."""
    return ["\n".join(_texts(m.get("content"))) for m in body.get("messages") or []
            if isinstance(m, dict) and m.get("role") == "user"]


def last_user_text(body):
    texts = user_texts(body)
    return texts[-1] if texts else ""


def tool_results(body):
    """{tool_use_id: (is_error, text)} of every tool_result block in the request's messages."""
    out = {}
    for message in body.get("messages") or []:
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        for part in message["content"]:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                content = part.get("content")
                out[part.get("tool_use_id")] = (bool(part.get("is_error")), "\n".join(_texts(content)))
    return out


def tool_names(body):
    return [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]


if __name__ == "__main__":
    server = MockAnthropicServer(port=int(sys.argv[1]) if len(sys.argv) > 1 else 0).start()
    print(f"mock Messages API at {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        server.thread.join()
    except KeyboardInterrupt:
        server.stop()

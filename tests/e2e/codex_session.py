"""Drive one real Codex TUI session (0.169.0) in tmux, for end-to-end tests against the mock model.

    session = CodexSession(workspace, env, server, wrap)  # starts Codex, waits for the composer
    session.submit("intent: goal X")                       # waits for that prompt's model request
    session.clear()                                        # /clear: a new session id, source "clear"
    session.slash("compact")                               # any slash command, e.g. /new, /fork
    text = session.screen()
    session.stop()                                         # /quit (SessionEnd fires), then kill leftovers

`server` is a mock_model.MockModelServer; `wrap` the argv wrapper of the `mock_model` fixture in
test_real_codex.py (nsenter into the offline namespace). What 0.169.0 does, seen through this helper
(tests/fixtures/codex-0.169.0/continuity/README.md):
- SessionStart runs lazily, at the first prompt of a thread, not at launch or at /clear, /new, /fork.
- /clear, /new and /fork open no dialog; each makes a new thread (new session_id) and SessionStart's
  source is "clear", "startup" and "fork". /compact runs PreCompact/PostCompact at once and
  SessionStart(source "compact", same id) at the next prompt.
- Besides the turns, the TUI asks the model for a thread title (no tools, `text.format` json_schema)
  after a thread's first prompt and after a compaction, and /compact is itself a plain /responses
  request with no tools. So count requests with `turn_requests()`, not `server.response_bodies()`.
- SessionEnd fires only at exit (/quit), once for every thread the process opened.
"""
import shlex
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_real_codex import CODEX_BIN, _wait_for  # noqa: E402
from tui_session import TuiSession  # noqa: E402

PINNED_ENV = ("HOME", "CODEX_HOME", "INTENT_LOOP_DATA_DIR", "TERM")
COMPACTION_PROMPT = "You are performing a CONTEXT CHECKPOINT COMPACTION"


def last_user_text(body):
    """The text of the last user message in a /responses request body ("" if none)."""
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


def is_compaction_request(body):
    return not body.get("tools") and last_user_text(body).startswith(COMPACTION_PROMPT)


def is_title_request(body):
    return not body.get("tools") and ((body.get("text") or {}).get("format") or {}).get("name") == "codex_output_schema"


def turn_requests(server):
    """The request bodies of real turns (the ones that offer tools): no title, no compaction."""
    return [b for b in server.response_bodies() if b.get("tools")]


def compaction_responder(summary="Summary: the user asked for nothing yet.", then=None):
    """A MockModelServer responder that answers a compaction request with a plain `summary`
    message; every other request goes to `then(body, number)` (None: the default "Done.")."""
    def respond(body, number):
        if is_compaction_request(body):
            return [{"type": "message", "id": f"msg_compact_{number}", "status": "completed", "role": "assistant",
                     "content": [{"type": "output_text", "text": summary, "annotations": []}]}]
        return then(body, number) if then else None
    return respond


class CodexSession(TuiSession):
    """The interactive `codex` in a private tmux server, in `workspace`, with `env`.

    env: the whole environment for Codex (HOME, CODEX_HOME, ...); the keys in `pin` are also passed
    on the command line so the pane surely gets them. args: extra Codex arguments; by default hooks
    run untrusted (the TUI accepts --dangerously-bypass-hook-trust like `codex exec`)."""

    NAME = "Codex"
    BUSY = ("esc to interrupt", "Working")
    QUIT = "/quit"

    def __init__(self, workspace, env, server, wrap=list, *, args=("--dangerously-bypass-hook-trust",),
                 pin=PINNED_ENV, codex_bin=CODEX_BIN, timeout=60):
        if not codex_bin:
            raise ValueError("no Codex binary: set INTENT_LOOP_CODEX_BIN or pass codex_bin")
        self.server = server
        self.env = dict(env, TERM=env.get("TERM", "xterm-256color"))
        pinned = [f"{k}={self.env[k]}" for k in pin if k in self.env]
        command = "exec " + shlex.join(wrap(["env", *pinned, codex_bin, *args]))
        self._start(command, cwd=workspace, env=self.env, ready=lambda s: "OpenAI Codex" in s and "›" in s,
                    timeout=timeout)

    def submit(self, text, *, requests=None, timeout=30):
        """Type a prompt and wait until the mock has `requests` turn requests (default: one more
        than before). A first Enter swallowed while the TUI was busy is pressed again once. For a
        prompt that no model sees (a hook blocks it), use type_line() and wait_screen() instead."""
        want = len(turn_requests(self.server)) + 1 if requests is None else requests
        self.type_line(text)
        got = lambda: len(turn_requests(self.server)) >= want  # noqa: E731
        if not _wait_for(got, time.monotonic() + min(10, timeout)):
            self.tmux.press("Enter")
        if not _wait_for(got, time.monotonic() + timeout):
            raise AssertionError(f"the mock got {len(turn_requests(self.server))} turn requests, not {want}:\n"
                                 f"{self.screen()}")
        return turn_requests(self.server)[-1]

    def slash(self, name, settle=2.0):
        """Run `/name` (the popup's first match is the command itself, Enter runs it)."""
        self.type_line("/" + name)
        time.sleep(settle)
        return self.screen()

    def clear(self):
        """/clear: no confirmation dialog in 0.169.0; the next prompt starts a new session."""
        screen = self.slash("clear")
        if "Enter to confirm" in screen or "(y/n)" in screen:  # not seen in 0.169.0; harmless later
            self.tmux.press("Enter")
        return self.screen()

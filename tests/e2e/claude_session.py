"""Run the real Claude Code (2.1.332 pinned: real_host.CLAUDE_BIN) offline against mock_anthropic.py,
with intent-loop installed from a git repository of the committed tree, as users install it.

    env = claude_env(home, server.base_url, tmp_path / "tmp")     # a fake HOME, a dummy key, no traffic
    plugin_root = install_intent_loop(wrap, env, workspace, git_url)
    rc, out, err, secs = run_claude(wrap, env, workspace, "-p", "intent: goal X")
    shown = plugin_cli(plugin_root, env, workspace, "show", "--json")   # the plugin's own command line
    trust_workspace(home, workspace)                              # what the TUI asks before it starts
    with ClaudeSession(workspace, env, server, wrap) as tui:      # the TUI in a private tmux
        tui.submit("intent: goal Y"); tui.clear(); tui.submit("next")

What Claude Code 2.1.332 needs and does here (../shared/docs/claude-code-hooks.md has the rest):
- ANTHROPIC_BASE_URL and a dummy ANTHROPIC_API_KEY; with CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
  it sends only `POST /v1/messages?beta=true`. TMPDIR is the test's own (Claude Code keeps session
  files in $TMPDIR/claude-<uid>/ and sockets in $TMPDIR/cc-socks/).
- `claude -p` needs nothing in HOME; the TUI needs ~/.claude.json with hasCompletedOnboarding, the
  project's hasTrustDialogAccepted, and the key's last 20 characters in customApiKeyResponses.approved.
- `claude plugin marketplace add <http URL>` clones with the git CLI (--depth 1: smart HTTP only),
  `claude plugin install <plugin>@<marketplace>` asks nothing and copies the plugin to
  ~/.claude/plugins/cache/<marketplace>/<plugin>/<version>/, from where its hooks and MCP server run.
- No hook is reviewed or trusted: an installed plugin's hooks run in `-p` and in the TUI once the
  workspace is trusted. A hook's systemMessage is a TUI line; `-p` prints none, but the session's
  transcript keeps it (transcript_system_messages).
"""
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mock_anthropic import MockAnthropicServer  # noqa: E402
from real_host import CLAUDE_BIN  # noqa: E402
from test_real_codex import _offline_namespace, _wait_for, run_bounded  # noqa: E402
from tui_session import TuiSession  # noqa: E402

API_KEY = "sk-ant-intent-loop-e2e-0000000000000000000000"
PLUGIN_ID = "intent-loop@intent-loop"
MCP_SERVER = "plugin:intent-loop:intent_loop"  # `claude mcp list`'s name for the plugin's server
MCP_TOOL_PREFIX = "mcp__plugin_intent-loop_intent_loop__"  # the model's name for its tools
COMMAND_TIMEOUT = 60
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1"}
# Nothing of the caller's hosts may leak in: a Codex or Claude Code session running the tests sets these.
_DROPPED = ("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_", "ANTHROPIC_", "CLAUDE", "AI_AGENT")


def claude_env(home, base_url, tmpdir):
    """The environment for Claude Code and everything it starts: the fake HOME, the mock, no traffic."""
    Path(tmpdir).mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROPPED)}
    env.update(QUIET, HOME=str(home), TMPDIR=str(tmpdir), ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=API_KEY,
               TERM="xterm-256color")
    return env


class OfflineHost:
    """An offline network namespace where possible (test_real_codex._offline_namespace: root,
    unshare, nsenter, ip), whose joining is tried once (a mock started and stopped in it); `wrap(argv)`
    runs a command there, mock_anthropic() serves inside it. Without one everything stays on the
    host's loopback, and `how` says why."""

    def __init__(self):
        self.netns, self.how = _offline_namespace()
        if self.netns is not None:
            try:
                MockAnthropicServer(netns=self.netns.path).start().stop()
            except OSError as exc:  # setns refused (seccomp, no CAP_SYS_ADMIN)
                self.netns.close()
                self.netns, self.how = None, f"setns failed: {exc}"
        self.wrap = self.netns.wrap if self.netns else (lambda argv: list(argv))
        self.path = self.netns.path if self.netns else None

    def mock_anthropic(self):
        return MockAnthropicServer(netns=self.path).start()

    def close(self):
        if self.netns is not None:
            self.netns.close()


def header(request, name):
    """A recorded request's header, whatever its case."""
    return next((v for k, v in request["headers"].items() if k.lower() == name.lower()), None)


def run_claude(wrap, env, cwd, *args, timeout=COMMAND_TIMEOUT, check=True, claude_bin=None):
    """`claude <args>` in `wrap`'s namespace, in its own process group, bounded;
    (rc, stdout, stderr, seconds)."""
    rc, out, err, secs = run_bounded(wrap([claude_bin or CLAUDE_BIN, *args]), cwd=cwd, env=env, timeout=timeout)
    if check:
        assert rc == 0, f"claude {' '.join(args)[:120]} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return rc, out, err, secs


def install_intent_loop(wrap, env, cwd, source, plugin_id=PLUGIN_ID):
    """`claude plugin marketplace add <source>`, `claude plugin install <plugin_id>`, then `claude
    plugin list --json`: the plugin must be listed, enabled, at user scope; returns its installPath."""
    _rc, out, _err, _ = run_claude(wrap, env, cwd, "plugin", "marketplace", "add", "--json", str(source))
    added = json.loads(out.strip().splitlines()[-1])
    assert added["outcome"] == "ok", added
    _rc, out, _err, _ = run_claude(wrap, env, cwd, "plugin", "install", "--json", plugin_id)
    installed = json.loads(out.strip().splitlines()[-1])
    assert installed["outcome"] == "ok" and installed["pluginId"] == plugin_id, installed
    _rc, out, _err, _ = run_claude(wrap, env, cwd, "plugin", "list", "--json")
    [listed] = [p for p in json.loads(out) if p.get("id") == plugin_id]
    assert listed["enabled"] is True and listed["scope"] == "user", listed
    return Path(listed["installPath"])


def plugin_cli(plugin_root, env, cwd, *args, check=True):
    """The installed plugin's own command line (`hooks/intent-loop cli ...`) with the same HOME and
    nothing that names a data root: it must find the hooks' store from HOME alone. Parsed JSON."""
    done = subprocess.run([str(Path(plugin_root) / "hooks" / "intent-loop"), "cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    if check:
        assert done.returncode == 0, f"intent-loop {' '.join(args)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def transcripts(home):
    return sorted(Path(home, ".claude", "projects").glob("*/*.jsonl"), key=lambda p: p.stat().st_mtime)


def transcript_system_messages(home, event="UserPromptSubmit"):
    """The systemMessage texts hooks of `event` gave (a TUI line; `-p` prints none, but the session's
    transcript keeps each as a `hook_system_message` attachment), in the order written."""
    found = []
    for path in transcripts(home):
        for line in path.read_text(errors="replace").splitlines():
            try:
                row = json.loads(line)
            except ValueError:
                continue
            attachment = row.get("attachment") if isinstance(row, dict) else None
            if isinstance(attachment, dict) and attachment.get("type") == "hook_system_message" \
                    and attachment.get("hookEvent") == event:
                found.append(attachment.get("content", ""))
    return found


def trust_workspace(home, workspace, key=API_KEY):
    """What the TUI asks before it shows a prompt, answered in ~/.claude.json as the TUI records the
    answers: onboarding done, the workspace trusted, the custom API key approved."""
    path = Path(home, ".claude.json")
    config = json.loads(path.read_text()) if path.is_file() else {}
    config["hasCompletedOnboarding"] = True
    config.setdefault("projects", {}).setdefault(str(workspace), {})["hasTrustDialogAccepted"] = True
    responses = config.setdefault("customApiKeyResponses", {"approved": [], "rejected": []})
    responses.setdefault("approved", []).append(key[-20:])
    path.write_text(json.dumps(config, indent=2) + "\n")


def processes_with(variable, value):
    """{pid: (argv, cwd)} of every process whose environment holds variable=value (Linux /proc)."""
    found = {}
    wanted = f"{variable}={value}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            argv = [a.decode(errors="replace") for a in (entry / "cmdline").read_bytes().split(b"\0") if a]
            found[int(entry.name)] = (argv, os.readlink(entry / "cwd"))
        except OSError:
            continue
    return found


class ClaudeSession(TuiSession):
    """The interactive `claude` in a private tmux server (test_real_codex._Tmux), in `workspace`.
    The workspace must be trusted first (trust_workspace). submit() waits for the prompt's model
    request; clear() is a real /clear; stop() is /exit (SessionEnd runs), then nothing is left."""

    NAME = "Claude Code"
    BUSY = ("esc to interrupt",)
    QUIT = "/exit"
    PINNED = ("HOME", "TMPDIR", "TERM", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", *QUIET)

    def __init__(self, workspace, env, server, wrap=list, *, args=(), claude_bin=None, timeout=60):
        self.server = server
        pinned = [f"{k}={env[k]}" for k in self.PINNED if k in env]
        command = "exec " + shlex.join(wrap(["env", *pinned, claude_bin or CLAUDE_BIN, *args]))
        self._start(command, cwd=workspace, env=env, ready=lambda s: "Claude Code v" in s and "\n❯" in s,
                    timeout=timeout)

    def submit(self, text, *, timeout=30):
        """Type a prompt; wait for its model request and for the turn to end; that request's body."""
        want = len(self.server.message_bodies()) + 1
        self.type_line(text)
        got = lambda: len(self.server.message_bodies()) >= want  # noqa: E731
        if not _wait_for(got, time.monotonic() + min(10, timeout)):
            self.tmux.press("Enter")  # an Enter swallowed while the TUI was busy
        if not _wait_for(got, time.monotonic() + timeout):
            raise AssertionError(f"the mock got {len(self.server.message_bodies())} requests, not {want}:\n"
                                 f"{self.screen()}")
        self.wait_idle(timeout)
        return self.server.message_bodies()[want - 1]

    def clear(self, settle=2.0):
        """A real /clear (SessionEnd `clear` on the old session, SessionStart `clear` on a new one)."""
        self.type_line("/clear")
        time.sleep(settle)
        return self.screen()

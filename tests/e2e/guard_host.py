"""The real Execution Fidelity Guard next to intent-loop in a real Codex: hook trust through the
app-server, Guard's own records, and the mock model's `exec_command` calls.

    hooks = list_hooks(env, workspace, wrap)            # `codex app-server`, method hooks/list
    keys = trust_hooks(env, workspace, wrap)            # every hook trusted as "Trust all" records it
    events = guard_records(codex_home, session_id, "events")   # [(file name, record)], oldest first

Hook trust as the TUI's "Trust all and continue" writes it (0.169.0): for each hook that
`hooks/list` reports, a table `[hooks.state."<key>"]` in <codex-home>/config.toml with
`trusted_hash` = the part of the hook's `currentHash` before "/" and `trusted_content_hash` = the
part after it (the plugin's content hash). With `trusted_hash` alone Codex reports the hook
"modified" and skips it without a word, so trust_hooks() lists again until every hook says
"trusted". An app-server also syncs every git marketplace it can reach, in the background, and
re-installs a plugin `codex plugin add` installed (0.169.0): intent-loop's copy then holds a new .git/,
which Codex's content hash covers, and its hooks turn "modified"; serve a marketplace only while
installing from it. The app-server speaks JSON-RPC (no "jsonrpc" member), one message a line, on stdio:
`initialize` (clientInfo), the `initialized` notification, then `hooks/list` with `cwds`.

Guard 0.2.2 keeps one folder per session under <codex-home>/plugin-data/execution-fidelity-guard/v1/
sessions/session-<sha256(session id)>/ with events/, receipts/ and evidence/, each record a file
`<ISO time with : and . as ->-<id>.json` (store.mjs writeRecord).
"""
import hashlib
import json
import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from real_host import CODEX_BIN

GUARD_PLUGIN_ID = "execution-fidelity-guard@execution-fidelity-guard"
GUARD_DATA = ("plugin-data", "execution-fidelity-guard", "v1")
HOOK_STATE_TABLE = re.compile(r'^\[hooks\.state\."(?P<key>[^"]+)"\]\s*$', re.M)


class AppServer:
    """`codex app-server` on stdio, in `wrap`'s namespace; request() returns a result or raises."""

    def __init__(self, env, cwd, wrap, codex_bin=None, timeout=30):
        self.timeout = timeout
        self.proc = subprocess.Popen(wrap([codex_bin or CODEX_BIN, "app-server"]), cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self._next = 0
        self._buffer = b""
        self.request("initialize", {"clientInfo": {"name": "intent-loop-e2e", "version": "0"}})
        self._send({"method": "initialized"})

    def _send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def _line(self, deadline):
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("codex app-server did not answer in time")
            ready, _, _ = select.select([self.proc.stdout], [], [], min(left, 0.5))
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    raise EOFError(f"codex app-server exited ({self.proc.poll()})")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def request(self, method, params):
        self._next += 1
        number = self._next
        self._send({"id": number, "method": method, "params": params})
        deadline = time.monotonic() + self.timeout
        while True:
            line = self._line(deadline)
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("id") == number and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result")

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def list_hooks(env, cwd, wrap, *, server=None):
    """Every hook Codex would run in `cwd` (hooks/list's entries for it), as the app-server says."""
    if server is None:
        with AppServer(env, cwd, wrap) as own:
            return list_hooks(env, cwd, wrap, server=own)
    result = server.request("hooks/list", {"cwds": [str(cwd)]})
    return [hook for entry in result["data"] for hook in entry["hooks"]]


def trust_records(hooks):
    """The config.toml text that trusts `hooks` as "Trust all" does."""
    text = []
    for hook in hooks:
        trusted, _slash, content = hook["currentHash"].partition("/")
        text.append(f'\n[hooks.state."{hook["key"]}"]\ntrusted_hash = "{trusted}"\n'
                    + (f'trusted_content_hash = "{content}"\n' if content else ""))
    return "".join(text)


def trust_hooks(env, cwd, wrap, *, plugin_ids=None, timeout=60):
    """Trust every hook (of `plugin_ids` only, if given) in $CODEX_HOME/config.toml, then list
    again until each reports "trusted"; the hooks as last listed."""
    config = Path(env["CODEX_HOME"]) / "config.toml"
    deadline = time.monotonic() + timeout
    with AppServer(env, cwd, wrap) as server:
        hooks = list_hooks(env, cwd, wrap, server=server)
        wanted = [h for h in hooks if plugin_ids is None or h.get("pluginId") in plugin_ids]
        assert wanted, f"hooks/list reported no hooks to trust: {hooks}"
        present = set(HOOK_STATE_TABLE.findall(config.read_text()))
        fresh = [h for h in wanted if h["trustStatus"] != "trusted" and h["key"] not in present]
        with open(config, "a") as fh:
            fh.write(trust_records(fresh))
    while True:  # a new app-server reads config.toml again
        hooks = list_hooks(env, cwd, wrap)
        wanted = [h for h in hooks if plugin_ids is None or h.get("pluginId") in plugin_ids]
        if all(h["trustStatus"] == "trusted" for h in wanted):
            return wanted
        if time.monotonic() > deadline:
            raise AssertionError("hooks not trusted after writing their records: "
                                 + json.dumps([(h["key"], h["trustStatus"]) for h in wanted]))
        time.sleep(0.5)


def remove_trust(codex_home, key_prefix):
    """Remove every [hooks.state."<key>"] table whose key starts with `key_prefix` from config.toml."""
    config = Path(codex_home) / "config.toml"
    kept, skipping = [], False
    for line in config.read_text().splitlines(keepends=True):
        match = HOOK_STATE_TABLE.match(line.strip())
        if line.startswith("["):
            skipping = bool(match and match["key"].startswith(key_prefix))
        if not skipping:
            kept.append(line)
    config.write_text("".join(kept))


# -- Guard's records ---------------------------------------------------------------------------
def guard_session_dir(codex_home, session_id):
    digest = hashlib.sha256(str(session_id).encode()).hexdigest()
    return Path(codex_home).joinpath(*GUARD_DATA, "sessions", f"session-{digest}")


def guard_records(codex_home, session_id, bucket):
    """[(file name, record)] of one bucket (events, receipts, evidence) of a session, oldest first."""
    folder = guard_session_dir(codex_home, session_id) / bucket
    if not folder.is_dir():
        return []
    return [(p.name, json.loads(p.read_text())) for p in sorted(folder.glob("*.json"))]


def guard_sessions(codex_home):
    root = Path(codex_home).joinpath(*GUARD_DATA, "sessions")
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


# -- the model's shell calls -------------------------------------------------------------------
def exec_call(call_id, command):
    """A Responses output item calling Codex's built-in `exec_command` tool with a shell command."""
    return {"type": "function_call", "id": f"fc_{call_id}", "call_id": call_id, "name": "exec_command",
            "arguments": json.dumps({"cmd": command}), "status": "completed"}


def assistant_message(number, text):
    return {"type": "message", "id": f"msg_{number}", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}

"""End to end: the real Codex CLI (@openai/codex 0.169.0, pinned in tests/e2e/npm/, or the version
in INTENT_LOOP_CODEX_VERSION: real_host.py) runs our three installed hooks against a mock model on
127.0.0.1, offline.

`python3 build.py test` (or `test-e2e`) installs that CLI into .cache/npm-codex-<version>/ and passes
its path as INTENT_LOOP_CODEX_BIN; without it (no npm, no network for the first install) these tests
skip, and under CI=true fail, saying why (conftest.py).
Where we may (root, `unshare`, `nsenter` and `ip` present), Codex runs in a loopback-only network
namespace and the mock's serving thread joins that namespace, so nothing can leave the machine.
"""
import contextlib
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.dist import requires_dist
from intent_loop.guard import contract_file
from intent_loop.storage import paths as paths_mod

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mock_model import MockModelServer, developer_messages  # noqa: E402
from real_host import CODEX_BIN, requires_codex  # noqa: E402

from helpers.settle import settle  # noqa: E402
from intent_loop.launch.binaries import HOOKS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
CLI = DIST / "intent-loop"
HOOK_BINARIES = tuple(hook.name for hook in HOOKS)
TURN_TIMEOUT = 100  # per turn; two turns stay under conftest.HANG_LIMIT_SECONDS (240)
BYPASS = ("--dangerously-bypass-hook-trust", "--skip-git-repo-check")
HOOK_LINE = re.compile(r"^hook: (?P<event>[A-Za-z]+)(?: (?P<status>[A-Za-z]+))?\s*$")
SESSION_ID = re.compile(r"session id: ([0-9a-fA-F-]{36})")
UUID_IN_NAME = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})")
EVENTS = tuple(hook.event for hook in HOOKS)

pytestmark = [
    pytest.mark.e2e,
    requires_codex,
    requires_dist,
]

CONFIG_TOML = """\
model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false
web_search = "disabled"

[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[features]
hooks = true
plugins = false
remote_plugin = false
apps = false
shell_snapshot = false
unbounded_connection_retries = false
enable_request_compression = false

[analytics]
enabled = false
"""


# -- an offline network namespace ----------------------------------------------------------
class _NetNamespace:
    """A loopback-only network namespace held open by `unshare -n ... sleep`; killed on close."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["unshare", "-n", "sh", "-c", "ip link set lo up && echo ready && exec sleep 3600"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        line = self.proc.stdout.readline()  # the child prints or exits at once
        if line.strip() != b"ready":
            err = self.proc.stderr.read().decode(errors="replace").strip() if self.proc.poll() is not None else ""
            self.close()
            raise OSError(f"unshare -n failed: {err or line!r}")
        self.path = f"/proc/{self.proc.pid}/ns/net"

    def wrap(self, argv):
        return ["nsenter", f"--net={self.path}", "--", *argv]

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            stream.close()


def _offline_namespace():
    """A _NetNamespace, or (None, why not) where we cannot make one."""
    if os.geteuid() != 0:
        return None, "not root"
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        return None, f"missing {', '.join(missing)}"
    try:
        return _NetNamespace(), "unshare -n"
    except OSError as exc:
        return None, str(exc)


@pytest.fixture
def mock_model():
    """The mock server, inside an offline namespace where possible; yields (server, wrap)."""
    netns, how = _offline_namespace()
    server = None
    try:
        if netns is not None:
            try:
                server = MockModelServer(netns=netns.path).start()
            except OSError as exc:  # setns refused (seccomp, no CAP_SYS_ADMIN): run on plain loopback
                how = f"setns failed: {exc}"
                netns.close()
                netns = None
        if server is None:
            server = MockModelServer().start()
        print(f"real-codex e2e network: {'offline namespace' if netns else 'host loopback'} ({how})")
        yield server, (netns.wrap if netns else (lambda argv: list(argv)))
    finally:
        if server is not None:
            server.stop()
        if netns is not None:
            netns.close()


# -- running things ------------------------------------------------------------------------
def run_bounded(argv, *, cwd, env, timeout):
    """Run argv in its own process group; on timeout kill the whole group (Codex's node wrapper
    starts the native binary as a child). Returns (returncode, stdout, stderr, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{argv[:4]} timed out after {timeout} s\nstdout:\n{out.decode(errors='replace')}\n"
                    f"stderr:\n{err.decode(errors='replace')}")
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # nothing of the run may outlive it
        except ProcessLookupError:
            pass
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start


def hook_results(stderr):
    """[(event, status)] of every finished hook run that `codex exec` reported on stderr."""
    found = []
    for line in stderr.splitlines():
        match = HOOK_LINE.match(line.strip())
        if match and match["status"]:
            found.append((match["event"], match["status"]))
    return found


def session_id_of(stderr, stdout, codex_home, known=()):
    match = SESSION_ID.search(stderr) or SESSION_ID.search(stdout)
    if match:
        return match.group(1)
    rollouts = glob.glob(os.path.join(codex_home, "sessions", "**", "rollout-*.jsonl"), recursive=True)
    ids = {m.group(1) for path in rollouts for m in [UUID_IN_NAME.search(os.path.basename(path))] if m}
    ids -= set(known)
    return ids.pop() if len(ids) == 1 else None


@pytest.fixture
def codex_env(tmp_path, isolated_home):
    """(env, codex_home, data_root, workspace): a throw-away Codex home, data root and project."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    data_root = tmp_path / "data"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_"))}
    env.update(HOME=str(isolated_home), CODEX_HOME=str(codex_home), INTENT_LOOP_DATA_DIR=str(data_root),
               NO_COLOR="1", RUST_LOG="error")
    return env, codex_home, data_root, workspace


def install_hooks(env, codex_home):
    result = subprocess.run([str(CLI), "install", "--codex-home", str(codex_home), "--apply", "--json"],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["applied"] is True
    config = json.loads((codex_home / "hooks.json").read_text())
    commands = [h["command"] for groups in config["hooks"].values() for g in groups for h in g["hooks"]]
    assert sorted(os.path.basename(c.split()[-1]) for c in commands) == sorted(HOOK_BINARIES)


def assert_all_hooks_completed(stderr, turn):
    results = hook_results(stderr)
    failed = [r for r in results if r[1] != "Completed"]
    assert not failed, f"turn {turn}: hook runs not Completed: {failed}\nstderr:\n{stderr}"
    completed = {event for event, _status in results}
    assert completed == set(EVENTS), f"turn {turn}: completed hook runs {results}\nstderr:\n{stderr}"


# -- the test ------------------------------------------------------------------------------
def test_real_codex_exec_two_turns_records_intent_and_publishes_contract(mock_model, codex_env):
    server, wrap = mock_model
    env, codex_home, data_root, workspace = codex_env
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url))
    install_hooks(env, codex_home)
    codex = wrap([CODEX_BIN, "exec", *BYPASS])

    # Turn 1: a fresh session; SessionStart(startup), UserPromptSubmit, Stop.
    prompt = ("Please look at the login flow.\n"
              "intent: goal Fix the login redirect loop\n"
              "intent: must-not action:install_local\n")
    rc, out, err, secs1 = run_bounded([*codex, prompt], cwd=workspace, env=env, timeout=TURN_TIMEOUT)
    assert rc == 0, f"codex exec exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert_all_hooks_completed(err, 1)
    session_id = session_id_of(err, out, str(codex_home))
    assert session_id, f"no session id in the output or under {codex_home}/sessions\nstderr:\n{err}"

    bodies = server.response_bodies()
    assert len(bodies) == 1, [r["path"] for r in server.requests]
    developer = developer_messages(bodies[0])
    ours = [m for m in developer if "intent-loop" in m]
    assert ours, f"no developer message from intent-loop reached the model: {developer}"
    assert any("Fix the login redirect loop" in m for m in ours), ours

    # Turn 2: the same session resumed; SessionStart(resume), UserPromptSubmit, Stop.
    rc, out, err, secs2 = run_bounded(
        [*wrap([CODEX_BIN, "exec", "resume", *BYPASS]), session_id, "intent: done-when tests pass (sources: test)"],
        cwd=workspace, env=env, timeout=TURN_TIMEOUT)
    assert rc == 0, f"codex exec resume exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert_all_hooks_completed(err, 2)
    bodies = server.response_bodies()
    assert len(bodies) == 2, [r["path"] for r in server.requests]
    developer = developer_messages(bodies[1])
    assert any("intent-loop" in m and "tests pass" in m for m in developer), developer
    print(f"real-codex e2e: turn 1 {secs1:.1f} s, turn 2 {secs2:.1f} s")

    # Each Stop recorded its hash-only result signal after answering (detached from the hook).
    settle(str(data_root), str(workspace))
    with open(paths_mod.project_paths(str(data_root), str(workspace)).ledger, "rb") as fh:
        types = [json.loads(line)["event_type"] for line in fh.read().splitlines()]
    assert types.count("result_signal_observed") == 2, types

    # The ledger the hooks wrote verifies from its first byte.
    verify = subprocess.run([str(CLI), "verify", "--json"], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["ok"] is True, verify.stdout

    # The Guard provider document is valid and carries what the user typed.
    raw = (workspace / ".execution-fidelity" / "contract.json").read_bytes()
    kind, document, errors = contract_file.validate_document_bytes(raw)
    assert (kind, errors) == ("provider", []), (kind, errors)
    projection = document["projection"]
    assert projection["objective"] == "Fix the login redirect loop"
    assert "action:install_local" in projection["must_and_must_not"]["must_not"]
    assert {"requirement": "tests pass", "acceptable_sources": ["test"]} in projection["completion_evidence"]


# -- the interactive TUI, once, through tmux ------------------------------------------------
TUI_DEADLINE = 60
UNCONFIRMED = "1 command written to the ledger but not confirmed"


class _Tmux:
    """A private tmux server (its own -L socket) running one pane; close() ends that pane's
    process group and then the server, so no Codex outlives the test."""

    def __init__(self, command, *, cwd, env):
        self.name = f"intent-loop-e2e-{os.getpid()}-{time.monotonic_ns()}"
        self.base = ["tmux", "-L", self.name, "-f", "/dev/null"]
        subprocess.run([*self.base, "new-session", "-d", "-s", "e2e", "-x", "160", "-y", "50", "-c", str(cwd),
                        command], env=env, check=True, timeout=20)
        self.pane_pid = int(self._tmux("display-message", "-p", "-t", "e2e", "#{pane_pid}").strip())

    def _tmux(self, *args, check=True):
        return subprocess.run([*self.base, *args], capture_output=True, text=True, check=check, timeout=20).stdout

    def screen(self):
        return self._tmux("capture-pane", "-p", "-t", "e2e", check=False)

    def type_text(self, text):
        self._tmux("send-keys", "-t", "e2e", "-l", text)

    def press(self, key):
        self._tmux("send-keys", "-t", "e2e", key)

    def wait_screen(self, predicate, timeout=30):
        """Wait until predicate(screen) (or a substring) holds; returns the screen or ""."""
        check = (lambda s: predicate in s) if isinstance(predicate, str) else predicate
        return _wait_for(lambda: s if check(s := self.screen()) else "", time.monotonic() + timeout)

    def type_line(self, text):
        self.type_text(text)
        time.sleep(0.5)  # typed text and Enter far apart, so Enter is not taken as part of a paste
        self.press("Enter")

    def close(self):
        try:
            os.killpg(self.pane_pid, signal.SIGKILL)  # the pane's shell is its process group leader
        except ProcessLookupError:
            pass
        self._tmux("kill-server", check=False)
        # kill-server leaves the socket file behind: remove ours (tmux's default socket directory)
        socket = os.path.join(os.environ.get("TMUX_TMPDIR", "/tmp"), f"tmux-{os.getuid()}", self.name)
        with contextlib.suppress(OSError):
            os.unlink(socket)


def diagnosis(env, workspace, codex_home, tmux=None):
    """What a failed real-Codex test prints: the TUI's screen, what intent-loop logged (its recent
    events, doctor, the hook failure log), and the hook entries of Codex's own rollout files."""
    parts = [f"--- screen ---\n{tmux.screen()}"] if tmux is not None else []
    for argv in (["log", "-n", "20"], ["doctor"]):
        done = subprocess.run([str(CLI), *argv], cwd=workspace, env=env, capture_output=True, text=True, timeout=60)
        parts.append(f"--- intent-loop {' '.join(argv)} (exit {done.returncode}) ---\n{done.stdout}{done.stderr}")
    failures = Path(env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl")
    if failures.is_file():  # content-free: codes, events and where each failed
        parts.append("--- hook-failures.jsonl ---\n" + "\n".join(failures.read_text().splitlines()[-10:]))
    for rollout in sorted(glob.glob(os.path.join(codex_home, "sessions", "**", "rollout-*.jsonl"), recursive=True)):
        lines = [line for line in Path(rollout).read_text(errors="replace").splitlines() if "hook" in line.lower()]
        parts.append(f"--- {os.path.basename(rollout)}: lines naming a hook ---\n" + "\n".join(lines)[-6000:])
    return "\n".join(parts)


def _wait_for(predicate, deadline, step=0.25):
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_real_codex_tui_records_an_intent_line(mock_model, codex_env):
    """One prompt typed into the interactive TUI reaches UserPromptSubmit and the ledger."""
    import shlex

    server, wrap = mock_model
    env, codex_home, data_root, workspace = codex_env
    env = dict(env, TERM="xterm-256color")
    (codex_home / "config.toml").write_text(CONFIG_TOML.format(base_url=server.base_url))
    install_hooks(env, codex_home)
    pinned = [f"{k}={env[k]}" for k in ("HOME", "CODEX_HOME", "INTENT_LOOP_DATA_DIR", "TERM")]
    command = "exec " + shlex.join(wrap(["env", *pinned, CODEX_BIN, "--dangerously-bypass-hook-trust"]))
    start = time.monotonic()
    deadline = start + TUI_DEADLINE
    tmux = _Tmux(command, cwd=workspace, env=env)
    try:
        ready = _wait_for(lambda: "OpenAI Codex" in (s := tmux.screen()) and "›" in s, deadline)
        assert ready, f"the TUI did not come up:\n{tmux.screen()}"
        time.sleep(0.5)  # let the composer settle before typing
        tmux.type_text("intent: goal Fix the TUI redirect loop")
        time.sleep(0.5)  # typed text and Enter far apart, so Enter is not taken as part of a paste
        tmux.press("Enter")
        if not _wait_for(lambda: server.response_bodies(), min(deadline, time.monotonic() + 10)):
            tmux.press("Enter")  # a first Enter swallowed while the TUI was still busy
        assert _wait_for(lambda: server.response_bodies(), deadline), f"no model request:\n{tmux.screen()}"

        def recorded():
            shown = subprocess.run([str(CLI), "show", "--json"], cwd=workspace, env=env,
                                   capture_output=True, text=True, timeout=30)
            return shown.returncode == 0 and "goal: Fix the TUI redirect loop" in json.loads(shown.stdout)["view"]

        assert _wait_for(recorded, deadline, step=0.5), f"the ledger has no goal claim:\n{tmux.screen()}"
        developer = developer_messages(server.response_bodies()[0])
        # A disk that stalls the ledger's sync past the commit's limit (hook.runtime) gets the honest
        # "written but not confirmed" line instead of the receipt: still context, never "NOT recorded"
        told = [m for m in developer if "intent-loop" in m and ("Fix the TUI redirect loop" in m or UNCONFIRMED in m)]
        assert told, f"{developer}\n{diagnosis(env, workspace, codex_home, tmux)}"
        if UNCONFIRMED in told[0]:
            print(f"real-codex e2e TUI: the ledger's sync stalled; the model was told: {told[0]}")
        contract = workspace / ".execution-fidelity" / "contract.json"
        assert _wait_for(contract.exists, deadline)
        kind, document, errors = contract_file.validate_document_bytes(contract.read_bytes())
        assert (kind, errors) == ("provider", [])
        assert document["projection"]["objective"] == "Fix the TUI redirect loop"
        print(f"real-codex e2e TUI: {time.monotonic() - start:.1f} s")
    finally:
        tmux.close()

    verify = subprocess.run([str(CLI), "verify", "--json"], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"] is True, verify.stdout + verify.stderr

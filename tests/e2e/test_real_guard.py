"""End to end: the contract intent-loop publishes is enforced by the real Execution Fidelity Guard
0.2.2 in the real Codex (0.169.0 pinned; INTENT_LOOP_CODEX_VERSION: real_host.py), both installed as
users install them: from git repositories (a fresh repository of this checkout, and one of Guard's
marketplace folder) over git's smart HTTP on loopback (`marketplace_source("git-url")`), and every hook
of both plugins trusted as the TUI's "Trust all" records it (guard_host.trust_hooks, through
`codex app-server` hooks/list; never --dangerously-bypass-hook-trust).

A scripted mock model (offline network namespace) makes `exec_command` calls, which Codex hands to
PreToolUse as tool "Bash" with tool_input.command; a Guard denial comes back to the model as the
call's function_call_output: "Command blocked by PreToolUse hook: Execution Fidelity Guard blocked
(or paused) this <tags> action under intent:<task> vN. ...". Guard's own records (events, receipts,
under <codex-home>/plugin-data/execution-fidelity-guard/v1/sessions/session-<sha256(session id)>/)
show it ran, in which mode, and what it decided for each command.

1. EFG_MODE=balanced: `forbid action:network` denies curl, `forbid command-prefix:rm -rf` denies
   `rm -rf build`, `ask action:write` pauses `touch x`; `intent: approve <id>` lets it run; a new
   session still denies; `intent: drop <id>` of the network forbid lets curl through.
2. Shadow (EFG_MODE unset): the same forbid is not denied (Guard only reminds).
3. Guard installed, its trust records removed: not denied, Guard never runs.
4. Guard not installed: not denied.
5. The cost of a "Done.": in balanced mode Guard's Stop hook blocks a completion claim it has no
   passing evidence for, EFG_MAX_STOP_CONTINUATIONS times (default 2) per contract version and
   session, each an extra model turn; none with EFG_MAX_STOP_CONTINUATIONS=0. (No tool result Codex
   hands PostToolUse can make a passing evidence record: an exec_command result is a plain string.)

"Told" (assert_told): what intent-loop says of enforcement, in `intent-loop status --json`
("enforcement": {"state", "mode"}) and in the model's developer messages
(enforcement_header(state)); they come last in each test, after the checks of Guard and Codex themselves.

Codex runs with sandbox_mode workspace-write (what users run; approval_policy never), so what Guard
lets through really runs (`touch x` creates x). The Codex homes, where Guard keeps its records, lie
outside /tmp (in /var/lib/intent-loop-tests/, removed at the end): records the agent could
write (the workspace, /tmp) prove nothing, and intent-loop says so ("unconfirmed"); a user's ~/.codex is
not under /tmp either. The workspaces stay in pytest's temporary directory.
"""
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from guard_host import (  # noqa: E402
    GUARD_PLUGIN_ID,
    exec_call,
    guard_records,
    guard_session_dir,
    guard_sessions,
    list_hooks,
    remove_trust,
    trust_hooks,
)
from mock_model import MockModelServer, developer_messages, function_outputs, message_texts  # noqa: E402
from plugin_repo import fresh_repository, install_plugin, marketplace_source, run_codex  # noqa: E402
from real_host import requires_codex  # noqa: E402
from test_real_codex import CONFIG_TOML, _offline_namespace, hook_results, session_id_of  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLI = ROOT / "hooks" / "intent-loop"
IL_PLUGIN_ID = "intent-loop@intent-loop"
# Guard 0.2.2 lies in shared/ beside the checkout (CI lays a copy there), else where this workplace keeps it
GUARD_FOLDER = next((place for place in (ROOT.parent / "shared" / "efg-0.2.2", Path("/work/shared/efg-0.2.2"))
                     if (place / ".agents" / "plugins" / "marketplace.json").is_file()), None)
# Outside the temp directories wherever the checkout lies (CI may clone it under /tmp): Guard records
# the agent could write (the workspace, a temp directory) prove nothing, and intent-loop says so
HOMES = Path("/var/lib/intent-loop-tests")
TURN_TIMEOUT = 90
DENIED = "Command blocked by PreToolUse hook: "
GUARD = "Execution Fidelity Guard"
CURL = "curl -s http://127.0.0.1:9/x"  # nothing listens on port 9: curl fails on its own when let through

pytestmark = [
    pytest.mark.e2e,
    requires_codex,
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed (Guard's hooks run `node`)"),
    pytest.mark.skipif(GUARD_FOLDER is None, reason="no copy of Execution Fidelity Guard 0.2.2 in shared/efg-0.2.2 "
                                                    "beside the checkout or in /work/shared/efg-0.2.2"),
]


# -- the host: one offline namespace, one mock model, the two repositories ---------------------
class Host:
    def __init__(self, base, homes, server, wrap, repositories):
        self.base, self.homes, self.server, self.wrap = base, homes, server, wrap
        self.repositories = repositories  # {plugin id: a git repository of its marketplace}

    def codex_home(self, name, *, guard=True):
        """A Codex home with intent-loop (and Guard) installed from git and every hook trusted."""
        return Home(self, name, guard=guard)


class Home:
    def __init__(self, host, name, *, guard):
        self.host = host
        self.base = host.base / name  # workspaces, served repositories
        self.base.mkdir()
        self.codex_home = host.homes / name / "codex-home"  # outside /tmp: see the module's docstring
        self.codex_home.mkdir(parents=True)
        (host.homes / name / "home").mkdir()
        base = self.base
        self.data_root = self.codex_home / "plugin-data" / "intent-loop" / "v1"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_"))}
        self.env.update(HOME=str(host.homes / name / "home"), CODEX_HOME=str(self.codex_home), NO_COLOR="1",
                        RUST_LOG="error")
        config = (CONFIG_TOML.format(base_url=host.server.base_url)
                  .replace("plugins = false", "plugins = true")
                  .replace('sandbox_mode = "read-only"', 'sandbox_mode = "workspace-write"'))
        (self.codex_home / "config.toml").write_text(config)
        self.scratch = base / "scratch"
        self.scratch.mkdir()
        plugins = [IL_PLUGIN_ID, GUARD_PLUGIN_ID] if guard else [IL_PLUGIN_ID]
        for plugin in plugins:
            # The repository is served only while `codex plugin add` runs: Codex syncs a reachable git
            # marketplace in the background (the app-server does, trust_hooks starts one) and re-installs
            # the plugin once, with a fresh .git/ in intent-loop's copy: a new content hash, its hooks
            # "modified" and skipped (measured with 0.169.0). Unreachable, the sync changes nothing.
            with marketplace_source("git-url", host.repositories[plugin], base / "served", host.wrap) as source:
                install_plugin(host.wrap, self.env, self.scratch, source, plugin)
        hooks = trust_hooks(self.env, self.scratch, host.wrap)
        by_plugin = {}
        for hook in hooks:
            by_plugin.setdefault(hook.get("pluginId"), []).append(hook["eventName"])
        expected = {IL_PLUGIN_ID: 3, GUARD_PLUGIN_ID: 11} if guard else {IL_PLUGIN_ID: 3}
        assert {plugin: len(events) for plugin, events in by_plugin.items()} == expected, by_plugin

    def workspace(self, name):
        path = self.base / name
        path.mkdir()
        return path


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    """The offline namespace, the mock model and both plugins' git repositories; Host.codex_home()
    installs from them, served over git's smart HTTP on loopback."""
    base = tmp_path_factory.mktemp("real-guard")
    try:
        HOMES.mkdir(mode=0o755, parents=True, exist_ok=True)
        homes = Path(tempfile.mkdtemp(prefix="real-guard-", dir=HOMES))
    except PermissionError:
        pytest.skip(f"{HOMES} cannot be created: Codex homes under a temp directory give Guard records that "
                    "prove nothing")
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, homes, ignore_errors=True)
        netns, how = _offline_namespace()
        server = None
        if netns is not None:
            stack.callback(netns.close)
            try:
                server = MockModelServer(netns=netns.path).start()
            except OSError as exc:  # setns refused (seccomp, no CAP_SYS_ADMIN): run on plain loopback
                how, netns = f"setns failed: {exc}", None
        if server is None:
            server = MockModelServer().start()
        stack.callback(server.stop)
        wrap = netns.wrap if netns else (lambda argv: list(argv))
        print(f"real-guard e2e network: {'offline namespace' if netns else 'host loopback'} ({how})")
        repositories = {IL_PLUGIN_ID: fresh_repository(base / "intent-loop"),
                        GUARD_PLUGIN_ID: fresh_repository(base / "execution-fidelity-guard", GUARD_FOLDER)}
        yield Host(base, homes, server, wrap, repositories)


@pytest.fixture(scope="module")
def shared_home(host):
    """One Codex home with both plugins trusted, for the cases that keep it as it is (1, 2, 5);
    each case works in a workspace of its own."""
    return host.codex_home("both")


# -- one `codex exec` ------------------------------------------------------------------------
class Turn:
    """One `codex exec` (or `exec resume`): its session id, the model requests it made (in order)
    and the outputs the model got back for its calls."""

    def __init__(self, rc, out, err, session_id, bodies, seconds):
        self.rc, self.out, self.err, self.session_id, self.bodies, self.seconds = rc, out, err, session_id, bodies, \
            seconds
        self.outputs = {}
        for body in bodies:
            self.outputs.update(function_outputs(body))

    def output(self, call_id):
        assert call_id in self.outputs, f"call {call_id} got no output back: {sorted(self.outputs)}\n{self.err}"
        text = self.outputs[call_id]
        return text if isinstance(text, str) else json.dumps(text)


def shell_calls(calls):
    """A responder: the (call id, command) calls, one per model request, each after the previous one's
    output came back; then the plain "Done." message (also for any request after that: a Stop
    continuation gets "Done." again)."""
    def respond(body, _number):
        done = function_outputs(body)
        for call_id, command in calls:
            if call_id not in done:
                return [exec_call(call_id, command)]
        return None
    return respond


def codex_exec(home, workspace, prompt, calls=(), *, env=None, resume=None, known=()):
    """`codex exec` (or `exec resume <resume>`) of `prompt` in `workspace`, the model making `calls`."""
    server = home.host.server
    server.respond_with(shell_calls(list(calls)))
    before = len(server.response_bodies())
    args = ["exec", "resume", "--skip-git-repo-check", resume] if resume else ["exec", "--skip-git-repo-check"]
    rc, out, err, seconds = run_codex(home.host.wrap, env or home.env, workspace, *args, prompt,
                                      timeout=TURN_TIMEOUT, check=False)
    assert rc == 0, f"codex {' '.join(args[:2])} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    failed = [r for r in hook_results(err) if r[1] == "Failed"]
    assert not failed, f"hook runs failed: {failed}\nstderr:\n{err}"
    session_id = resume or session_id_of(err, out, str(home.codex_home), known=known)
    assert session_id, f"no session id\nstderr:\n{err}"
    return Turn(rc, out, err, session_id, server.response_bodies()[before:], seconds)


def turn_requests(bodies):
    """The model requests that were turns (they offer tools); `codex exec` makes no others, but be sure."""
    return [body for body in bodies if body.get("tools")]


# -- what Guard did ----------------------------------------------------------------------------
def stable_sha256(value):
    """Guard's sha256 of a JSON value (canonical.mjs: keys sorted, no spaces)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                          .encode()).hexdigest()


def guard_decisions(home, session_id, command):
    """[(event, receipt)] of Guard's PreToolUse records for `command` in the session, oldest first."""
    digest = stable_sha256({"command": command})
    receipts = {rec["event_ref"]: rec for _name, rec in guard_records(home.codex_home, session_id, "receipts")}
    return [(event, receipts.get(event["event_id"])) for _name, event in
            guard_records(home.codex_home, session_id, "events")
            if event["event_type"] == "pre_tool_use" and event["input_sha256"] == digest]


def guard_decision(home, session_id, command):
    found = guard_decisions(home, session_id, command)
    assert len(found) == 1, f"Guard's PreToolUse records for {command!r}: {found}"
    event, receipt = found[0]
    assert receipt is not None, f"no receipt for Guard's event {event}"
    return event, receipt


def assert_guard_denied(turn, call_id, verb, tags):
    """The call's output is Guard's denial: `verb` is "blocked" (a forbid) or "paused" (an ask)."""
    output = turn.output(call_id)
    expected = f"{DENIED}{GUARD} {verb} this {tags} action under intent:"
    assert output.startswith(expected), f"{call_id}: expected {expected!r}..., got {output!r}"
    return output


def assert_not_denied(turn, call_id):
    """The call ran: its output is the command's own (exit code and output), no hook denied it."""
    output = turn.output(call_id)
    assert DENIED not in output and GUARD not in output, f"{call_id} was denied: {output!r}"
    assert "Process exited with code" in output, f"{call_id}: not a command's output: {output!r}"
    return output


def contract(workspace):
    document = json.loads((workspace / ".execution-fidelity" / "contract.json").read_text())
    return document["envelope"], document["projection"]


def claim_id(home, workspace, statement, env=None):
    """The short id of the active claim with `statement` (`intent-loop show --all --json`)."""
    done = subprocess.run([str(CLI), "cli", "show", "--all", "--json"], cwd=workspace,
                          env=dict(env or home.env, INTENT_LOOP_DATA_DIR=str(home.data_root)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    found = [c["claim_id"] for c in json.loads(done.stdout)["history"]
             if c["statement"] == statement and c["state"] == "active"]
    assert len(found) == 1, (statement, done.stdout)
    return found[0][:8]


# -- what intent-loop tells -----------------------------
def enforcement_status(home, workspace, env=None):
    """`intent-loop status --json` of the checkout, on the data root the plugin's hooks used."""
    done = subprocess.run([str(CLI), "cli", "status", "--json"], cwd=workspace,
                          env=dict(env or home.env, INTENT_LOOP_DATA_DIR=str(home.data_root)),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def assert_told(state, home, workspace, first_request, *, mode=None, env=None):
    """The user and the model are told the Guard state `state` ("enforced", "reminders", "off",
    "not_running", "not_installed", "unconfirmed"): `intent-loop status --json` carries
    "enforcement": {"state": state, "mode": mode, ...} (what the hooks saw), and the model's developer
    messages of the session's first prompt (`first_request`, a request body) hold enforcement_header(state)."""
    from intent_loop.ops.enforcement_words import enforcement_header

    status = enforcement_status(home, workspace, env)
    enforcement = status.get("enforcement")
    assert isinstance(enforcement, dict), f"no \"enforcement\" in `intent-loop status --json`: {status}"
    assert enforcement.get("state") == state, f"enforcement state: {enforcement}, expected {state!r}"
    if mode is not None:
        assert enforcement.get("mode") == mode, f"enforcement mode: {enforcement}, expected {mode!r}"
    header = enforcement_header(state)
    developer = developer_messages(first_request)
    assert any(header in message for message in developer), \
        f"the model was not told {header!r}; its developer messages:\n" + "\n---\n".join(developer)
    return enforcement


# -- 1. balanced: forbid, ask, approve, a new session, drop ---------------------------------------
def test_balanced_guard_denies_forbidden_and_asked_actions_until_approved_or_dropped(shared_home):
    home = shared_home
    workspace = home.workspace("enforced")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.txt").write_text("built\n")
    env = dict(home.env, EFG_MODE="balanced")
    start = time.monotonic()

    # Session A: three rules typed, three calls denied or paused.
    prompt = ("Tidy the build and fetch the page.\n"
              "intent: goal Tidy the build output\n"
              "intent: forbid action:network\n"
              "intent: forbid command-prefix:rm -rf\n"
              "intent: ask action:write\n")
    first = codex_exec(home, workspace, prompt, [("a_curl", CURL), ("a_rm", "rm -rf build"), ("a_touch", "touch x")],
                       env=env)
    session_a = first.session_id
    envelope, projection = contract(workspace)
    ref, v1 = envelope["contract_ref"], envelope["contract_version"]
    assert projection["authorization"]["forbidden"] == ["action:network", "command-prefix:rm -rf"], projection
    assert projection["authorization"]["requires_user"] == ["action:write"], projection
    assert f"under {ref} v{v1}." in assert_guard_denied(first, "a_curl", "blocked", "network")
    rm_output = first.output("a_rm")
    assert rm_output.startswith(f"{DENIED}{GUARD} blocked this ") and f"under {ref} v{v1}." in rm_output, rm_output
    assert f"under {ref} v{v1}." in assert_guard_denied(first, "a_touch", "paused", "write_workspace")
    assert (workspace / "build" / "out.txt").is_file(), "rm -rf build ran"
    assert not (workspace / "x").exists(), "touch x ran"

    # Guard's own records: it ran in balanced mode, bound to our contract, and decided each call.
    events = [rec for _name, rec in guard_records(home.codex_home, session_a, "events")]
    assert events, f"no Guard record of session {session_a}: its hooks did not run {guard_sessions(home.codex_home)}"
    assert {e["facts"]["guard_mode"] for e in events} == {"balanced"}, events
    for command, decision, reason in ((CURL, "block", "explicit_contract_conflict"),
                                      ("rm -rf build", "block", "explicit_contract_conflict"),
                                      ("touch x", "ask", "explicit_user_authorization_required")):
        event, receipt = guard_decision(home, session_a, command)
        facts = event["facts"]
        assert (event["contract_ref"], event["contract_version"], facts["contract_status"]) == (ref, v1, "bound")
        assert (receipt["decision"], receipt["reason_codes"]) == (decision, [reason]), (command, receipt)
    forbidden_rule = guard_decision(home, session_a, "rm -rf build")[1]["rule_ids"]
    assert len(forbidden_rule) == 1 and forbidden_rule[0].startswith("forbidden:"), forbidden_rule

    # Session A again: `intent: approve <id>` of the ask claim, and `touch x` runs.
    ask_id = claim_id(home, workspace, "ask: action:write", env)
    second = codex_exec(home, workspace, f"intent: approve {ask_id}\nNow create x, please.\n",
                        [("a2_touch", "touch x")], env=env, resume=session_a)
    envelope, projection = contract(workspace)
    v2 = envelope["contract_version"]
    assert v2 == v1 + 1 and projection["authorization"]["allowed"] == ["action:write"], envelope
    assert projection["authorization"]["requires_user"] == [], projection
    assert_not_denied(second, "a2_touch")
    assert (workspace / "x").is_file(), "touch x did not run after the approval"
    _event, receipt = guard_decisions(home, session_a, "touch x")[-1]
    assert (receipt["decision"], receipt["contract_version"], receipt["reason_codes"]) == (
        "continue", v2, ["explicit_contract_allowance"]), receipt

    # Session B, new: the forbids still hold (Guard reads the file, whatever the session).
    third = codex_exec(home, workspace, "Fetch the page and clean the build again.\n",
                       [("b_curl", CURL), ("b_rm", "rm -rf build")], env=env, known=[session_a])
    session_b = third.session_id
    assert session_b != session_a
    assert f"under {ref} v{v2}." in assert_guard_denied(third, "b_curl", "blocked", "network")
    assert third.output("b_rm").startswith(f"{DENIED}{GUARD} blocked this "), third.output("b_rm")
    assert (workspace / "build" / "out.txt").is_file()
    assert guard_decision(home, session_b, CURL)[1]["decision"] == "block"

    # Session B again: `intent: drop <id>` of the network forbid, and curl is no longer Guard's to deny.
    network_id = claim_id(home, workspace, "forbid: action:network", env)
    fourth = codex_exec(home, workspace, f"intent: drop {network_id}\nFetch the page now.\n",
                        [("b2_curl", CURL)], env=env, resume=session_b)
    envelope, projection = contract(workspace)
    assert envelope["contract_version"] == v2 + 1, envelope
    assert projection["authorization"]["forbidden"] == ["command-prefix:rm -rf"], projection
    assert_not_denied(fourth, "b2_curl")
    event, receipt = guard_decisions(home, session_b, CURL)[-1]
    assert (event["contract_version"], receipt["decision"]) == (v2 + 1, "continue"), receipt
    print(f"real-guard balanced: 4 exec runs in {time.monotonic() - start:.1f} s "
          f"({', '.join(f'{t.seconds:.1f}' for t in (first, second, third, fourth))} s)")

    # the user and the model are told Guard enforces
    assert_told("enforced", home, workspace, first.bodies[0], mode="balanced", env=env)
    assert_told("enforced", home, workspace, third.bodies[0], mode="balanced", env=env)


# -- 2-4. where Guard does not enforce ----------------------------------------------------------
FORBID_PROMPT = "Fetch the page.\nintent: goal Read the page\nintent: forbid action:network\n"


def test_shadow_mode_guard_reminds_and_denies_nothing(shared_home):
    home = shared_home
    workspace = home.workspace("shadow")
    turn = codex_exec(home, workspace, FORBID_PROMPT, [("s_curl", CURL)])  # EFG_MODE unset: shadow
    assert contract(workspace)[1]["authorization"]["forbidden"] == ["action:network"]
    assert_not_denied(turn, "s_curl")
    events = [rec for _name, rec in guard_records(home.codex_home, turn.session_id, "events")]
    assert events and {e["facts"]["guard_mode"] for e in events} == {"shadow"}, events
    event, receipt = guard_decision(home, turn.session_id, CURL)
    assert event["facts"]["contract_status"] == "bound", event
    assert (receipt["decision"], receipt["reason_codes"]) == (
        "remind", ["shadow_would_block", "explicit_contract_conflict"]), receipt
    # and a "Done." costs nothing in shadow mode: the call's turn and the answer's, no continuation
    assert len(turn_requests(turn.bodies)) == 2, len(turn.bodies)

    # the user and the model are told
    assert_told("reminders", home, workspace, turn.bodies[0], mode="shadow")


def test_guard_installed_without_trust_records_denies_nothing(host):
    home = host.codex_home("untrusted")
    remove_trust(home.codex_home, f"{GUARD_PLUGIN_ID}:")
    hooks = list_hooks(home.env, home.scratch, host.wrap)
    status = {}
    for hook in hooks:
        status.setdefault(hook.get("pluginId"), set()).add(hook["trustStatus"])
    assert status == {IL_PLUGIN_ID: {"trusted"}, GUARD_PLUGIN_ID: {"untrusted"}}, status
    workspace = home.workspace("untrusted-guard")
    env = dict(home.env, EFG_MODE="balanced")
    turn = codex_exec(home, workspace, FORBID_PROMPT, [("u_curl", CURL)], env=env)
    assert contract(workspace)[1]["authorization"]["forbidden"] == ["action:network"]  # intent-loop's hooks ran
    assert_not_denied(turn, "u_curl")
    assert not guard_session_dir(home.codex_home, turn.session_id).exists(), guard_sessions(home.codex_home)
    assert len(turn_requests(turn.bodies)) == 2, "Guard's Stop hook ran"

    # the user and the model are told
    assert_told("not_running", home, workspace, turn.bodies[0], env=env)


def test_guard_not_installed_denies_nothing(host):
    home = host.codex_home("intent-loop-only", guard=False)
    workspace = home.workspace("no-guard")
    env = dict(home.env, EFG_MODE="balanced")
    turn = codex_exec(home, workspace, FORBID_PROMPT, [("n_curl", CURL)], env=env)
    assert contract(workspace)[1]["authorization"]["forbidden"] == ["action:network"]
    assert_not_denied(turn, "n_curl")
    assert not (home.codex_home / "plugin-data" / "execution-fidelity-guard").exists()
    assert len(turn_requests(turn.bodies)) == 2

    # the user and the model are told
    assert_told("not_installed", home, workspace, turn.bodies[0], env=env)


# -- 5. the cost of a "Done." -------------------------------------------------------------------
def stop_receipts(home, session_id):
    """[(decision, reason codes, contract version)] of Guard's Stop receipts in the session."""
    events = {rec["event_id"]: rec for _name, rec in guard_records(home.codex_home, session_id, "events")}
    return [(rec["decision"], rec["reason_codes"], rec["contract_version"])
            for _name, rec in guard_records(home.codex_home, session_id, "receipts")
            if events.get(rec["event_ref"], {}).get("event_type") == "stop"]


STOP_REASON = "Execution Fidelity Guard found an explicit completion claim but lacks full, passing evidence"


def last_user_text(body):
    """The text of the last user message of a request body."""
    for item in reversed(body.get("input") or []):
        if isinstance(item, dict) and item.get("role") == "user":
            return "\n".join(message_texts(item))
    return ""


def test_balanced_done_costs_the_stop_continuations_per_contract_version(shared_home):
    home = shared_home
    workspace = home.workspace("done")
    env = dict(home.env, EFG_MODE="balanced")
    continuation = ("continue_verification", ["completion_claim_unverified", "required_evidence_missing"])
    capped = ("remind", ["completion_claim_unverified", "continuation_cap_reached"])

    # A new contract (v1): "Done." is blocked twice (the default cap), so the turn costs 3 requests.
    first = codex_exec(home, workspace, "Write the notes.\nintent: goal Write the release notes\n", env=env)
    session = first.session_id
    v1 = contract(workspace)[0]["contract_version"]
    assert len(turn_requests(first.bodies)) == 1 + 2, len(first.bodies)
    assert [r[:2] for r in stop_receipts(home, session)] == [continuation, continuation, capped]
    # what intent-loop announced (the Guard line's explanation, status): exactly the passes it cost
    told = assert_told("enforced", home, workspace, first.bodies[0], mode="balanced", env=env)
    assert told["stops"] == len(turn_requests(first.bodies)) - 1 == 2
    # each continuation reaches the model as a user message: Guard's reason in a <hook_prompt>
    for body in first.bodies[1:]:
        assert "<hook_prompt" in last_user_text(body) and STOP_REASON in last_user_text(body), last_user_text(body)

    # Same session, same contract version: the cap is spent, "Done." costs nothing more.
    again = codex_exec(home, workspace, "Anything else to do?\n", env=env, resume=session)
    assert contract(workspace)[0]["contract_version"] == v1
    assert len(turn_requests(again.bodies)) == 1, len(again.bodies)
    assert [r[:2] for r in stop_receipts(home, session)][3:] == [capped]

    # Same session, a new contract version (v2): two more.
    changed = codex_exec(home, workspace, "Keep it short.\nintent: must keep the notes under a page\n", env=env,
                         resume=session)
    assert contract(workspace)[0]["contract_version"] == v1 + 1
    assert len(turn_requests(changed.bodies)) == 1 + 2, len(changed.bodies)
    assert [r for r in stop_receipts(home, session)][4:] == [(*continuation, v1 + 1), (*continuation, v1 + 1),
                                                             (*capped, v1 + 1)]

    # A new session, same contract: the count is per session, so two more again.
    fresh = codex_exec(home, workspace, "Check the notes.\n", env=env, known=[session])
    assert len(turn_requests(fresh.bodies)) == 1 + 2, len(fresh.bodies)

    # EFG_MAX_STOP_CONTINUATIONS=0: none, even for a new session and a new contract version.
    none = codex_exec(home, workspace, "Once more.\nintent: must mention the upgrade steps\n",
                      env=dict(env, EFG_MAX_STOP_CONTINUATIONS="0"), known=[session, fresh.session_id])
    assert contract(workspace)[0]["contract_version"] == v1 + 2
    assert len(turn_requests(none.bodies)) == 1, len(none.bodies)
    assert [r[:2] for r in stop_receipts(home, none.session_id)] == [capped]
    assert enforcement_status(home, workspace, env)["enforcement"]["stops"] == 0
    print(f"real-guard done cost: requests per turn {[len(t.bodies) for t in (first, again, changed, fresh, none)]}")

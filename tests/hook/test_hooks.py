"""The three hook binaries in dist/: real Codex 0.169.0 payloads, commands, retries, subagents,
Stop publication, SessionStart re-injection, every fail-open path and 16 concurrent prompts."""
import json
import os
import signal
import subprocess
import time

import pytest

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import (
    BINARIES,
    DIST,
    FAIL_OPEN,
    FIXTURES,
    events,
    fixture,
    hold_project_lock,
    hook,
    project_of,
    prompt_payload,
)
from helpers.receipt_words import said
from helpers.settle import settle
from intent_loop.intent.state import REDUCER
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading
from intent_loop.storage.cache import cache_store, checkpoint

pytestmark = requires_dist
env = hook_binaries.env  # the fixtures, by the names the tests ask for
ws = hook_binaries.ws


def _fixture_names():
    out = []
    for sub in ("", "ephemeral", "app_server"):
        d = os.path.join(FIXTURES, sub)
        if os.path.isdir(d):
            out += [os.path.join(sub, n) for n in sorted(os.listdir(d)) if n.endswith(".json")]
    return out


@pytest.mark.parametrize("name", _fixture_names())
def test_real_payloads_without_commands(name, env, ws):
    payload = fixture(name, ws)
    out, _answer, _t = hook(payload["hook_event_name"], payload, env)
    assert out == FAIL_OPEN
    assert not os.path.exists(project_of(env, ws).ledger)


def test_prompt_with_commands_records_and_receipts(env, ws):
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "please\nintent: goal ship the thing\n"
                                                                "intent: must keep tests green"), env)
    ctx = answer["hookSpecificOutput"]["additionalContext"]
    assert "intent-loop receipt" in ctx
    assert said(ctx, "recorded", "goal", line=2) == said(ctx, "recorded", "must", line=3) == 1
    assert "ship the thing" in ctx
    evs = events(env, ws)
    assert evs[0]["event_type"] == "task_started"
    statements = [c["statement"] for e in evs for c in e["payload"].get("initial_claims", [])] + \
                 [e["payload"]["claim"]["statement"] for e in evs if e["event_type"] == "claim_added"]
    assert sorted(statements) == ["must: keep tests green", "ship the thing"]
    reading.verify_all(project_of(env, ws), REDUCER)


def test_rejected_command_gets_system_message(env, ws):
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "please\nintent: gaol typo"), env)
    assert said(answer.get("systemMessage", ""), "rejected", code="UNKNOWN_VERB", line=2) == 1


def test_retried_prompt_records_nothing_new(env, ws):
    payload = prompt_payload(ws, "intent: goal once only")
    hook("UserPromptSubmit", payload, env)
    with open(project_of(env, ws).ledger, "rb") as fh:
        before = fh.read()
    hook("UserPromptSubmit", payload, env)
    with open(project_of(env, ws).ledger, "rb") as fh:
        assert fh.read() == before


def test_subagent_prompt_records_no_claims(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal real goal"), env)
    n = len(events(env, ws))
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: goal SUBAGENT goal\nintent: must x",
                                                               turn="turn-B", agent_id="sub-1", agent_type="worker"),
                            env)
    # the subagent is given its parent session's view, read-only; its lines run no command
    assert set(answer) == {"continue", "hookSpecificOutput"}
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "you run as a subagent" in context and "real goal" in context and "SUBAGENT" not in context
    new = events(env, ws)[n:]
    assert all(e["event_type"] == "source_observed" and e["actor"] == "agent" for e in new), new
    with open(project_of(env, ws).ledger, "rb") as fh:
        assert b"SUBAGENT" not in fh.read()
    # a subagent of a session that never typed a command reads the current task and leaves no trace
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: goal x", session="s-none", agent_id="a"),
                            env)
    assert "real goal" in answer["hookSpecificOutput"]["additionalContext"]
    assert len(events(env, ws)) == n + len(new)


def test_stop_publishes_provider_file(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal publish on stop"), env)
    path = os.path.join(ws, ".execution-fidelity", "contract.json")
    os.unlink(path)
    out, _a, _t = hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1"), env)
    assert out == FAIL_OPEN
    from intent_loop.guard import contract_file
    with open(path, "rb") as fh:
        kind, doc, errors = contract_file.validate_document_bytes(fh.read())
    assert kind == "provider" and errors == []
    assert doc["projection"]["objective"] == "publish on stop"
    assert any(e["event_type"] == "result_signal_observed" for e in events(env, ws))


def test_session_start_after_clear_reinjects_view(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal remember me"), env)
    for source in ("clear", "compact"):
        _o, answer, _t = hook("SessionStart", fixture("session_start.startup.json", ws, session_id="sess-1",
                                                      source=source), env)
        ctx = answer["hookSpecificOutput"]["additionalContext"]
        assert "remember me" in ctx and "user's own recorded intent" in ctx
    # another session (a new id, as after `/clear`) follows the workspace's current task
    _o, answer, _t = hook("SessionStart", fixture("session_start.startup.json", ws, session_id="other"), env)
    ctx = answer["hookSpecificOutput"]["additionalContext"]
    assert "follows the workspace's current task" in ctx and "remember me" in ctx


# -- fail-open paths ------------------------------------------------------------------------------
def _fail_open(event, payload, env, raw=None):
    out, _a, elapsed = hook(event, payload, env, raw=raw)
    assert out == FAIL_OPEN
    assert elapsed < 5


def _lets_through_with_message(payload, env, code):
    """A prompt's commands failed: `{"continue":true}`, a systemMessage naming how many were NOT
    recorded and the code, and the same line in the model's context."""
    _out, answer, elapsed = hook("UserPromptSubmit", payload, env)
    assert set(answer) == {"continue", "systemMessage", "hookSpecificOutput"}
    assert f"NOT recorded ({code})" in answer["systemMessage"]
    assert answer["hookSpecificOutput"]["additionalContext"] == answer["systemMessage"]
    assert elapsed < 5


@pytest.mark.parametrize("event", list(BINARIES))
def test_wrong_event_and_invalid_json(event, env, ws):
    other = "Stop" if event != "Stop" else "UserPromptSubmit"
    payload = prompt_payload(ws, "intent: goal wrong binary", hook_event_name=other)
    _fail_open(event, payload, env)
    _fail_open(event, None, env, raw=b'{"hook_event_name": "' + event.encode() + b'", "cwd": ')
    _fail_open(event, None, env, raw=b"")
    assert not os.path.exists(project_of(env, ws).ledger)


@pytest.mark.parametrize("event", list(BINARIES))
@pytest.mark.parametrize("missing", ["session_id", "cwd"])
def test_a_payload_without_session_or_cwd_fails_open_and_logs_its_code(event, missing, env, ws):
    payload = prompt_payload(ws, "keep going", hook_event_name=event)
    payload[missing] = None if missing == "cwd" else ""
    _fail_open(event, payload, env)
    if event == "UserPromptSubmit":  # a typed command is never dropped without telling the user
        payload["prompt"] = "intent: goal ship it"
        _out, answer, _e = hook(event, payload, env)
        assert "NOT recorded (INVALID_HOOK_PAYLOAD)" in answer["systemMessage"], answer
    log = os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl")
    with open(log) as fh:
        codes = [json.loads(line)["code"] for line in fh]
    assert set(codes) == {"INVALID_HOOK_PAYLOAD"}
    assert not os.path.exists(project_of(env, ws).ledger)


@pytest.mark.parametrize("event", list(BINARIES))
def test_missing_data_root(event, env, ws):
    """No data root at all (no absolute HOME and none of the variables): fail open, nothing written."""
    env = dict(env)
    del env["INTENT_LOOP_DATA_DIR"]
    home = env.pop("HOME")
    payload = prompt_payload(ws, "intent: goal nowhere to go", hook_event_name=event)
    _out, answer, elapsed = hook(event, payload, env)
    assert elapsed < 5 and "hookSpecificOutput" not in answer and "decision" not in answer
    assert os.listdir(home) == [] and os.listdir(ws) == []


def test_the_first_host_to_run_creates_the_default_store_without_codex(env, ws):
    """Issue 37: with HOME alone (Claude Code's hooks, or Codex's without ~/.codex yet) the store is
    ~/.codex/plugin-data/intent-loop/v1, created by whichever host runs first."""
    env = dict(env)
    del env["INTENT_LOOP_DATA_DIR"]
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship it"), env)
    store = os.path.join(env["HOME"], ".codex", "plugin-data", "intent-loop", "v1")
    assert os.listdir(os.path.join(env["HOME"], ".codex")) == ["plugin-data"]
    assert len(events(dict(env, INTENT_LOOP_DATA_DIR=store), ws)) >= 2


@pytest.mark.parametrize("event", list(BINARIES))
def test_corrupt_ledger(event, env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal before corruption"), env)
    p = project_of(env, ws)
    with open(p.ledger, "rb") as fh:
        data = fh.read()
    corrupt = data.replace(b"before corruption", b"BEFORE corruption")
    with open(p.ledger, "wb") as fh:
        fh.write(corrupt)
    import shutil
    shutil.rmtree(p.cache_dir, ignore_errors=True)
    payload = prompt_payload(ws, "intent: must more", turn="t-2", hook_event_name=event)
    if event == "UserPromptSubmit":  # issue 15: the prompt goes on, and the user is told why
        _lets_through_with_message(payload, env, "LEDGER_HASH_MISMATCH")
    else:
        _fail_open(event, payload, env)
    with open(p.ledger, "rb") as fh:
        assert fh.read() == corrupt


@pytest.mark.parametrize("event", ["UserPromptSubmit", "Stop"])
def test_held_lock_fails_open_within_deadline(event, env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal lock test"), env)
    n = len(events(env, ws))
    holder = hold_project_lock(env, ws, seconds=4)
    try:
        if event == "Stop":
            _fail_open(event, fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="stop-lock"), env)
        else:  # issue 15: the prompt goes on, and the user is told why
            _lets_through_with_message(prompt_payload(ws, "intent: must blocked", turn="t-lock"), env, "LOCK_TIMEOUT")
    finally:
        holder.communicate(timeout=20)
    assert len(events(env, ws)) == n
    reading.verify_all(project_of(env, ws), REDUCER)


def test_observation_is_written_after_the_answer_without_holding_codexs_pipes(env, ws):
    """A linked prompt answers while another process still holds the project lock: its hash-only
    observation is written by a detached child that has let go of stdout/stderr (Codex reads them
    to EOF), and lands once the lock is free."""
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal deferred write"), env)
    n = len(events(env, ws))
    holder = hold_project_lock(env, ws, seconds=1.0)
    try:
        proc = subprocess.Popen([os.path.join(DIST, BINARIES["UserPromptSubmit"])], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out, _err = proc.communicate(json.dumps(prompt_payload(ws, "keep going", turn="t-deferred")).encode(),
                                     timeout=10)  # EOF on both pipes and exit
        answered_while_locked = holder.poll() is None
        assert holder.stdout.readline().strip() == b"released"
    finally:
        holder.communicate(timeout=20)
    assert proc.returncode == 0 and json.loads(out)["continue"] is True
    assert answered_while_locked, "the hook waited for the lock instead of answering first"
    settle(env["INTENT_LOOP_DATA_DIR"], ws)
    new = events(env, ws)[n:]
    assert [e["event_type"] for e in new] == ["source_observed"], new
    reading.verify_all(project_of(env, ws), REDUCER)


def test_a_foreign_hold_on_the_pending_lock_neither_keeps_the_hook_nor_loses_the_write(env, ws):
    """Waiters hold cache/deferred.lock exclusively only for an instant; should anything hold it
    for long, the hook still exits at once and its detached write still lands (unseen by waiters)."""
    import fcntl

    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal pending lock"), env)
    n = len(events(env, ws))
    fd = os.open(os.path.join(project_of(env, ws).cache_dir, "deferred.lock"), os.O_RDONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        proc = subprocess.run([os.path.join(DIST, BINARIES["UserPromptSubmit"])], capture_output=True, env=env,
                              input=json.dumps(prompt_payload(ws, "keep going", turn="t-held")).encode(), timeout=10)
    finally:
        os.close(fd)
    assert proc.returncode == 0 and proc.stdout.startswith(FAIL_OPEN[:-1])
    give_up = time.monotonic() + 10
    while len(events(env, ws)) == n and time.monotonic() < give_up:
        time.sleep(0.01)
    assert [e["event_type"] for e in events(env, ws)[n:]] == ["source_observed"]


def test_a_deleted_cache_is_recreated_so_waiters_still_see_the_detached_write(env, ws):
    import shutil

    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal cache gone"), env)
    n = len(events(env, ws))
    shutil.rmtree(project_of(env, ws).cache_dir)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="stop-cache-gone"), env)  # settles
    assert [e["event_type"] for e in events(env, ws)[n:]][:1] == ["result_signal_observed"]


def test_deferred_observation_rechecks_the_task_under_the_lock(env, ws, monkeypatch):
    """Between a prompt's lock-free read and its deferred write the user turned the task off:
    the write re-plans on the locked state and records nothing."""
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal recheck"), env)
    record = _deferred_observation(env, ws, monkeypatch, turn="t-late")
    hook("UserPromptSubmit", prompt_payload(ws, "intent: off", turn="t-off"), env)
    n = len(events(env, ws))

    record(time.monotonic() + 10)

    assert len(events(env, ws)) == n
    reading.verify_all(project_of(env, ws), REDUCER)


def test_deferred_observation_stays_with_the_task_it_was_made_in(env, ws, monkeypatch):
    """The session moved on to a new task before the deferred write ran: the observation is
    still recorded, under the task that was linked when the prompt was typed."""
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal first task"), env)
    first = project_state(env, ws)["sessions"]
    record = _deferred_observation(env, ws, monkeypatch, turn="t-moved")
    hook("UserPromptSubmit", prompt_payload(ws, "intent: new second task", turn="t-new"), env)
    n = len(events(env, ws))

    record(time.monotonic() + 10)

    new = events(env, ws)[n:]
    assert [(e["event_type"], e["task_id"]) for e in new] == [("source_observed", list(first.values())[0])]


def _deferred_observation(env, ws, monkeypatch, *, turn):
    """Run the prompt handler in-process up to its answer; return the write it leaves for later."""
    from intent_loop.hook import handlers

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    runtime = {"env": env, "deadline": time.monotonic() + 10, "executable": None}
    handlers.user_prompt_submit(prompt_payload(ws, "keep going", turn=turn), runtime)
    return runtime["after"].work(succeeded=True)


def project_state(env, ws):
    return reading.load_verified(project_of(env, ws), REDUCER).state


def test_sigterm_answers_continue(env, ws):
    # warm the extracted runtime first: before run_hook installs its SIGTERM handler (launcher,
    # first-run extraction) a SIGTERM still kills the process without an answer
    hook("UserPromptSubmit", prompt_payload(ws, "warm up"), env)
    proc = subprocess.Popen([os.path.join(DIST, BINARIES["UserPromptSubmit"])], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdin.write(b'{"hook_event_name":"UserPromptSubmit",')  # keep stdin open: the hook is reading
    proc.stdin.flush()
    time.sleep(1.5)
    proc.send_signal(signal.SIGTERM)
    out, _err = proc.communicate(timeout=5)
    assert proc.returncode == 0
    assert out == FAIL_OPEN


def test_sixteen_concurrent_prompts(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal concurrency base"), env)  # warm + one task
    procs = []
    for i in range(16):
        payload = prompt_payload(ws, f"intent: must concurrent requirement {i:02d}", turn=f"turn-c{i}")
        p = subprocess.Popen([os.path.join(DIST, BINARIES["UserPromptSubmit"])], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        procs.append((p, json.dumps(payload).encode()))
    started = time.monotonic()
    for p, data in procs:
        p.stdin.write(data)
        p.stdin.close()
    outs = []
    for p, _d in procs:
        p.wait(timeout=15)
        outs.append(p.stdout.read())
        assert p.returncode == 0
    assert time.monotonic() - started < 10
    for out in outs:
        assert json.loads(out)["continue"] is True
    evs = events(env, ws)
    statements = [e["payload"]["claim"]["statement"] for e in evs if e["event_type"] == "claim_added"]
    # Each command is recorded exactly once, or (only when the hook's own deadline ran out while
    # 15 others held the lock, as on a loaded machine) its answer says it was NOT recorded and the
    # ledger has no copy: never dropped without a word, never recorded twice.
    named = 0
    for i, out in enumerate(outs):
        count = statements.count(f"must: concurrent requirement {i:02d}")
        if count == 0 and b"1 command NOT recorded (LOCK_TIMEOUT)" in out:
            named += 1
            continue
        assert count == 1, (i, outs)
    assert named <= 4, outs  # the lock serves a queue of 16: most get through within the deadline
    reading.verify_all(project_of(env, ws), REDUCER)


# -- a hand-edited cache (format 2: text comes from the ledger) -------------------------------------
CACHE_FORGERY = "FORGED words the user never typed"


def _rewrite_framed(path, change):
    """A hand edit of a cache file that recomputes its digest."""
    import hashlib
    with open(path, "rb") as fh:
        doc = json.loads(fh.read()[65:])
    change(doc)
    body = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    with open(path, "wb") as fh:
        fh.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)


def test_hand_edited_cache_never_reaches_hook_context_or_the_guard_file(env, ws):

    hook("UserPromptSubmit", prompt_payload(ws, "intent: new the real label\nintent: goal ship the real parser\n"
                                                "intent: must keep the real tests green"), env)
    p = project_of(env, ws)
    state = reading.verify_all(p, REDUCER).state
    task_id = state["sessions"][paths_mod.session_hash("sess-1")]
    from helpers.cache_files import shard_file

    shard = shard_file(p, "t-" + task_id)

    def forge(doc):
        data = doc["data"]
        data["label"] = CACHE_FORGERY
        for claim_id in data["claims"]:  # the format-1 shape: text in the cache
            data["claims"][claim_id] = {"claim": {"claim_id": claim_id, "statement": "must: " + CACHE_FORGERY}}

    _rewrite_framed(shard, forge)
    seen = os.path.join(p.cache_dir, f"v2.seen-{paths_mod.session_hash('sess-1')}.json")
    with open(seen, "wb") as fh:  # a seen record asking to tell the model what changed
        fh.write(json.dumps({"view_sha256": "0" * 64, "change_seq": -1, "unseen": [CACHE_FORGERY]}).encode())

    _o, answer, _t = hook("SessionStart", fixture("session_start.startup.json", ws, session_id="sess-1",
                                                  source="clear"), env)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "ship the real parser" in context and "the real label" in context
    assert CACHE_FORGERY not in context
    with open(seen, "wb") as fh:
        fh.write(json.dumps({"view_sha256": "0" * 64, "change_seq": -1, "unseen": [CACHE_FORGERY]}).encode())
    _o, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "go on", turn="turn-B"), env)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "keep the real tests green" in context and CACHE_FORGERY not in context

    _rewrite_framed(shard_file(p, "t-" + task_id), forge)  # again, for Stop's own read
    guard = os.path.join(ws, ".execution-fidelity", "contract.json")
    os.unlink(guard)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="turn-B"), env)
    with open(guard, "rb") as fh:
        published = fh.read()
    assert b"ship the real parser" in published and CACHE_FORGERY.encode() not in published


def test_format_1_cache_files_are_ignored_and_replaced(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal the real goal"), env)
    p = project_of(env, ws)
    for name in os.listdir(p.cache_dir):
        if name.startswith(("v2.", cache_store.SHARD_PREFIX)):  # the cache and the seen records
            os.unlink(os.path.join(p.cache_dir, name))
    verified = reading.verify_all(p, REDUCER)
    body = json.dumps({"format": 1, "state": {"tasks": {"x": {"label": CACHE_FORGERY}}},
                       "verified": {"size": verified.size, "count": verified.count}}).encode()
    import hashlib
    with open(os.path.join(p.cache_dir, "state.json"), "wb") as fh:
        fh.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    old_seen = os.path.join(p.cache_dir, f"seen-{paths_mod.session_hash('sess-1')}.json")
    with open(old_seen, "wb") as fh:
        fh.write(json.dumps({"view_sha256": "0" * 64, "change_seq": -1, "unseen": [CACHE_FORGERY]}).encode())

    _o, answer, _t = hook("SessionStart", fixture("session_start.startup.json", ws, session_id="sess-1",
                                                  source="clear"), env)
    context = answer["hookSpecificOutput"]["additionalContext"]
    assert "the real goal" in context and CACHE_FORGERY not in context
    names = os.listdir(p.cache_dir)
    assert checkpoint.ROOT_FILE in names and "state.json" not in names and os.path.basename(old_seen) not in names

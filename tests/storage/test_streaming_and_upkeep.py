"""Issue 11 items 5-8: the timeline read from the end, commands that stream and leave a checkpoint,
the cache rebuilt after a hook's answer, the daily scrub and its chain-broken marker."""
import json
import os
import shutil
import time

import pytest

from helpers.big_ledger import append_observations
from helpers.cache_files import edit_shard
from helpers.cli_runner import make_cli
from helpers.dist import requires_dist
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.hook import context as hook_context
from intent_loop.hook import handlers
from intent_loop.hook.runtime import FAIL_OPEN, run_hook
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading
from intent_loop.storage.cache import cache_upkeep, chain_marker, checkpoint
from intent_loop.storage.paths import project_paths, session_hash
from intent_loop.storage.transaction import Transaction


@pytest.fixture
def cli(tmp_path, monkeypatch):
    runner = make_cli(tmp_path)
    monkeypatch.setenv("HOME", runner.env["HOME"])
    return runner


def _task_with(cli, observations, *, session="sess-1"):
    task = cli.json("claim", "add", "goal", "ship", "the", "parser")["task_id"]
    project = cli.project()
    if observations:
        append_observations(project, task_id=task, count=observations, session_hash=session_hash(session))
    return project, task


def _state_file(project):
    return os.path.join(project.cache_dir, checkpoint.STATE_FILE)


def _drop_cache(project):
    shutil.rmtree(project.cache_dir)


# -- timeline --------------------------------------------------------------------------------------
def test_timeline_shows_the_newest_fifty_by_default_and_all_with_all(cli):
    project, _task = _task_with(cli, 120)
    everything = cli.json("timeline", "--all")["events"]
    assert len(everything) == 122  # task_started + contract_published + 120 observations
    newest = cli.json("timeline")["events"]
    assert newest == everything[-50:]
    assert cli.json("timeline", "--limit", "3")["events"] == everything[-3:]
    assert cli.json("timeline", "--limit", "1000")["events"] == everything
    assert cli.json("timeline", "--limit", "0")["events"] == []
    assert [e["event_type"] for e in cli.json("timeline", "--type", "task_started")["events"]] == ["task_started"]
    rc, out, _ = cli("timeline", "--limit", "-1")
    assert rc == 2


def test_timeline_json_keeps_its_document_shape_and_jsonl_prints_one_object_a_line(cli):
    project, _task = _task_with(cli, 4)
    rc, out, _ = cli("timeline", "--json")
    doc = json.loads(out)
    assert rc == 0 and set(doc) == {"events", "project_id"} and doc["project_id"] == project.project_id
    rc, streamed, _ = cli("timeline", "--all", "--json")
    assert streamed == out  # the streamed document is byte for byte the one printed at once
    assert out == json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    rc, lines, _ = cli("timeline", "--jsonl")
    assert [json.loads(line) for line in lines.splitlines()] == doc["events"]
    rc, none, _ = cli("timeline", "--all", "--json", "--type", "contract_version_floor")  # a type with no events
    assert json.loads(none) == {"events": [], "project_id": project.project_id}
    rc, out, _err = cli("timeline", "--all", "--json", "--type", "nothing")  # a typo is told, not matched by nothing
    error = json.loads(out)["error"]
    assert rc == 2 and error["code"] == "INVALID_ARGUMENT" and "claim_added" in error["message"]
    rc, out, _err = cli("timeline", "--json", "--jsonl")
    assert rc == 2 and json.loads(out)["error"]["code"] == "INVALID_ARGUMENT"


def test_timeline_without_a_checkpoint_verifies_in_full_and_leaves_one(cli):
    project, _task = _task_with(cli, 10)
    _drop_cache(project)
    assert len(cli.json("timeline")["events"]) == 12
    assert os.path.exists(_state_file(project))


def test_timeline_refuses_a_shown_line_that_does_not_chain_to_the_checkpoint(cli):
    project, _task = _task_with(cli, 10)
    cli.json("timeline")  # the checkpoint is current
    with open(project.ledger, "rb") as fh:
        lines = fh.read().split(b"\n")
    forged = json.loads(lines[-3])
    forged["payload"]["char_count"] = 999999  # re-hashed, so the line verifies alone, but breaks the chain
    from intent_loop.storage.sealing import chain
    _event, resealed = chain(forged, prev_hash=forged["prev_hash"])
    lines[-3] = resealed[:-1]
    with open(project.ledger, "r+b") as fh:  # same inode and size class: only the chain can tell
        fh.write(b"\n".join(lines))
    rc, out, _ = cli("timeline", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "LEDGER_CHAIN_BROKEN"


def test_reading_lines_backwards_across_chunks_equals_reading_forwards(tmp_path):
    from intent_loop.cli.timeline import _lines_backwards

    data = b"".join(b"x" * (n % 37) + b"\n" for n in range(300))
    path = tmp_path / "f"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for chunk in (1, 5, 64, 1 << 16):
            got = list(_lines_backwards(fd, len(data), chunk=chunk))
            offsets = [0] + [i + 1 for i, b in enumerate(data) if b == 10][:-1]
            assert got == list(reversed([(o, data[o:data.index(b"\n", o)]) for o in offsets])), chunk
    finally:
        os.close(fd)


# -- full verification leaves a checkpoint -------------------------------------------------------
@pytest.mark.parametrize("argv", [["verify"], ["doctor"], ["timeline", "--all"], ["status"], ["export"]])
def test_read_only_commands_that_verify_leave_a_fresh_checkpoint(cli, argv):
    project, _task = _task_with(cli, 5)
    _drop_cache(project)
    cli(*argv)
    cached = checkpoint.load(project, REDUCER)
    assert cached is not None and cached.verified.count == 7
    assert cached.verified.state == reading.verify_all(project, REDUCER).state


# -- the self-healing cache ------------------------------------------------------------------------
def test_a_hook_read_with_too_much_unverified_ledger_fails_with_cache_rebuilding(cli, monkeypatch):
    project, _task = _task_with(cli, 200)
    _drop_cache(project)
    size = os.path.getsize(project.ledger)
    with pytest.raises(IntentLoopError) as caught:
        reading.load_verified(project, REDUCER, max_unverified=size - 1)
    assert caught.value.code == ErrorCode.CACHE_REBUILDING
    assert reading.load_verified(project, REDUCER, max_unverified=size).count == 202


def _session_start(cli, session="sess-1"):
    payload = {"hook_event_name": "SessionStart", "session_id": session, "cwd": cli.workspace,
               "source": "resume", "transcript_path": None, "model": "m"}
    read, write = os.pipe()
    os.write(write, json.dumps(payload).encode())
    os.close(write)
    out_r, out_w = os.pipe()
    run_hook("SessionStart", handlers.session_start, stdin_fd=read, stdout_fd=out_w, env=cli.env)
    os.close(out_w)
    os.close(read)
    answer = os.read(out_r, 1 << 20)
    os.close(out_r)
    return answer


def test_a_hook_answers_fail_open_and_rebuilds_then_the_next_one_injects(cli, monkeypatch):
    project, task = _task_with(cli, 0)
    from intent_loop.storage.ledger import Draft
    with Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        tx.append([Draft("session_linked", task, "system", {"host_session_hash": session_hash("sess-1"),
                                                             "action": "attach"})],
                  request_id="link-1", fingerprint="f")
    append_observations(project, task_id=task, count=300, session_hash=session_hash("sess-1"))
    _drop_cache(project)
    monkeypatch.setattr(hook_context, "REBUILD_THRESHOLD", 1000)
    assert _session_start(cli) == FAIL_OPEN  # answered at once, the rebuild ran after the answer
    assert os.path.exists(_state_file(project))
    assert checkpoint.load(project, REDUCER).verified.count == 303
    assert b"ship the parser" in _session_start(cli)
    assert not os.path.exists(os.path.join(cli.env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl"))


def test_one_rebuild_at_a_time_per_project(cli):
    project, _task = _task_with(cli, 3)
    _drop_cache(project)
    os.mkdir(project.cache_dir)
    fd = os.open(os.path.join(project.cache_dir, cache_upkeep.REBUILD_LOCK), os.O_RDONLY | os.O_CREAT)
    import fcntl
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert cache_upkeep.rebuild(project, REDUCER) == "busy"
        assert not os.path.exists(_state_file(project))
    finally:
        os.close(fd)
    assert cache_upkeep.rebuild(project, REDUCER) == "rebuilt"
    assert checkpoint.load(project, REDUCER).verified.count == 5


def test_a_rebuild_continues_from_a_checkpoint_that_still_matches(cli, monkeypatch):
    project, task = _task_with(cli, 3)
    assert reading.load_verified(project, REDUCER).count == 5  # the checkpoint covers 5 lines
    append_observations(project, task_id=task, count=4, session_hash=session_hash("s"), start=3)
    seen = []
    real = cache_upkeep.fold_stream
    monkeypatch.setattr(cache_upkeep, "fold_stream", lambda fd, v, *a, **k: seen.append(v.count) or real(fd, v, *a,
                                                                                                           **k))
    assert cache_upkeep.rebuild(project, REDUCER) == "rebuilt"
    assert seen == [5] and checkpoint.load(project, REDUCER).verified.count == 9


def test_a_mutation_does_not_wait_for_a_rebuild(cli):
    project, _task = _task_with(cli, 3)
    fd = os.open(os.path.join(project.cache_dir, cache_upkeep.REBUILD_LOCK), os.O_RDONLY | os.O_CREAT)
    import fcntl
    fcntl.flock(fd, fcntl.LOCK_EX)  # a rebuild or scrub is running
    try:
        started = time.monotonic()
        cli.json("claim", "add", "must", "keep", "going")
        assert time.monotonic() - started < 5
    finally:
        os.close(fd)


# -- the daily scrub -------------------------------------------------------------------------------
def test_the_scrub_is_due_once_a_day(cli):
    project, _task = _task_with(cli, 2)
    assert cache_upkeep.scrub_due(project)
    assert cache_upkeep.scrub(project, REDUCER, report=pytest.fail) == "ok"
    assert not cache_upkeep.scrub_due(project)
    assert cache_upkeep.scrub_due(project, now=time.time() + cache_upkeep.SCRUB_INTERVAL + 1)




def test_a_scrub_that_finds_the_cache_different_rebuilds_it_and_reports_cache_mismatch(cli):
    project, task = _task_with(cli, 2)
    claim = next(iter(reading.load_verified(project, REDUCER).state["tasks"][task]["claims"]))

    def forge(data):
        data["claims"][claim][0] = "invalidated"  # [state, seq, ended_by, pointer]

    edit_shard(project, "t-" + task, forge)
    assert reading.load_verified(project, REDUCER).state["tasks"][task]["claims"][claim]["state"] \
        == "invalidated"  # lifecycle in the cache is believed until the scrub runs
    reports = []
    assert cache_upkeep.scrub(project, REDUCER, report=reports.append) == "rebuilt"
    assert [r.code for r in reports] == [ErrorCode.CACHE_MISMATCH]
    record = reading.load_verified(project, REDUCER).state["tasks"][task]["claims"][claim]
    assert record["state"] == "active" and record["claim"]["statement"] == "ship the parser"


def _break_middle_line(project, index=2):
    with open(project.ledger, "rb") as fh:
        lines = fh.read().split(b"\n")
    assert b'"char_count":0,' in lines[index]
    lines[index] = lines[index].replace(b'"char_count":0,', b'"char_count":1,', 1)  # same size
    with open(project.ledger, "r+b") as fh:
        fh.write(b"\n".join(lines))


def test_a_broken_chain_found_by_the_scrub_stops_reads_and_writes_until_recover(cli):
    project, _task = _task_with(cli, 6)
    reading.load_verified(project, REDUCER)
    st = os.stat(project.ledger)
    _break_middle_line(project)
    os.utime(project.ledger, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert reading.load_verified(project, REDUCER).count == 8  # the checkpoint hides the damage
    reports = []
    assert cache_upkeep.scrub(project, REDUCER, report=reports.append) == "broken"
    assert [(r.code, r.line) for r in reports] == [(ErrorCode.CHAIN_BROKEN_FOUND, 3)]
    assert not os.path.exists(_state_file(project)) and os.path.exists(chain_marker.marker_path(project))
    with pytest.raises(IntentLoopError) as caught:
        reading.load_verified(project, REDUCER)
    assert caught.value.code == ErrorCode.CHAIN_BROKEN_FOUND and caught.value.line == 3
    rc, out, _ = cli("claim", "add", "must", "never", "land", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "CHAIN_BROKEN_FOUND"
    assert cache_upkeep.rebuild(project, REDUCER) == "marked"
    result = cli.json("recover", "--apply")
    assert result["applied"] and result["verified_lines"] == 2
    assert not os.path.exists(chain_marker.marker_path(project))
    assert reading.load_verified(project, REDUCER).count == 2


def test_the_after_answer_child_runs_the_scrub_and_doctor_shows_its_code(cli):
    from intent_loop.hook import deferred
    from intent_loop.hook.runtime import log_failure
    project, task = _task_with(cli, 2)

    def forge(data):
        data["mode"] = "off"  # lifecycle: the only kind of edit format 2 believes until the scrub

    edit_shard(project, "t-" + task, forge)
    deferred.upkeep(project, report=lambda exc: log_failure(cli.env, "Stop", "scrub", exc))
    log = os.path.join(cli.env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl")
    records = [json.loads(line) for line in open(log)]
    assert [(r["where"], r["code"]) for r in records] == [("scrub", "CACHE_MISMATCH")]
    deferred.upkeep(project, report=lambda exc: log_failure(cli.env, "Stop", "scrub", exc))  # not due again today
    assert len(open(log).readlines()) == 1
    doctor = cli.json("doctor", expect=1)
    failures = next(c for c in doctor["checks"] if c["name"] == "hook_failures")
    assert not failures["ok"] and "CACHE_MISMATCH" in failures["detail"]


def test_a_checkpoint_of_a_ledger_replaced_meanwhile_is_not_left_behind(cli, monkeypatch):
    project, _task = _task_with(cli, 2)
    _drop_cache(project)
    real_save = checkpoint.save

    def save_then_replace(paths, reducer, verified, st):
        real_save(paths, reducer, verified, st)
        shutil.copy(project.ledger, project.ledger + ".new")
        os.replace(project.ledger + ".new", project.ledger)  # a deletion rewrote it meanwhile

    monkeypatch.setattr(checkpoint, "save", save_then_replace)
    assert cache_upkeep.rebuild(project, REDUCER) == "rebuilt"
    assert not os.path.exists(_state_file(project))


# -- import: nesting orjson and the stdlib cannot parse --------------------------------------------
def test_an_import_nested_too_deeply_is_import_invalid(cli, tmp_path):
    graph = tmp_path / "deep.json"
    graph.write_bytes(b'{"format":"intent-loop-graph","claims":' + b"[" * 200000 + b"]" * 200000 + b"}")
    rc, out, _ = cli("import", str(graph), "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "IMPORT_INVALID"


# -- through the built binaries at 100,000 events ----------------------------------------------------
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(REPO, "dist")


def _binary(event, payload, env):
    import subprocess

    from helpers.settle import settle
    from intent_loop.launch.binaries import BINARY_FOR_EVENT
    proc = subprocess.run([os.path.join(DIST, BINARY_FOR_EVENT[event])], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    settle(env["INTENT_LOOP_DATA_DIR"], payload["cwd"], timeout=60)  # the after-answer child, rebuild included
    return json.loads(proc.stdout)


@requires_dist
def test_at_100k_events_the_second_session_start_after_deleting_the_cache_injects_the_full_view(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    base = {"session_id": "sess-1", "cwd": str(ws), "transcript_path": None, "model": "gpt-5"}
    _binary("UserPromptSubmit", dict(base, hook_event_name="UserPromptSubmit", turn_id="t1",
                                     prompt="intent: goal remember the login loop"), env)
    project = project_paths(env["INTENT_LOOP_DATA_DIR"], str(ws))
    task = reading.load_verified(project, REDUCER).state["sessions"][session_hash("sess-1")]
    append_observations(project, task_id=task, count=100_000, session_hash=session_hash("sess-1"))
    assert os.path.getsize(project.ledger) > 4 << 20
    _drop_cache(project)
    start = dict(base, hook_event_name="SessionStart", source="resume")
    assert _binary("SessionStart", start, env) == {"continue": True}  # fail-open: no verification in the hook
    cached = checkpoint.load(project, REDUCER)  # the after-answer child rebuilt it
    assert cached is not None and cached.verified.count == reading.verify_all(project, REDUCER).count
    answer = _binary("SessionStart", start, env)
    assert "remember the login loop" in answer["hookSpecificOutput"]["additionalContext"]
    assert not os.path.exists(os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl"))


# -- deletion streams ------------------------------------------------------------------------------
def test_deletion_keeps_a_last_line_that_lacked_its_lf(cli):
    project, task = _task_with(cli, 0)
    state = reading.load_verified(project, REDUCER).state
    goal = next(iter(state["tasks"][task]["claims"]))  # "ship the parser", the only claim
    append_observations(project, task_id=task, count=3, session_hash=session_hash("s"))
    with open(project.ledger, "rb+") as fh:  # an editor saved it without the final newline
        fh.truncate(os.path.getsize(project.ledger) - 1)
    before = reading.verify_all(project, REDUCER)
    assert before.missing_lf
    result = cli.json("delete", "claim", goal, "--confirm", f"DELETE CLAIM {goal}")
    after = reading.verify_all(project, REDUCER)
    assert result["events_after"] == after.count and not after.missing_lf
    assert after.state["tasks"][task]["observations"]["result_signal_observed"] == 1  # the last line survived
    assert goal not in after.state["tasks"][task]["claims"]


def test_deletion_reads_the_ledger_in_chunks(cli, monkeypatch):
    from intent_loop.storage.cache import bulk_verify
    project, task = _task_with(cli, 300)
    reads = []
    real = bulk_verify.fast_os.pread
    monkeypatch.setattr(bulk_verify, "CHUNK", 4096)
    monkeypatch.setattr(bulk_verify.fast_os, "pread", lambda fd, n, at: reads.append(n) or real(fd, n, at))
    state = reading.load_verified(project, REDUCER).state
    goal = next(iter(state["tasks"][task]["claims"]))
    cli.json("delete", "claim", goal, "--confirm", f"DELETE CLAIM {goal}")
    assert reads and max(reads) <= 4096 < os.path.getsize(project.ledger)
    after = reading.verify_all(project, REDUCER)
    assert after.count == 302 and goal not in after.state["tasks"][task]["claims"]  # it was an initial claim


@pytest.mark.parametrize("actor", ["user", "agent", "evidence", "system"])
def test_the_rewrites_one_pass_chaining_equals_sealing_chain(actor):
    from intent_loop.ops.ledger_rewrite import chain_once
    from intent_loop.storage.sealing import chain
    event = {"schema_version": 1, "event_id": "12345678-1234-4234-8234-123456789abc", "event_type": "claim_added",
             "project_id": "p" * 64, "task_id": None, "occurred_at": "2026-01-01T00:00:00.000Z", "actor": actor,
             "request_id": "r", "payload": {"text": "é😀\n\"", "n": 1e-05, "big": 2**70}, "prev_hash": None,
             "event_hash": "0" * 64}
    for prev in (None, "a" * 64):
        sealed, line = chain(event, prev_hash=prev)
        assert chain_once(event, prev) == (sealed["event_hash"], line)


def test_the_deletion_scan_finds_a_needle_across_chunk_boundaries(tmp_path):
    from intent_loop.ops.derived_copies import _needles_in
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10 + b"NEEDLE" + b"y" * 10)
    for chunk in (1, 3, 7, 13, 1 << 20):
        assert _needles_in(str(path), [b"NEEDLE", b"absent"], chunk=chunk) == {b"NEEDLE"}, chunk
    assert _needles_in(str(tmp_path), [b"x"]) is None


def test_a_command_prompt_during_a_rebuild_writes_nothing_and_says_so(cli, monkeypatch):
    project, task = _task_with(cli, 300)
    _drop_cache(project)
    before = os.path.getsize(project.ledger)
    monkeypatch.setattr(hook_context, "REBUILD_THRESHOLD", 1000)
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": "sess-9", "cwd": cli.workspace,
               "turn_id": "t1", "prompt": "intent: must keep the tests green", "transcript_path": None}
    read, write = os.pipe()
    os.write(write, json.dumps(payload).encode())
    os.close(write)
    out_r, out_w = os.pipe()
    run_hook("UserPromptSubmit", handlers.user_prompt_submit, stdin_fd=read, stdout_fd=out_w, env=cli.env)
    os.close(out_w)
    os.close(read)
    answer = json.loads(os.read(out_r, 1 << 20))
    os.close(out_r)
    assert "CACHE_REBUILDING" in answer["systemMessage"]
    assert "hookSpecificOutput" not in answer or \
        answer["hookSpecificOutput"]["additionalContext"] == answer["systemMessage"]  # no view, only the line
    assert os.path.getsize(project.ledger) == before  # nothing written
    assert checkpoint.load(project, REDUCER).verified.count == 302  # rebuilt after the answer
    assert not os.path.exists(os.path.join(cli.env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl"))


def test_doctor_re_derives_the_state_and_names_a_cache_that_differs(cli):
    """Issue 12 item 1: verify and doctor once said OK over a forged cache. doctor now re-derives
    the state, names the difference (CACHE_MISMATCH) and rebuilds the cache from the ledger."""
    project, task = _task_with(cli, 2)
    claim = next(iter(reading.load_verified(project, REDUCER).state["tasks"][task]["claims"]))

    def forge(data):
        data["claims"][claim][0] = "invalidated"

    edit_shard(project, "t-" + task, forge)
    report = cli.json("doctor", expect=1)
    cache = next(c for c in report["checks"] if c["name"] == "cache")
    assert not cache["ok"] and "CACHE_MISMATCH" in cache["detail"]
    assert reading.load_verified(project, REDUCER).state["tasks"][task]["claims"][claim]["state"] == "active"
    _rc, out, _err = cli("doctor", "--json")  # rebuilt: the next doctor finds them equal
    cache = next(c for c in json.loads(out)["checks"] if c["name"] == "cache")
    assert cache["ok"]

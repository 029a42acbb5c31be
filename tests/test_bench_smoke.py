"""The benchmark scripts keep running: tiny `--quick` runs print their tables (timings are never
asserted: speed is measured by the benchmarks themselves), and the history generator writes
exactly the events it was asked for, in the shape the production verifier and reducer accept."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from intent_loop.base.canonical import loads
from intent_loop.intent.state import REDUCER
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "tests" / "bench"
DIST = ROOT / "dist"


def run_script(name, *args, tmp_path):
    env = dict(os.environ, BENCH_TMP=str(tmp_path))
    proc = subprocess.run([sys.executable, str(BENCH / name), *args], capture_output=True, text=True, env=env,
                          timeout=180)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def test_history_writes_exactly_the_events_asked_for(tmp_path):
    out = run_script("history.py", "--events", "240", "--out", str(tmp_path / "h"), "--session", "s-1",
                     tmp_path=tmp_path)
    assert "history: 240 events" in out
    paths = paths_mod.project_paths(str(tmp_path / "h" / "root"), str(tmp_path / "h" / "ws"))
    verified = reading.verify_all(paths, REDUCER)
    assert verified.count == 240 and verified.torn_tail == 0
    state = verified.state
    newest = state["last_change"]["task_id"]
    assert state["sessions"][paths_mod.session_hash("s-1")] == newest  # the bench's session is linked
    kinds = {}
    with open(paths.ledger, "rb") as fh:
        for line in fh:
            event_type = loads(line.decode())["event_type"]
            kinds[event_type] = kinds.get(event_type, 0) + 1
    # a turn is a prompt observation and a Stop signal; every 10th Stop publishes a version
    assert kinds["result_signal_observed"] >= 10 and kinds["source_observed"] >= kinds["result_signal_observed"]
    assert kinds["contract_published"] >= kinds["result_signal_observed"] // 10
    assert {"task_started", "claim_added", "session_linked"} <= set(kinds)


def test_bench_cache_quick_prints_its_figures(tmp_path):
    out = run_script("bench_cache.py", "--quick", tmp_path=tmp_path)
    assert "cache root: v3.root" in out and "hook read path:" in out and "written to cache/" in out


def test_history_refuses_fewer_events_than_a_task_start(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH / "history.py"), "--events", "2", "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "at least 3" in proc.stderr


def test_bench_ledger_quick_prints_its_tables(tmp_path):
    out = run_script("bench_ledger.py", "--quick", tmp_path=tmp_path)
    assert "== appends, run 1: project reducer" in out
    assert "target: fresh append p95 at 200 events / at 10 events" in out
    assert "target: bytes written per fresh append" in out
    for command in ("verify", "bare streaming loop", "timeline (default)", "export", "import", "delete claim",
                    "doctor"):
        assert f"\n{command}" in out
    assert "FAILED" not in out
    assert "target: verify / bare streaming loop" in out and "target: default timeline" in out


def test_bench_commands_run_the_pinned_orjson_not_the_base_interpreters():
    """The measured commands run the venv's base interpreter (measure.PYTHON), whose own
    site-packages may hold no orjson (pyenv's 3.12 and 3.13) or another one (3.11's global): they
    must import the pinned one, or the bare loop fails and verify silently measures stdlib JSON."""
    from tests.bench import bench_commands, measure

    code = bench_commands.PATHS + "import orjson; print(orjson.__file__)"
    proc = subprocess.run([bench_commands.PYTHON, "-I", "-c", code, bench_commands.WITH_PINNED],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert Path(proc.stdout.strip()).is_relative_to(measure.PINNED_PACKAGES)


@pytest.mark.skipif(not (DIST / "intent-loop-user-prompt").exists(), reason="dist/ is not built")
def test_bench_hooks_quick_prints_its_targets(tmp_path):
    out = run_script("bench_hooks.py", "--quick", tmp_path=tmp_path)
    assert "-- targets, run 1" in out
    for path in ("prompt with two commands", "prompt without commands (until written)",
                 "Stop that publishes (until written)"):
        assert f"\n{path} " in out
    assert "first run (extraction)" in out


def test_history_writes_the_request_count_marker(tmp_path):
    """Issue 11's all-or-nothing marker: the first event of every generated request states how
    many events the request has (and no other event carries it), as appends write it."""
    from tests.bench import history

    (tmp_path / "ws").mkdir()
    paths = paths_mod.project_paths(str(tmp_path / "root"), str(tmp_path / "ws"))
    data, count = history.generate(paths, 300)
    events = [loads(line) for line in data.decode().splitlines()]
    assert count == len(events) == 300
    sizes, firsts = {}, {}
    for event in events:
        sizes[event["request_id"]] = sizes.get(event["request_id"], 0) + 1
        firsts.setdefault(event["request_id"], event["event_id"])
    for event in events:
        marker = event["payload"].get("request_event_count")
        if event["event_id"] == firsts[event["request_id"]]:
            assert marker == sizes[event["request_id"]]
        else:
            assert marker is None
    assert max(sizes.values()) == 3  # task start / claim prompts: claim, observation, publication


def test_import_cost_prints_each_hook_paths_modules_as_the_pinned_test_counts_them(tmp_path):
    from helpers.hook_paths import PATH_MODULES

    out = run_script("import_cost.py", "--runs", "1", tmp_path=tmp_path)
    rows = {line.split("|")[0].strip(): int(line.split("|")[1]) for line in out.splitlines()[1:] if "|" in line}
    assert rows == PATH_MODULES  # one count, two readers: the bench and the pin

"""Hook start-up benchmark: each built hook binary against `python3 -I -S -c pass`, interleaved.

Prints, per realistic path and ledger size, the median and p95 of the hook as ratios to the
floor measured in the same run, and the same for an empty `node -e ''`, plus the first-run
extraction cost. Run with `python3 build.py bench` (it builds dist/ first).
"""
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib"))

from intent_loop.intent import state, tasks
from intent_loop.storage import ledger, pending_work, sealing, timestamps, transaction
from intent_loop.storage.paths import (
    project_paths,  # noqa: E402
    session_hash,  # noqa: E402
)

DIST = ROOT / "dist"
PYTHON = os.path.realpath(sys.executable)
SESSION = "01a22b43-73c0-7793-8e50-f1583941ed4b"
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "40"))


def seed(data_root, workspace, events):
    """A project whose session is linked to a task with claims, grown to `events` ledger events the
    way real sessions grow it: per turn one prompt observation and one Stop signal, each its own
    request, with Codex's 36-character turn ids (about 800 bytes a line)."""
    paths = project_paths(str(data_root), str(workspace))
    session = session_hash(SESSION)
    with transaction.Transaction(paths, state.REDUCER, deadline=time.monotonic() + 120) as tx:
        plan = tasks.Plan(tx.state, now=timestamps.format_utc(time.time()))
        claims = [tasks.user_claim(plan, statement=s, facets=[f], scope="task",
                                   source_ref={"kind": "user_event", "event_id": _turn_id(0)})
                  for s, f in (("Fix the login redirect loop", "outcome"),
                               ("must not: action:install_local", "hard_constraint"))]
        tasks.start_task(plan, task_id=ledger.new_uuid4(), session_hash=session, initial_claims=claims)
        tx.append(plan.drafts, request_id="prompt:" + "0" * 64, fingerprint="0" * 64)
        task_id = tx.state["sessions"][session]
        prev, lines = tx.verified.last_hash, []
        for i in range(events - tx.verified.count):
            turn = _turn_id(i + 1)
            kind, event_type, actor = (("user_event", "source_observed", "user") if i % 2 == 0
                                       else ("agent_turn", "result_signal_observed", "agent"))
            draft = ledger.Draft(event_type, task_id, actor, {
                "host_session_hash": session, "source": {"kind": kind, "event_id": turn}, "char_count": 120,
                "request_fingerprint": "0" * 64})
            request_id = ("prompt:" if actor == "user" else "stop:") + hashlib.sha256(turn.encode()).hexdigest()
            event, line = sealing.seal(draft, project_id=paths.project_id, request_id=request_id, prev_hash=prev,
                                       occurred_at=timestamps.format_utc(time.time()))
            prev = event["event_hash"]
            lines.append(line)
        tx.replace_ledger(tx.data + b"".join(lines), expect_count=events)
    return paths


def _turn_id(i):
    """A Codex-style turn id (UUIDv7 layout, 36 characters)."""
    raw = hashlib.sha256(f"turn-{i}".encode()).hexdigest()
    return f"{raw[:8]}-{raw[8:12]}-7{raw[13:16]}-a{raw[17:20]}-{raw[20:32]}"


def payload(event, workspace, counter, **extra):
    base = {"session_id": SESSION, "transcript_path": None, "cwd": str(workspace), "hook_event_name": event,
            "model": "mock-model", "permission_mode": "default", "turn_id": _turn_id(10**6 + counter)}
    base.update(extra)
    return json.dumps(base).encode()


def timed(cmd, data, env, *, is_hook=True):
    start = time.perf_counter()
    proc = subprocess.run(cmd, input=data, stdout=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if is_hook and (proc.returncode != 0 or not proc.stdout.startswith(b'{"continue":true')):
        raise SystemExit(f"bench: {cmd[0]} answered {proc.stdout[:200]!r} (exit {proc.returncode})")
    return elapsed


def stats(samples):
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(round(0.95 * len(ordered))) - 1)]


def run_case(name, binary, make_payload, env, paths=None, *, detaches=False, before_round=None):
    """Interleave the floor, the hook and node. The hook's time is what Codex waits for (its
    process); the write a hook detaches (`detaches`) is waited for after each run, untimed for the
    hook, and reported as "until written". `before_round` runs untimed before every hook run."""
    timed([str(binary)], make_payload(-1), env)  # warm: the first run of a data root extracts
    if paths is not None:
        pending_work.wait_idle(paths, timeout=30)
    floor, hook, landed, node = [], [], [], []
    for i in range(ROUNDS):
        if before_round is not None:
            before_round()
        floor.append(timed([PYTHON, "-I", "-S", "-c", "pass"], b"", env, is_hook=False))
        start = time.perf_counter()
        hook.append(timed([str(binary)], make_payload(i), env))
        if paths is not None:  # as between two prompts a person types: the write lands first
            assert pending_work.wait_idle(paths, timeout=30), "detached hook work did not finish"
            landed.append(time.perf_counter() - start)
        if shutil.which("node"):
            start = time.perf_counter()
            subprocess.run(["node", "-e", ""], env=env)
            node.append(time.perf_counter() - start)
    fm, fp = stats(floor)
    hm, hp = stats(hook)
    line = f"{name:<44} hook {hm / fm:5.2f}x / {hp / fp:5.2f}x"
    if node:
        nm, np_ = stats(node)
        line += f"   node {nm / fm:5.2f}x / {np_ / fp:5.2f}x   hook/node p95 {hp / np_:4.2f}"
    if detaches:
        lm, lp = stats(landed)
        line += f"   until written {lm / fm:5.2f}x / {lp / fp:5.2f}x"
    print(line + f"   (floor {fm * 1e3:.1f} / {fp * 1e3:.1f} ms)", flush=True)


def first_run_cost(env, workspace):
    """Extraction on first use: a fresh runtime directory each time, against the warm run."""
    cold, warm, floor = [], [], []
    binary = DIST / "intent-loop-stop"
    for i in range(8):
        root = tempfile.mkdtemp(prefix="il-bench-cold-")
        cold_env = dict(env, INTENT_LOOP_DATA_DIR=root)
        floor.append(timed([PYTHON, "-I", "-S", "-c", "pass"], b"", cold_env, is_hook=False))
        cold.append(timed([str(binary)], payload("Stop", workspace, i), cold_env))
        warm.append(timed([str(binary)], payload("Stop", workspace, i), cold_env))
        shutil.rmtree(root, ignore_errors=True)
    fm = statistics.median(floor)
    print(f"{'first run (extraction) vs floor':<44} cold {statistics.median(cold) / fm:5.2f}x   "
          f"warm {statistics.median(warm) / fm:5.2f}x")


class Snapshot:
    """The seeded project (and the workspace's Guard directory), restored before each round of a
    case that changes what it measures: every "prompt with two commands" then meets the seeded
    task (2 claims), not one grown by the previous rounds, and every "Stop that publishes" really
    publishes a new contract version."""

    def __init__(self, paths, workspace, tmp):
        self.paths, self.guard_dir = paths, Path(workspace, ".execution-fidelity")
        with transaction.Transaction(paths, state.REDUCER, deadline=time.monotonic() + 60) as tx:
            tx.find_request("bench-index-warmup")  # cache/requests.idx complete, as hooks keep it
        self.copy = Path(tmp, f"snapshot-{paths.project_id[:8]}-{len(os.listdir(tmp))}")
        shutil.copytree(paths.dir, self.copy / "project")
        if self.guard_dir.exists():
            shutil.copytree(self.guard_dir, self.copy / "guard")

    def restore(self):
        assert pending_work.wait_idle(self.paths, timeout=30)
        shutil.rmtree(self.paths.dir)
        shutil.copytree(self.copy / "project", self.paths.dir)
        shutil.rmtree(self.guard_dir, ignore_errors=True)
        if (self.copy / "guard").exists():
            shutil.copytree(self.copy / "guard", self.guard_dir)
        ledger.load_verified(self.paths, state.REDUCER)  # the copy has new inodes: re-seal the cache
        os.sync()  # the copy's writeback must not compete with the measured hook's fsyncs


def main():
    for name in ("intent-loop-session-start", "intent-loop-user-prompt", "intent-loop-stop"):
        if not (DIST / name).exists():
            raise SystemExit("bench: build dist/ first (python3 build.py)")
    print(f"{ROUNDS} interleaved rounds; ratios are median / p95 against `{PYTHON} -I -S -c pass`")
    with tempfile.TemporaryDirectory(prefix="il-bench-") as tmp:
        workspace = Path(tmp, "ws")
        workspace.mkdir()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
        unlinked_env = dict(env, INTENT_LOOP_DATA_DIR=str(Path(tmp, "empty-root")))
        run_case("prompt, no commands, no linked task", DIST / "intent-loop-user-prompt",
                 lambda i: payload("UserPromptSubmit", workspace, i, prompt="please fix the tests"), unlinked_env)
        for size in (1000, 10000):
            root = Path(tmp, f"root-{size}")
            paths = seed(root, workspace, size)
            snapshot = Snapshot(paths, workspace, tmp)
            print(f"[{size:>5} events] ledger {os.path.getsize(paths.ledger) / 1e6:.1f} MB", flush=True)
            env_n = dict(env, INTENT_LOOP_DATA_DIR=str(root))
            run_case(f"[{size:>5} events] SessionStart resume", DIST / "intent-loop-session-start",
                     lambda i: payload("SessionStart", workspace, i, source="resume"), env_n, paths)
            run_case(f"[{size:>5} events] prompt without commands", DIST / "intent-loop-user-prompt",
                     lambda i: payload("UserPromptSubmit", workspace, i, prompt=f"keep going {i}"), env_n, paths,
                     detaches=True)
            run_case(f"[{size:>5} events] prompt with two commands", DIST / "intent-loop-user-prompt",
                     lambda i: payload("UserPromptSubmit", workspace, i,
                                       prompt=f"intent: must keep API {i}\nintent: include src/mod{i}/"), env_n, paths,
                     before_round=snapshot.restore)
            run_case(f"[{size:>5} events] Stop that publishes", DIST / "intent-loop-stop",
                     lambda i: payload("Stop", workspace, i, stop_hook_active=False, last_assistant_message="Done."),
                     env_n, paths, detaches=True, before_round=snapshot.restore)
        first_run_cost(env, workspace)


if __name__ == "__main__":
    main()

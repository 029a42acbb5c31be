"""MCP server benchmark: dist/intent-loop-mcp's time to answer `tools/list`, and a write call's latency.

Prints, as ratios to `python3 -I -S -c pass` measured in the same run (interleaved):
- the first `tools/list` of a fresh build (the runtime extracted by that very start), which must
  come inside Codex's ~1 s start-up grace for an optional server (docs/mcp.md);
- `tools/list` once extracted: start, initialize, tools/list (median and p95; the budget is 2.5x);
- `intent_add_evidence` in-process on a project of 10,000 ledger events (median and p95).
Run with `python3 build.py bench` (it builds dist/ first) or alone after a build.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "lib"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_hooks import SESSION, seed  # noqa: E402

BINARY = ROOT / "dist" / "intent-loop-mcp"
PYTHON = os.path.realpath(sys.executable)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "40"))
HANDSHAKE = (b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
             b'"capabilities":{"experimental":{"codex/auth-change":{}}},"clientInfo":{"name":"codex-mcp-client",'
             b'"version":"0.169.0"}}}\n{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
             b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":0}}}\n')


def floor():
    start = time.perf_counter()
    subprocess.run([PYTHON, "-I", "-S", "-c", "pass"], check=True)
    return time.perf_counter() - start


def tools_list(env):
    """Seconds from spawning the server to reading its tools/list reply (as Codex waits for it)."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(BINARY)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    proc.stdin.write(HANDSHAKE)
    proc.stdin.flush()
    for _ in range(2):  # the initialize reply, then the tools/list reply
        line = proc.stdout.readline()
        assert line.startswith(b'{"id":'), line
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(timeout=10)
    proc.stdout.close()
    return elapsed


def quantiles(samples):
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def write_latency(tmp, rounds):
    """intent_add_evidence through the server's own dispatch (no process start) at 10,000 events."""
    from intent_loop.mcp.tools import Tools

    data_root, workspace = Path(tmp) / "write-data", Path(tmp) / "write-ws"
    workspace.mkdir()
    seed(data_root, workspace, 10_000)
    tools = Tools(env={"INTENT_LOOP_DATA_DIR": str(data_root)}, executable=None, ask_roots=lambda: None)
    samples = []
    for n in range(rounds):
        meta = {"threadId": SESSION, "callId": f"bench-{n}", "x-codex-turn-metadata": {"turn_id": "bench"},
                "codex/sandbox-state-meta": {"sandboxCwd": "file://" + str(workspace)}}
        start = time.perf_counter()
        result = tools.call("intent_add_evidence", {"statement": f"benchmark observation {n}"}, meta)
        samples.append(time.perf_counter() - start)
        assert result["structuredContent"]["ok"], result
    return samples


def main():
    if not os.access(BINARY, os.X_OK):
        sys.exit("bench_mcp: dist/intent-loop-mcp is missing; run `python3 build.py` first")
    with tempfile.TemporaryDirectory() as tmp:
        base = {"PATH": os.environ.get("PATH", ""), "HOME": tmp}
        fresh, fresh_floor = [], []
        for n in range(5):  # each start meets an empty data root: shiv extracts, then it answers
            root, scratch = os.path.join(tmp, f"fresh-{n}"), os.path.join(tmp, f"tmpdir-{n}")
            os.makedirs(root)
            os.makedirs(scratch)
            fresh_floor.append(floor())
            fresh.append(tools_list(dict(base, INTENT_LOOP_DATA_DIR=root, TMPDIR=scratch)))
        warm_env = dict(base, INTENT_LOOP_DATA_DIR=os.path.join(tmp, "fresh-0"), TMPDIR=os.path.join(tmp, "tmpdir-0"))
        warm, warm_floor = [], []
        for _ in range(ROUNDS):
            warm_floor.append(floor())
            warm.append(tools_list(warm_env))
        writes = write_latency(tmp, ROUNDS)
    print(f"{ROUNDS} interleaved rounds; ratios are median / p95 against the median / p95 of "
          f"`{PYTHON} -I -S -c pass` in the same run")
    for name, samples, floors in (("tools/list, fresh build (extracts; 5 runs)", fresh, fresh_floor),
                                  ("tools/list, extracted", warm, warm_floor),
                                  ("intent_add_evidence at 10,000 events, in-process", writes, warm_floor)):
        median, p95 = quantiles(samples)
        floor_median, floor_p95 = quantiles(floors)
        print(f"{name:<50} {median / floor_median:5.2f}x / {p95 / floor_p95:5.2f}x   "
              f"({median * 1000:.1f} / {p95 * 1000:.1f} ms; floor {floor_median * 1000:.1f} / "
              f"{floor_p95 * 1000:.1f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

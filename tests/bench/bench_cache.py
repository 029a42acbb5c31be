"""The cache with a year of history: bytes a hook reads, bytes a mutation writes, read time vs the floor.

    python3 tests/bench/bench_cache.py [--quick] [LIB ...]

For each lib/ given (default: this checkout's; pass an older checkout's lib/ too to compare
formats) it writes the synthetic year of tests/bench/year_history.py (300 tasks, 3,000 claims,
7,300 sessions), builds the cache with one full read, then in fresh `python3 -I -S` processes:
- the hook read path (load_verified, then the linked session's hook view, as SessionStart does):
  bytes read (/proc/self/io rchar, after imports) and the process's wall time, next to the same
  process that only imports, and `python3 -I -S -c pass` (the floor), interleaved;
- one `intent: must ...` prompt's mutation: bytes written to cache/ (every replace_atomically
  into it, summed) and the process's wchar.
Ratios only; nothing here is asserted. `--quick` (the smoke test): a tenth of the history, 2 rounds.
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PYTHON = os.path.realpath(sys.executable)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "15"))

CHILD = r"""
import sys, time
lib, bench, data_root, workspace, mode, arg = sys.argv[1:7]
sys.path[:0] = [lib, bench]

def io():
    with open("/proc/self/io") as fh:
        return dict(line.split(": ") for line in fh.read().split("\n") if line)

from intent_loop.intent.state import REDUCER
from intent_loop.intent.session_view import session_context
from intent_loop.storage import ledger, paths as paths_mod
from intent_loop.storage import reading
if mode == "imports":
    sys.exit(0)
paths = paths_mod.project_paths(data_root, workspace)
if mode == "read":
    before = io()
    verified = reading.load_verified(paths, REDUCER)
    task_id, text = session_context(verified.state, paths, arg)
    after = io()
    assert text and "user's own recorded intent" in text, text
    print(int(after["rchar"]) - int(before["rchar"]))
elif mode == "mutate":
    from intent_loop.intent import prompt_commands
    from intent_loop.ops import apply_commands
    from intent_loop.storage import atomic
    written = [0]
    real = atomic.replace_atomically
    def counting(path, data, **kw):
        if str(path).startswith(paths.cache_dir):
            written[0] += len(data)
        return real(path, data, **kw)
    atomic.replace_atomically = counting
    before = io()
    receipt = apply_commands.run_commands(
        paths, commands=prompt_commands.parse_prompt("intent: must keep the bench rule " + str(time.time())),
        session_hash=arg, source_ref={"kind": "user_event", "event_id": "bench-turn"},
        request_id="bench:" + str(time.time_ns()), deadline=time.monotonic() + 60, workspace=workspace, env={})
    after = io()
    assert receipt.events, receipt.rejected
    print(written[0], int(after["wchar"]) - int(before["wchar"]))
"""


def run(args):
    started = time.perf_counter()
    out = subprocess.run(args, capture_output=True, check=True, text=True).stdout
    return time.perf_counter() - started, out


def bench(lib, work, quick=False):
    sys.path[:0] = [str(lib), str(HERE)]
    for name in [m for m in sys.modules if m.startswith("intent_loop") or m == "year_history"]:
        del sys.modules[name]
    import year_history

    if quick:
        year_history.TASKS, year_history.SESSIONS = 30, 730

    from intent_loop.intent.state import REDUCER
    from intent_loop.storage import reading

    data_root, workspace = work / "data", work / "ws"
    workspace.mkdir()
    started = time.perf_counter()
    paths, _tasks, links = year_history.build(str(data_root), str(workspace))
    built = time.perf_counter() - started
    started = time.perf_counter()
    verified = reading.load_verified(paths, REDUCER)
    cold = time.perf_counter() - started
    del sys.path[:2]
    cache = {n: os.path.getsize(os.path.join(paths.cache_dir, n)) for n in os.listdir(paths.cache_dir)}
    session = sorted(links)[0]
    script = work / "child.py"
    script.write_text(CHILD)
    base = [PYTHON, "-I", "-S", str(script), str(lib), str(HERE), str(data_root), str(workspace)]
    floor, imports, reads, rchar = [], [], [], []
    rounds = 2 if quick else ROUNDS
    for _ in range(rounds):
        floor.append(run([PYTHON, "-I", "-S", "-c", "pass"])[0])
        imports.append(run(base + ["imports", session])[0])
        spent, out = run(base + ["read", session])
        reads.append(spent)
        rchar.append(int(out))
    mutations = [tuple(map(int, run(base + ["mutate", session])[1].split()))
                 for _ in range(max(3, rounds // 3))]
    spent, out = run(base + ["read", session])  # after the mutations: the cache they left
    f = statistics.median(floor)
    print(f"== {lib}")
    print(f"ledger: {verified.count} events, {os.path.getsize(paths.ledger) / 2**20:.1f} MiB, built in {built:.1f} s;"
          f" first full read {cold:.2f} s")
    print(f"cache/: {len(cache)} files, {sum(cache.values()) / 1024:.0f} KiB; largest "
          + ", ".join(f"{n} {s / 1024:.1f} KiB" for n, s in sorted(cache.items(), key=lambda kv: -kv[1])[:3]))
    roots = {n: s for n, s in cache.items() if n.endswith(".root")}  # the file every append rewrites
    print("cache root: " + ", ".join(f"{n} {s / 1024:.1f} KiB" for n, s in sorted(roots.items())))
    print(f"hook read path: {statistics.median(rchar) / 1024:.1f} KiB read (median of {rounds});"
          f" after the mutations {int(out) / 1024:.1f} KiB")
    read_only = (statistics.median(reads) - statistics.median(imports)) / f
    print(f"  process: median {statistics.median(reads) / f:.2f}x floor"
          f" (imports only {statistics.median(imports) / f:.2f}x; read path {read_only:.2f}x);"
          f" floor {f * 1000:.1f} ms")
    cache_w = statistics.median(m[0] for m in mutations)
    wchar = statistics.median(m[1] for m in mutations)
    print(f"mutation (`intent: must ...`): {cache_w / 1024:.1f} KiB written to cache/ (median of {len(mutations)}),"
          f" {wchar / 1024:.1f} KiB wchar in all")


def main():
    quick = "--quick" in sys.argv[1:]
    libs = [Path(a).resolve() for a in sys.argv[1:] if a != "--quick"] or [ROOT / "lib"]
    for lib in libs:
        with tempfile.TemporaryDirectory(prefix="bench-cache-", dir=os.environ.get("BENCH_TMP")) as tmp:
            bench(lib, Path(tmp), quick=quick)


if __name__ == "__main__":
    main()

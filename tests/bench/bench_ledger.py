"""Append cost at 10, 1,000 and 10,000 events, as ratios to `python3 -I -S -c pass` (run by build.py).

    python3 build.py bench-ledger [--rounds N] [--sizes 10,1000,10000]

For each ledger size it measures ONE append (one `transaction.mutate` adding a ~400-byte payload):
as a fresh `python3 -I -S` process (a tiny script that puts lib/ on sys.path and calls mutate,
what a hook does) and in-process (what a long-lived CLI or MCP process does). The floor
`python3 -I -S -c pass` is measured in the same interleaved run (baseline, fresh append,
in-process append, size after size, round after round) because this shared VM drifts by about
+-30%: quote the ratios, not the milliseconds. Before every measured append the ledger and its
cache are restored to the pristine N-event copy, so each sample appends to exactly N events.
The reducer is a counter, so the figures are the storage engine's own cost.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
sys.path.insert(0, str(LIB))

from intent_loop.storage import ledger, sealing, timestamps, transaction
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.atomic import replace_atomically  # noqa: E402

PYTHON = os.path.realpath(sys.executable)  # never a pyenv shim: that alone costs ~74 ms
WARMUP_ROUNDS = 3
OPERATION = "bench.append"

# What a fresh hook-like process runs; argv: lib, data root, workspace, request id, payload dir.
APPEND_SCRIPT = """\
import sys, time
sys.path[:0] = [sys.argv[1], sys.argv[5]]  # -I leaves the script's own directory off sys.path
from intent_loop.storage import paths
from intent_loop.storage import transaction
import bench_payload
p = paths.project_paths(sys.argv[2], sys.argv[3])
transaction.mutate(p, bench_payload.Counter(), request_id=sys.argv[4], operation="bench.append",
              params={"n": sys.argv[4]}, plan=lambda s: [bench_payload.draft(sys.argv[4])],
              deadline=time.monotonic() + 10)
"""

# Shared by the fresh script and this process, so both append the same kind of event.
PAYLOAD_MODULE = """\
from intent_loop.storage import ledger

STATEMENT = "Keep the public API of the auth module unchanged while fixing the login redirect loop."


class Counter:
    version = "bench-counter-1"

    def initial(self):
        return {"count": 0}

    def apply(self, state, event):
        state["count"] += 1


def payload(tag):
    return {
        "claim_id": "3f0c9a52-8d1e-4b7a-9c2f-5e6d7a8b9c0d",
        "statement": STATEMENT,
        "role": "user",
        "epistemic_status": "explicit",
        "scope": "task",
        "facets": ["hard_constraint"],
        "source_ref": {"kind": "user_event", "event_id": "evt-" + tag},
        "valid_from": "2026-08-28T10:00:00.000Z",
    }


def draft(tag):
    return ledger.Draft("claim_added", "9b2e4c6d-1a3f-4e5b-8c7d-0e1f2a3b4c5d", "user", payload(tag))
"""


CACHE_FILES = ("v2.root", "requests-2.idx")  # the derived state a previous writer leaves behind


def percentile(samples, fraction):
    ordered = sorted(samples)
    index = max(0, min(len(ordered) - 1, int(round(fraction * len(ordered) + 0.5)) - 1))
    return ordered[index]


class Ledger:
    """One project holding a pristine ledger of `size` events, restorable before every append."""

    def __init__(self, work, size, payload_mod):
        self.size = size
        self.workspace = work / f"workspace-{size}"
        self.workspace.mkdir()
        self.data_root = str(work / "data")
        self.paths = paths_mod.project_paths(self.data_root, str(self.workspace))
        self.pristine = work / f"pristine-{size}"
        self.pristine.mkdir()
        self._build(payload_mod)

    def _build(self, payload_mod):
        paths_mod.ensure_project_layout(self.paths)
        lines, prev = [], None
        for index in range(self.size):
            request_id = f"seed-{index}"
            draft = payload_mod.draft(request_id)
            fingerprint = sealing.request_fingerprint(OPERATION, {"n": request_id})
            draft.payload = dict(draft.payload, request_fingerprint=fingerprint)
            event, line = sealing.seal(draft, project_id=self.paths.project_id, request_id=request_id,
                                       prev_hash=prev, occurred_at=timestamps.format_utc(time.time()))
            prev = event["event_hash"]
            lines.append(line)
        replace_atomically(self.paths.ledger, b"".join(lines))
        verified = ledger.load_verified(self.paths, payload_mod.Counter())
        assert verified.count == self.size
        with transaction.Transaction(self.paths, payload_mod.Counter(), deadline=time.monotonic() + 60) as tx:
            tx.find_request("bench-index-warmup")  # with the rebuild it asks for: the index earlier writers leave
        from intent_loop.storage import pending_work
        for _p, job in pending_work.take_maintenance():
            job(time.monotonic() + 60)
        shutil.copy2(self.paths.ledger, self.pristine / "ledger.jsonl")
        for name in CACHE_FILES:
            shutil.copy2(os.path.join(self.paths.cache_dir, name), self.pristine / name)
        self.bytes = os.path.getsize(self.paths.ledger)

    def restore(self):
        """Put the pristine ledger and cache back, durably, as the previous writer would leave them
        (clean pages in the page cache: unsynced ones would make the measured rename pay for them)."""
        targets = [("ledger.jsonl", self.paths.ledger)]
        targets += [(name, os.path.join(self.paths.cache_dir, name)) for name in CACHE_FILES]
        for name, target in targets:
            temp = target + ".bench-restore"
            shutil.copyfile(self.pristine / name, temp)
            os.chmod(temp, 0o600)
            fd = os.open(temp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, target)


def timed_run(args):
    started = time.perf_counter()
    subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
    return time.perf_counter() - started


def measure(rounds, sizes):
    work = Path(tempfile.mkdtemp(prefix="bench-ledger-"))
    try:
        (work / "bench_payload.py").write_text(PAYLOAD_MODULE)
        script = work / "append_once.py"
        script.write_text(APPEND_SCRIPT)
        sys.path.insert(0, str(work))
        import bench_payload

        ledgers = {size: Ledger(work, size, bench_payload) for size in sizes}
        floor, fresh, inproc = [], {s: [] for s in sizes}, {s: [] for s in sizes}
        counter = 0
        for round_number in range(WARMUP_ROUNDS + rounds):
            keep = round_number >= WARMUP_ROUNDS
            for size in sizes:
                book = ledgers[size]
                counter += 1
                base = timed_run([PYTHON, "-I", "-S", "-c", "pass"])
                book.restore()
                spent = timed_run([PYTHON, "-I", "-S", str(script), str(LIB), book.data_root,
                                   str(book.workspace), f"fresh-{counter}", str(work)])
                book.restore()
                started = time.perf_counter()
                mutation = transaction.mutate(
            book.paths, bench_payload.Counter(), request_id=f"inproc-{counter}", operation=OPERATION,
            params={"n": counter}, plan=lambda _s, counter=counter: [bench_payload.draft(str(counter))],
            deadline=time.monotonic() + 10)
                events, replayed = mutation.events, mutation.replayed
                in_process = time.perf_counter() - started
                assert len(events) == 1 and not replayed
                if keep:
                    floor.append(base)
                    fresh[size].append(spent)
                    inproc[size].append(in_process)
        return floor, fresh, inproc, {s: ledgers[s].bytes for s in sizes}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(rounds, floor, fresh, inproc, sizes_bytes):
    floor_median, floor_p95 = statistics.median(floor), percentile(floor, 0.95)
    ms = 1000.0
    print(f"Ledger append cost: {PYTHON} ({sys.version.split()[0]}), {rounds} interleaved rounds "
          f"(+{WARMUP_ROUNDS} warm-up), {os.cpu_count()} CPUs")
    print(f"floor `python3 -I -S -c pass`: median {floor_median * ms:.1f} ms, p95 {floor_p95 * ms:.1f} ms "
          f"({len(floor)} runs)")
    print()
    header = (f"{'events':>7} | {'ledger':>8} | {'fresh process, x floor':>23} | "
              f"{'in-process, ms':>16} | {'in-process, x floor':>20}")
    print(header)
    print(f"{'':>7} | {'':>8} | {'median / p95':>23} | {'median / p95':>16} | {'median / p95':>20}")
    print("-" * len(header))
    for size in sorted(fresh):
        f_med, f_p95 = statistics.median(fresh[size]) / floor_median, percentile(fresh[size], 0.95) / floor_p95
        i_med, i_p95 = statistics.median(inproc[size]), percentile(inproc[size], 0.95)
        print(f"{size:>7,} | {sizes_bytes[size] / 1e6:>6.2f}MB | {f'{f_med:.2f}x / {f_p95:.2f}x':>23} | "
              f"{f'{i_med * ms:.1f} / {i_p95 * ms:.1f}':>16} | "
              f"{f'{i_med / floor_median:.2f}x / {i_p95 / floor_p95:.2f}x':>20}")
    small, large = min(fresh), max(fresh)
    med_ratio = statistics.median(fresh[large]) / statistics.median(fresh[small])
    p95_ratio = percentile(fresh[large], 0.95) / percentile(fresh[small], 0.95)
    verdict = "meets" if med_ratio <= 1.5 else "MISSES"
    print()
    print(f"headline: fresh append at {large:,} events / at {small:,} events = {med_ratio:.2f}x median, "
          f"{p95_ratio:.2f}x p95 (goal <= 1.5x median: {verdict})")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--sizes", default="10,1000,10000")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(","))
    floor, fresh, inproc, sizes_bytes = measure(args.rounds, sizes)
    report(args.rounds, floor, fresh, inproc, sizes_bytes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

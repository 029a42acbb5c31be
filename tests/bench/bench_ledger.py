"""Append cost at 10 to 100,000 events and the ledger commands at 100,000 (run by build.py).

    python3 build.py bench-ledger [--rounds N] [--sizes 10,1000,10000,100000] [--runs 2]
                                  [--reducer project|counter] [--parts append,commands] [--quick]
                                  [--command-size 100000] [--verify-baseline X]

Appends: for each ledger size it measures ONE append (one `transaction.mutate` adding one
event): as a fresh `python3 -I -S` process (a tiny script that puts lib/ and the pinned
packages on sys.path and calls mutate, what a hook's after-answer child does) and in-process
(what a long-lived CLI or MCP process does). The floor `python3 -I -S -c pass` is measured in
the same interleaved run (baseline, fresh append, in-process append, size after size, round
after round) because this shared VM drifts by about +-30%: quote the ratios, not the
milliseconds. Before every measured append the project is restored to the pristine N-event
copy (ledger and cache), so each sample appends to exactly N events. Next to each time: the
bytes the append wrote to storage (`ru_oublock` x 512: the fresh process's from `wait4`, the
in-process one's from `getrusage` around the call), the fresh process's peak RSS, and the
request index's share: the in-process time of the exact-retry lookup (`find_request` of a new
id under the lock) every mutation makes, against the in-process append.

With `--reducer project` (the default) every ledger is a synthetic history from
`tests/bench/history.py` (at 100,000 events: 300 tasks, 3,000 claims, 2,000 linked sessions)
folded by the project reducer, and the append is the hash-only prompt observation a linked
plain prompt writes, so the cache the engine reads and writes is the real one. With
`--reducer counter` the ledger holds identical ~400-byte claim events folded by a counter
(the figures before issue 11): the storage engine's own cost without any derived state.

Commands (`--parts commands`, see bench_commands.py): `intent-loop verify`, `timeline`,
`export`, `import`, `delete claim` and `doctor` at 100,000 events with peak RSS and bytes, and
verify against a bare streaming loop over the same file in the same run.

`--runs 2` repeats the measurement on the same ledgers and prints each run (the issue's targets
are quoted from two runs). `--quick` is a smoke run with tiny sizes: its numbers mean nothing.
"""
import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
BENCH = Path(__file__).resolve().parent
sys.path[:0] = [str(LIB), str(BENCH)]

import history  # noqa: E402
import measure  # noqa: E402

from intent_loop.base import timestamps
from intent_loop.storage import paths as paths_mod  # noqa: E402
from intent_loop.storage import reading, sealing, transaction  # noqa: E402
from intent_loop.storage.atomic import replace_atomically  # noqa: E402

PYTHON = measure.PYTHON  # never a pyenv shim: that alone costs ~74 ms
# The pinned packages (orjson) a built hook carries in its zip; -S would drop them.
SITE_PACKAGES = measure.PINNED_PACKAGES
WARMUP_ROUNDS = 3
OPERATION = "bench.append"
TARGET_APPEND_RATIO = 1.3

# What a fresh hook-like process runs; argv: lib, data root, workspace, request id, payload dir,
# site-packages, reducer kind, the linked session's hash ("" for the counter).
APPEND_SCRIPT = """\
import sys, time
sys.path[:0] = [sys.argv[1], sys.argv[5], sys.argv[6]]  # -I leaves the script's own directory off sys.path
from intent_loop.storage import paths
from intent_loop.storage import transaction
import bench_payload
p = paths.project_paths(sys.argv[2], sys.argv[3])
reducer = bench_payload.reducer(sys.argv[7])
transaction.mutate(p, reducer, request_id=sys.argv[4], operation="bench.append",
              params={"n": sys.argv[4]},
              plan=lambda s: [bench_payload.draft(sys.argv[7], s, sys.argv[4], sys.argv[8])],
              deadline=time.monotonic() + 30)
"""

# Shared by the fresh script and this process, so both append the same kind of event.
PAYLOAD_MODULE = """\
from intent_loop.storage import ledger
from intent_loop.storage import reading

STATEMENT = "Keep the public API of the auth module unchanged while fixing the login redirect loop."


class Counter:
    version = "bench-counter-1"

    def initial(self):
        return {"count": 0}

    def apply(self, state, event):
        state["count"] += 1


def reducer(kind):
    if kind == "counter":
        return Counter()
    from intent_loop.intent.state import REDUCER

    return REDUCER


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


def linked_session(state):
    \"\"\"A session linked to the newest task: found once per ledger, before anything is measured
    (iterating every session loads all 256 session buckets of the cache, which no hook does).\"\"\"
    task_id = state["last_change"]["task_id"]
    return next(s for s, t in reversed(state["sessions"].items()) if t == task_id)


def draft(kind, state=None, tag="seed", session=""):
    if kind == "counter":
        return ledger.Draft("claim_added", "9b2e4c6d-1a3f-4e5b-8c7d-0e1f2a3b4c5d", "user", payload(tag))
    # the hash-only observation of a linked plain prompt (hook/handlers.py), in the newest task;
    # like the hook, it looks up only its own session (one bucket)
    task_id = state["last_change"]["task_id"]
    assert state["sessions"].get(session) == task_id
    return ledger.Draft("source_observed", task_id, "user", {
        "host_session_hash": session, "source": {"kind": "user_event", "event_id": "evt-" + tag},
        "char_count": 120})
"""


class Ledger:
    """One project holding a pristine ledger of `size` events, restorable before every append."""

    def __init__(self, work, size, payload_mod, kind):
        self.size, self.kind = size, kind
        self.workspace = work / f"workspace-{size}"
        self.workspace.mkdir()
        self.data_root = str(work / "data")
        self.paths = paths_mod.project_paths(self.data_root, str(self.workspace))
        self.pristine = work / f"pristine-{size}"
        if kind == "counter":
            self._build_counter(payload_mod)
        else:
            history.build(self.data_root, self.workspace, size)  # verified and warmed
        self.reducer = payload_mod.reducer(kind)
        self.session = ""
        if kind != "counter":
            self.session = payload_mod.linked_session(reading.load_verified(self.paths, self.reducer).state)
        self.pristine.mkdir()
        shutil.copy2(self.paths.ledger, self.pristine / "ledger.jsonl")
        shutil.copytree(self.paths.cache_dir, self.pristine / "cache")
        self.bytes = os.path.getsize(self.paths.ledger)
        self.cache_bytes = sum(f.stat().st_size for f in (self.pristine / "cache").iterdir() if f.is_file())

    def _build_counter(self, payload_mod):
        paths_mod.ensure_project_layout(self.paths)
        lines, prev = [], None
        for index in range(self.size):
            request_id = f"seed-{index}"
            draft = payload_mod.draft("counter", None, request_id)
            extra = {"request_fingerprint": sealing.request_fingerprint(OPERATION, {"n": request_id})}
            if history.request_count_field():
                extra[history.request_count_field()] = 1
            draft.payload = dict(draft.payload, **extra)
            event, line = sealing.seal(draft, project_id=self.paths.project_id, request_id=request_id,
                                       prev_hash=prev, occurred_at=timestamps.format_utc(time.time()))
            prev = event["event_hash"]
            lines.append(line)
        replace_atomically(self.paths.ledger, b"".join(lines))
        verified = reading.verify_all(self.paths, payload_mod.Counter())
        assert verified.count == self.size
        history.warm(self.paths, payload_mod.Counter())

    def restore(self):
        """Put the pristine ledger and cache back, durably, as the previous writer would leave them
        (clean pages in the page cache: unsynced ones would make the measured write pay for them).
        An append only adds bytes after the pristine ones (appended in place, or a rewritten copy),
        so the ledger is cut back to the pristine length when its bytes there still match; the
        cache directory is put back entry by entry whatever format the engine in this tree uses,
        then re-sealed by the read path (the cut or copied ledger has a new mtime or inode, and a
        previous writer leaves a checkpoint that matches the file)."""
        pristine = self.pristine / "ledger.jsonl"
        size = pristine.stat().st_size
        if not self._cut_back(pristine, size):
            _copy_durably(pristine, self.paths.ledger)
        cache = Path(self.paths.cache_dir)
        keep = {entry.name for entry in (self.pristine / "cache").iterdir()}
        for entry in cache.iterdir():
            if entry.name not in keep:
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        for name in keep:
            source, target = self.pristine / "cache" / name, cache / name
            if source.is_dir():
                shutil.rmtree(target, ignore_errors=True)
                measure.copy_tree(source, target)
            else:
                _copy_durably(source, target)
        reading.load_verified(self.paths, self.reducer)
        os.sync()

    def _cut_back(self, pristine, size):
        try:
            with open(self.paths.ledger, "r+b") as fh:
                if os.fstat(fh.fileno()).st_size < size:
                    return False
                tail = min(size, 4096)
                fh.seek(size - tail)
                with open(pristine, "rb") as original:
                    original.seek(size - tail)
                    if fh.read(tail) != original.read(tail):
                        return False
                fh.truncate(size)
                os.fsync(fh.fileno())
                return True
        except FileNotFoundError:
            return False


def _copy_durably(source, target):
    temp = str(target) + ".bench-restore"
    measure.copy_in_pages(source, temp)  # as the engine's writers leave a file: measure.py says why
    os.chmod(temp, 0o600)
    fd = os.open(temp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, target)


def floor_run():
    return measure.run([PYTHON, "-I", "-S", "-c", "pass"], capture=False).elapsed


class Samples:
    def __init__(self, sizes):
        self.floor = []
        self.fresh = {s: [] for s in sizes}
        self.fresh_written = {s: [] for s in sizes}
        self.fresh_rss = {s: [] for s in sizes}
        self.inproc = {s: [] for s in sizes}
        self.inproc_written = {s: [] for s in sizes}
        self.inproc_payload = {s: [] for s in sizes}
        self.lookup = {s: [] for s in sizes}


def bytes_passed_to_write():
    """This process's `wchar` (bytes handed to write(2) and pwrite(2)), None where /proc has none."""
    try:
        with open("/proc/self/io", "rb") as fh:
            for line in fh:
                if line.startswith(b"wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def index_lookup(book, request_id):
    """Seconds of the exact-retry lookup every mutation makes before it plans (`find_request` of
    an id never used, inside the lock, as mutate calls it): the request index's share."""
    with transaction.Transaction(book.paths, book.reducer, deadline=time.monotonic() + 30) as tx:
        started = time.perf_counter()
        found = tx.find_request(request_id)
        spent = time.perf_counter() - started
    assert not found
    return spent


def measure_appends(ledgers, rounds, work, script, payload_mod, kind, run_no):
    sizes = sorted(ledgers)
    samples = Samples(sizes)
    counter = 0
    for round_number in range(WARMUP_ROUNDS + rounds):
        keep = round_number >= WARMUP_ROUNDS
        for size in sizes:
            book = ledgers[size]
            counter += 1
            base = floor_run()
            book.restore()
            request = f"fresh-{run_no}-{counter}"
            fresh = measure.run([PYTHON, "-I", "-S", str(script), str(LIB), book.data_root, str(book.workspace),
                                 request, str(work), SITE_PACKAGES, kind, book.session], capture=False)
            if fresh.returncode != 0:
                raise SystemExit(f"bench: the fresh append failed: {fresh.stderr.decode(errors='replace')[-2000:]}")
            book.restore()
            before = resource.getrusage(resource.RUSAGE_SELF).ru_oublock
            handed = bytes_passed_to_write()
            started = time.perf_counter()
            mutation = transaction.mutate(
                book.paths, book.reducer, request_id=f"inproc-{run_no}-{counter}", operation=OPERATION,
                params={"n": counter},
                plan=lambda s, counter=counter, book=book: [payload_mod.draft(kind, s, str(counter), book.session)],
                deadline=time.monotonic() + 30)
            in_process = time.perf_counter() - started
            written = (resource.getrusage(resource.RUSAGE_SELF).ru_oublock - before) * 512
            payload = None if handed is None else bytes_passed_to_write() - handed
            assert len(mutation.events) == 1 and not mutation.replayed
            lookup = index_lookup(book, f"absent-{run_no}-{counter}")
            if keep:
                samples.floor.append(base)
                samples.fresh[size].append(fresh.elapsed)
                samples.fresh_written[size].append(fresh.written)
                samples.fresh_rss[size].append(fresh.rss)
                samples.inproc[size].append(in_process)
                samples.inproc_written[size].append(written)
                samples.inproc_payload[size].append(payload)
                samples.lookup[size].append(lookup)
    return samples


def report_appends(rounds, samples, ledgers, kind, run_no):
    floor_median, floor_p95 = statistics.median(samples.floor), measure.percentile(samples.floor, 0.95)
    ms = 1000.0
    print(f"\n== appends, run {run_no}: {kind} reducer, {rounds} interleaved rounds (+{WARMUP_ROUNDS} warm-up), "
          f"{os.cpu_count()} CPUs ==")
    print(f"floor `python3 -I -S -c pass`: median {floor_median * ms:.1f} ms, p95 {floor_p95 * ms:.1f} ms "
          f"({len(samples.floor)} runs)")
    header = (f"{'events':>7} | {'ledger':>8} | {'cache':>8} | {'fresh, x floor':>15} | {'written':>10} | "
              f"{'peak RSS':>8} | {'in-process, ms':>14} | {'in-proc, x floor':>16} | {'written':>10} | "
              f"{'payload':>9} | {'index lookup':>13}")
    print(header)
    print(f"{'':>7} | {'':>8} | {'':>8} | {'median / p95':>15} | {'median':>10} | {'median':>8} | "
          f"{'median / p95':>14} | {'median / p95':>16} | {'median':>10} | {'median':>9} | {'ms (share)':>13}")
    print("-" * len(header))
    for size in sorted(samples.fresh):
        fresh, inproc = samples.fresh[size], samples.inproc[size]
        f_med, f_p95 = statistics.median(fresh) / floor_median, measure.percentile(fresh, 0.95) / floor_p95
        i_med, i_p95 = statistics.median(inproc), measure.percentile(inproc, 0.95)
        lookup = statistics.median(samples.lookup[size])
        written = [w for w in samples.fresh_written[size] if w is not None]
        payload = [w for w in samples.inproc_payload[size] if w is not None]
        print(f"{size:>7,} | {ledgers[size].bytes / 1e6:>6.2f}MB | {ledgers[size].cache_bytes / 1e6:>6.2f}MB | "
              f"{f'{f_med:.2f}x / {f_p95:.2f}x':>15} | "
              f"{measure.size_text(statistics.median(written) if written else None):>10} | "
              f"{measure.mib(statistics.median(samples.fresh_rss[size])):>8} | "
              f"{f'{i_med * ms:.1f} / {i_p95 * ms:.1f}':>14} | "
              f"{f'{i_med / floor_median:.2f}x / {i_p95 / floor_p95:.2f}x':>16} | "
              f"{measure.size_text(statistics.median(samples.inproc_written[size])):>10} | "
              f"{measure.size_text(statistics.median(payload) if payload else None):>9} | "
              f"{f'{lookup * ms:.2f} ({lookup / i_med:.0%})':>13}")
    small, large = min(samples.fresh), max(samples.fresh)
    med_ratio = statistics.median(samples.fresh[large]) / statistics.median(samples.fresh[small])
    p95_ratio = measure.percentile(samples.fresh[large], 0.95) / measure.percentile(samples.fresh[small], 0.95)
    verdict = "meets" if p95_ratio <= TARGET_APPEND_RATIO else "MISSES"
    print(f"target: fresh append p95 at {large:,} events / at {small:,} events = {p95_ratio:.2f}x "
          f"(median {med_ratio:.2f}x; target <= {TARGET_APPEND_RATIO}x: {verdict})")
    worst = max((statistics.median(w) for w in samples.fresh_written.values() if None not in w), default=None)
    print(f"target: bytes written per fresh append, largest median over the sizes = {measure.size_text(worst)} "
          f"(target: a few KiB at any size)")
    print("('written' is what the kernel counts, file-system metadata included: every file or directory an "
          "append creates, renames or changes costs 8-20 KiB on ext4; 'payload' is the bytes the in-process "
          "append handed to write(2)/pwrite(2): docs/performance.md)")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--sizes", default="10,1000,10000,100000")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--reducer", choices=("project", "counter"), default="project")
    parser.add_argument("--parts", default="append,commands", help="append, commands or both (comma-separated)")
    parser.add_argument("--command-size", type=int, default=100_000, help="ledger size for the commands part")
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, few rounds, numbers mean nothing")
    parser.add_argument("--verify-baseline", type=float, metavar="X",
                        help="today's verify at 100k in x floor (docs/performance.md) to print the <= 0.3x target")
    args = parser.parse_args(argv)
    global WARMUP_ROUNDS
    if args.quick:
        args.rounds, args.sizes, args.runs, args.command_size, WARMUP_ROUNDS = 3, "10,200", 1, 200, 1
    sizes = tuple(int(s) for s in args.sizes.split(","))
    parts = set(args.parts.split(","))
    measure.become_subreaper()
    print(f"{PYTHON} ({sys.version.split()[0]}); bytes written: "
          f"{'ru_oublock x 512, after-answer children included' if measure.become_subreaper() else 'n/a'}")
    if "append" in parts:
        work = Path(tempfile.mkdtemp(prefix="bench-ledger-", dir=os.environ.get("BENCH_TMP")))
        try:
            (work / "bench_payload.py").write_text(PAYLOAD_MODULE)
            script = work / "append_once.py"
            script.write_text(APPEND_SCRIPT)
            sys.path.insert(0, str(work))
            import bench_payload

            started = time.perf_counter()
            ledgers = {size: Ledger(work, size, bench_payload, args.reducer) for size in sizes}
            print(f"ledgers of {', '.join(f'{s:,}' for s in sizes)} events built and verified in "
                  f"{time.perf_counter() - started:.0f} s")
            for run_no in range(1, args.runs + 1):
                samples = measure_appends(ledgers, args.rounds, work, script, bench_payload, args.reducer, run_no)
                report_appends(args.rounds, samples, ledgers, args.reducer, run_no)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if "commands" in parts:
        import bench_commands

        bench_commands.run(size=args.command_size, small=10, runs=args.runs, rounds=3 if args.quick else 5,
                           verify_baseline=args.verify_baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

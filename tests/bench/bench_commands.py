"""The ledger commands at 100,000 events: time as x floor, peak RSS, bytes written (bench-ledger).

Run by `python3 build.py bench-ledger` (its `--parts commands`), or alone:

    python3 tests/bench/bench_commands.py [--size 100000] [--runs 2] [--rounds 5] [--quick]

Each command is `intent-loop ...` run the way the CLI runs, from this tree's lib/ in a fresh
interpreter with the pinned packages first on sys.path (`python3 -I -c`, so whatever engine is in
the tree is what is measured; the binaries run the same code from a zip), in the workspace of a
synthetic year of history (tests/bench/history.py). Rounds are interleaved with the floor
`python3 -I -S -c pass`; ratios are medians to the median floor of the same run. Commands that
change the project (import, delete claim) get the pristine project back before every round.

`verify` is also compared with a bare streaming loop over the same ledger file in the same run
(BARE_LOOP below: orjson loads, a canonical re-serialisation check, hashlib sha256 of the line
without its event_hash, the chain check and the project reducer's fold, read in 1 MiB chunks):
what a streaming verifier costs before anything else it does. `timeline` with no arguments is
compared with the same command on a 10-event project.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "lib"
BENCH = Path(__file__).resolve().parent
for _path in (str(LIB), str(BENCH)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

import history  # noqa: E402
import measure  # noqa: E402

from intent_loop.intent.state import REDUCER
from intent_loop.storage import (
    reading,
)

PYTHON = measure.PYTHON
# argv[1]: the directories to put first on sys.path (lib/, and the pinned packages unless measuring
# without them), joined by os.pathsep
PATHS = "import os, sys; sys.path[:0] = sys.argv.pop(1).split(os.pathsep)\n"
CLI = PATHS + "from intent_loop.cli.main import main; sys.exit(main(sys.argv[1:]))"
WITH_PINNED = os.pathsep.join((str(LIB), measure.PINNED_PACKAGES))
TARGET_VERIFY_VS_LOOP, TARGET_RSS, TARGET_TIMELINE = 1.3, 100 * 10**6, 1.2

BARE_LOOP = PATHS + """\
import hashlib
import orjson
from intent_loop.intent.state import REDUCER

FIELD = b',"event_hash":"'
state, prev, count = REDUCER.initial(), None, 0
with open(sys.argv[1], "rb") as fh:
    rest = b""
    while True:
        chunk = fh.read(1 << 20)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\\n")
        rest = lines.pop()
        for line in lines:
            event = orjson.loads(line)
            if orjson.dumps(event, option=orjson.OPT_SORT_KEYS) != line:
                raise SystemExit(f"line {count + 1}: not canonical")
            at = line.find(FIELD)
            digest = hashlib.sha256(line[:at] + line[at + len(FIELD) + 65:]).hexdigest()
            if digest != event["event_hash"] or event["prev_hash"] != prev:
                raise SystemExit(f"line {count + 1}: hash or chain")
            REDUCER.apply(state, event)
            prev, count = event["event_hash"], count + 1
print(count)
"""


class Project:
    """A generated project, with a pristine copy for the commands that change it."""

    def __init__(self, work, events):
        self.events = events
        self.root = work / f"root-{events}"
        self.workspace = work / f"ws-{events}"
        self.paths = history.build(self.root, self.workspace, events)
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(work), "INTENT_LOOP_DATA_DIR": str(self.root)}
        self.pristine = work / f"pristine-{events}"
        shutil.copytree(self.paths.dir, self.pristine)
        self.guard_pristine = None
        self.bytes = os.path.getsize(self.paths.ledger)

    def restore(self):
        shutil.rmtree(self.paths.dir)
        measure.copy_tree(self.pristine, self.paths.dir)  # page-sized writes: measure.py says why
        shutil.rmtree(self.workspace / ".execution-fidelity", ignore_errors=True)
        os.sync()  # the copy's writeback must not land inside the measured command

    def cli(self, *args):
        return measure.run([PYTHON, "-I", "-c", CLI, WITH_PINNED, *args], env=self.env, cwd=str(self.workspace))

    def cli_without_orjson(self, *args):
        """The same command with no site directory, so orjson cannot be imported: the standard
        library's JSON stands in (base/json_engine.py), as under an interpreter without orjson."""
        return measure.run([PYTHON, "-I", "-S", "-c", CLI, str(LIB), *args], env=self.env, cwd=str(self.workspace))


def newest_claim(paths):
    """An active claim of the newest task (what a user would delete)."""
    state = reading.load_verified(paths, REDUCER).state
    task = state["tasks"][state["last_change"]["task_id"]]
    return next(cid for cid, r in task["claims"].items() if r["state"] == "active")


def floor():
    return measure.run([PYTHON, "-I", "-S", "-c", "pass"], capture=False).elapsed


class Case:
    """One command; `ok_codes` are the exits that mean it did its job (doctor exits 1 when a check
    finds a problem, as in a bench project without installed hooks)."""

    def __init__(self, name, run_once, *, changes=None, ok_codes=(0,)):
        self.name, self.run_once, self.changes, self.ok_codes = name, run_once, changes, ok_codes
        self.times, self.rss, self.written, self.failures = [], [], [], []


def measure_run(cases, rounds):
    floors = []
    for _ in range(rounds):
        for case in cases:
            if case.changes is not None:
                case.changes()
            floors.append(floor())
            result = case.run_once()
            if result.returncode not in case.ok_codes:
                case.failures.append(f"exit {result.returncode}: "
                                     f"{(result.stderr or result.stdout).decode(errors='replace').strip()[-300:]}")
            case.times.append(result.elapsed)
            case.rss.append(result.rss)
            case.written.append(result.written)
    return statistics.median(floors)


def run(*, size=100_000, small=10, runs=2, rounds=5, verify_baseline=None):
    """Build the projects, then `runs` interleaved runs of every command; prints the tables."""
    work = Path(tempfile.mkdtemp(prefix="bench-commands-", dir=os.environ.get("BENCH_TMP")))
    try:
        big, tiny = Project(work, size), Project(work, small)
        graph = work / "graph.json"
        exported = big.cli("export", "-o", str(graph))
        if exported.returncode != 0:
            raise SystemExit(f"bench: export for the import case failed: {exported.stderr[-500:]!r}")
        claim = newest_claim(big.paths)
        bare = [PYTHON, "-I", "-c", BARE_LOOP, WITH_PINNED, big.paths.ledger]
        checked = measure.run(bare)
        if checked.returncode != 0 or int(checked.stdout) != size:
            raise SystemExit(f"bench: the bare loop did not read {size} events: {checked.stderr[-500:]!r}")
        print(f"\n== commands: {size:,} events ({big.bytes / 1e6:.1f} MB ledger) and {small} events ==")
        for run_no in range(1, runs + 1):
            cases = [
                Case("verify", lambda: big.cli("verify")),
                Case("verify without orjson (stdlib JSON)", lambda: big.cli_without_orjson("verify")),
                Case("bare streaming loop (same file)", lambda: measure.run(bare)),
                Case("timeline (default)", lambda: big.cli("timeline")),
                Case(f"timeline (default) at {small} events", lambda: tiny.cli("timeline")),
                Case("export (newest task, stdout)", lambda: big.cli("export")),
                Case("import (a graph of the newest task)", lambda: big.cli("import", str(graph)),
                     changes=big.restore),
                Case("delete claim", lambda: big.cli("delete", "claim", claim, "--confirm", f"DELETE CLAIM {claim}"),
                     changes=big.restore),
                Case("doctor", lambda: big.cli("doctor"), ok_codes=(0, 1)),
            ]
            floor_median = measure_run(cases, rounds)
            report(cases, floor_median, rounds, run_no, size, verify_baseline)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(cases, floor_median, rounds, run_no, size, verify_baseline=None):
    print(f"-- run {run_no}: {rounds} interleaved rounds; floor median {floor_median * 1e3:.1f} ms --")
    header = f"{'command':<40} | {'x floor':>8} | {'median s':>8} | {'peak RSS':>8} | {'written':>10} | result"
    print(header)
    print("-" * len(header))
    medians = {}
    for case in cases:
        median = statistics.median(case.times)
        medians[case.name] = median
        written = [w for w in case.written if w is not None]
        result = "ok" if not case.failures else f"FAILED {len(case.failures)}/{rounds}: {case.failures[0]}"
        print(f"{case.name:<40} | {median / floor_median:>7.1f}x | {median:>8.2f} | {measure.mib(max(case.rss)):>8} | "
              f"{measure.size_text(statistics.median(written) if written else None):>10} | {result}")
    ratio = medians["verify"] / medians["bare streaming loop (same file)"]
    print(f"target: verify / bare streaming loop = {ratio:.2f}x (target <= {TARGET_VERIFY_VS_LOOP}x: "
          f"{'meets' if ratio <= TARGET_VERIFY_VS_LOOP else 'MISSES'}); verify alone "
          f"{medians['verify'] / floor_median:.1f}x the floor")
    if verify_baseline:
        ratio = medians["verify"] / floor_median / verify_baseline
        print(f"target: verify / today's ({verify_baseline:g}x the floor, --verify-baseline) = {ratio:.2f}x "
              f"(target <= 0.3x: {'meets' if ratio <= 0.3 else 'MISSES'})")
    big_cases = [c for c in cases if "events" not in c.name and not c.name.startswith("bare")]
    worst = max(big_cases, key=lambda c: max(c.rss))
    print(f"target: peak RSS at {size:,} events, largest = {measure.mib(max(worst.rss))} ({worst.name}; "
          f"target <= {TARGET_RSS // 10**6} MB: {'meets' if max(worst.rss) <= TARGET_RSS else 'MISSES'})")
    small_name = next(name for name in medians if name.startswith("timeline (default) at"))
    ratio = medians["timeline (default)"] / medians[small_name]
    print(f"target: default timeline at {size:,} / {small_name.split(' at ')[1]} = {ratio:.2f}x "
          f"(target <= {TARGET_TIMELINE}x: {'meets' if ratio <= TARGET_TIMELINE else 'MISSES'})")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="smoke run: tiny sizes, numbers mean nothing")
    parser.add_argument("--verify-baseline", type=float, metavar="X",
                        help="today's verify in x floor (docs/performance.md) to print the <= 0.3x target")
    args = parser.parse_args(argv)
    if args.quick:
        args.size, args.runs, args.rounds = 200, 1, 2
    measure.become_subreaper()
    run(size=args.size, runs=args.runs, rounds=args.rounds, verify_baseline=args.verify_baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

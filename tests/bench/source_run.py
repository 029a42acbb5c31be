"""The source-run plugin (hooks/intent-loop) against the binaries' extracted runtime (issue 24).

Both run the same library; what differs is the launcher (a committed sh script that reads the
cached interpreter, against the binary's sh prefix) and where the bytecode comes from (the data
root's pycache prefix, against the extracted runtime's __pycache__). Timed in alternating rounds
(floor, binary, source, floor, source, binary, ...) so that both meet the same machine, each as a
p95 ratio to the floor, and their difference; then the deterministic figures that do not depend
on noise: modules imported and the minimum of 15 `-X importtime` totals of our modules, and the
same start with `-B` (no bytecode written, so every module is compiled on every start).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import measure

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
SOURCE = ROOT / "hooks" / "intent-loop"
PYTHON = os.path.realpath(sys.executable)
IMPORTTIME_RUNS = 15


def launcher_code():
    """The Python the source launcher runs (its `code='...'` value)."""
    text = SOURCE.read_text()
    return re.search(r"^code='(.*?)'$", text, re.S | re.M).group(1)


def _p95(samples):
    return measure.percentile(samples, 0.95)


def compare(name, entry, binary, make_payload, env, timed, *, rounds, before_round=None):
    """One hook path, both ways, alternating; prints and returns (binary p95x, source p95x)."""
    source = [str(SOURCE), entry]
    timed([str(binary)], make_payload(-1), env)  # warm: extraction, and the source's bytecode and cache
    timed(source, make_payload(-2), env)
    floor, built, from_source = [], [], []
    for i in range(rounds):
        order = ((built, [str(binary)]), (from_source, source))
        for samples, cmd in (order if i % 2 == 0 else order[::-1]):
            if before_round is not None:
                before_round()
            floor.append(timed([PYTHON, "-I", "-S", "-c", "pass"], b"", env, is_hook=False).elapsed)
            samples.append(timed(cmd, make_payload(i), env).elapsed)
    fp = _p95(floor)
    b, s = _p95(built) / fp, _p95(from_source) / fp
    print(f"{name:<44} binary {b:5.2f}x   source {s:5.2f}x   source - binary {s - b:+5.2f}x p95   "
          f"(median {statistics.median(built) / statistics.median(floor):4.2f}x / "
          f"{statistics.median(from_source) / statistics.median(floor):4.2f}x)", flush=True)
    return b, s


def _our_modules(stderr):
    """{module: cumulative us} of the intent_loop and hooks modules in `-X importtime` output."""
    found = {}
    for line in stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|\s*(\S+)$", line)
        if match and match.group(3).split(".")[0] in ("intent_loop", "hooks"):
            found[match.group(3)] = int(match.group(1))  # self time: the sum is the total without double counts
    return found


def clean_tree(where):
    """lib/ and hooks/ copied without any __pycache__, as Codex's plugin copy is: with -B nothing
    is read from a __pycache__ a test run of the checkout left behind, so every module compiles."""
    shutil.rmtree(where, ignore_errors=True)
    for part in ("lib", "hooks"):
        shutil.copytree(ROOT / part, where / part, ignore=shutil.ignore_patterns("__pycache__"))
    return where


def importtime(payload, env, workspace):
    """(modules, min total ms) of the commands path each way, and with -B, from -X importtime."""
    root = Path(env["INTENT_LOOP_DATA_DIR"])
    tree = clean_tree(root.parent / "plugin-copy")
    launcher = tree / "hooks" / "intent-loop"
    code = launcher_code()
    runtime = sorted(root.glob("runtime/*/intent-loop-user-prompt_*/site-packages"))
    if not runtime:
        raise SystemExit("bench: no extracted runtime of intent-loop-user-prompt to measure")
    site = str(runtime[-1])
    # what the binary's fast path runs (launch/fast_path.py), its SIGTERM handler aside
    fast = f"import sys\nsys.argv=[sys.argv[1]]\nsys.path[0:0]=[{site!r}]\nfrom hooks.user_prompt import main\nmain()"
    ways = {
        "binary (extracted runtime)": [PYTHON, "-I", "-S", "-X", "importtime", "-c", fast,
                                       str(DIST / "intent-loop-user-prompt")],
        # the launcher's code takes: tree, module, function, is_hook, the bytecode directory ("": none), $0
        "source (pycache under the data root)": [PYTHON, "-I", "-S", "-X", "importtime", "-c", code, str(tree),
                                                 "hooks.user_prompt", "main", "1", f"{root}/pycache", str(launcher)],
        "source with -B (nothing written)": [PYTHON, "-I", "-S", "-B", "-X", "importtime", "-c", code, str(tree),
                                             "hooks.user_prompt", "main", "1", "", str(launcher)],
    }
    subprocess.run(ways["source (pycache under the data root)"], input=payload(-3), env=env, cwd=workspace,
                   capture_output=True, timeout=60)  # the copy's bytecode, once
    results = {}
    for label, cmd in ways.items():
        totals, count = [], None
        for i in range(IMPORTTIME_RUNS):
            done = subprocess.run(cmd, input=payload(i), env=env, cwd=workspace, capture_output=True, timeout=60)
            mods = _our_modules(done.stderr.decode(errors="replace"))
            count = len(mods)
            totals.append(sum(mods.values()) / 1000)
        if not count:  # the launcher's code did not run (its arguments changed): a figure of 0 would mislead
            why = done.stderr.decode(errors="replace")[-400:]
            raise SystemExit(f"bench: {label} imported none of our modules: {why}")
        results[label] = (count, min(totals))
        print(f"{label:<44} {count} of our modules, min -X importtime {min(totals):6.2f} ms "
              f"(of {IMPORTTIME_RUNS} runs)", flush=True)
    return results


def run(env, workspace, timed, payload, *, rounds, snapshot=None):
    """Every compared path at the project `env` names; then the deterministic figures on a
    throw-away project of its own."""
    print("== the source-run plugin (hooks/intent-loop) vs the binaries, alternating rounds ==", flush=True)
    rows = [
        ("SessionStart resume", "session-start", DIST / "intent-loop-session-start",
         lambda i: payload("SessionStart", workspace, i, source="resume"), None),
        ("prompt without commands", "user-prompt", DIST / "intent-loop-user-prompt",
         lambda i: payload("UserPromptSubmit", workspace, i, prompt=f"keep going {i}"), None),
        ("prompt with two commands", "user-prompt", DIST / "intent-loop-user-prompt",
         lambda i: payload("UserPromptSubmit", workspace, i,
                           prompt=f"intent: must keep API {i}\nintent: include src/mod{i}/"),
         snapshot.restore if snapshot else None),
        ("Stop", "stop", DIST / "intent-loop-stop",
         lambda i: payload("Stop", workspace, i, stop_hook_active=False, last_assistant_message="Done."),
         snapshot.restore if snapshot else None),
    ]
    for name, entry, binary, make, before in rows:
        compare(name, entry, binary, make, env, timed, rounds=rounds, before_round=before)
    with tempfile.TemporaryDirectory(prefix="il-bench-src-") as tmp:
        small = dict(env, INTENT_LOOP_DATA_DIR=str(Path(tmp, "root")))
        ws = Path(tmp, "ws")
        ws.mkdir()
        make = lambda i: payload("UserPromptSubmit", ws, i,  # noqa: E731
                                 prompt=f"intent: must keep API {i}\nintent: include src/mod{i}/")
        timed([str(DIST / "intent-loop-user-prompt")], make(-1), small)
        timed([str(SOURCE), "user-prompt"], make(-2), small)
        importtime(make, small, ws)
        shutil.rmtree(tmp, ignore_errors=True)

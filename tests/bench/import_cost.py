"""What each hook path imports, and what importing it costs, against another revision (issue 26).

    python3 tests/bench/import_cost.py [--runs 15] [--against REV]

For each hook path (SessionStart resume, a prompt without commands, one with two commands, Stop)
it prints the number of our modules the hook process loads, the syncs it made and the bytes it wrote
to storage before its answer, and the minimum, over `--runs` runs,
of the import time `-X importtime` reports for them (the sum of their self times). Wall-clock p95
on two shared cores moves by more than the difference looked for; the minimum import time and
the module count do not. `--against REV` measures the same in a worktree of REV, in the same
run, and prints the difference. Each run is a fresh process on the source tree (`-I -S`, lib/ on
sys.path, as the launcher runs it), bytecode cached as the installed plugin caches it.
"""
import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "lib")]
from helpers.hook_paths import code_for  # noqa: E402 (the run tests/hook/test_hook_modules.py pins)
from helpers.settle import settle  # noqa: E402

AFTER = '''try:  # the syncs made and bytes written before the answer (an older tree counts none)
    from intent_loop.base import platform
    sys.stderr.write("syncs:" + repr(platform.SYNCS) + "\\n")
    sys.stderr.write("written:" + repr(platform.WRITTEN["bytes"]) + "\\n")
except (ImportError, AttributeError):
    pass'''
PATHS = ("SessionStart resume", "prompt without commands", "prompt with two commands", "Stop")


def payloads(ws, n):
    base = {"transcript_path": None, "cwd": str(ws), "model": "m", "permission_mode": "default", "session_id": "s-1"}
    prompt = dict(base, hook_event_name="UserPromptSubmit")
    return {
        "SessionStart resume": ("SessionStart", dict(base, hook_event_name="SessionStart", source="resume")),
        "prompt without commands": ("UserPromptSubmit", dict(prompt, turn_id=f"t-p{n}", prompt="please go on")),
        "prompt with two commands": ("UserPromptSubmit", dict(prompt, turn_id=f"t-c{n}", prompt=(
            f"intent: must keep API {n}\nintent: include src/m{n}/"))),
        "Stop": ("Stop", dict(base, turn_id=f"t-c{n}", hook_event_name="Stop", stop_hook_active=False,
                              last_assistant_message="Done.")),
    }


def run(tree, event, payload, env, *, importtime):
    code = code_for(event, lib=tree / "lib", root=tree, after=AFTER)  # an older tree's hooks/ has the same names
    flags = ["-I", "-S", "-X", f"pycache_prefix={env['PYCACHE']}"] + (["-X", "importtime"] if importtime else [])
    done = subprocess.run([sys.executable, *flags, "-c", code], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=60)
    settle(env["INTENT_LOOP_DATA_DIR"], payload["cwd"], timeout=30)  # the next run starts with no work pending
    if done.returncode != 0:
        raise SystemExit(f"import_cost: the hook failed in {tree}: {done.stderr.decode()[-2000:]}")
    lines = done.stderr.decode().splitlines()
    ours = [line.split("|") for line in lines if line.startswith("import time:")]
    rows = [(int(r[0].split(":")[1]), r[2].strip()) for r in ours if r[2].strip().startswith(("intent_loop", "hooks"))]
    syncs = next((ast.literal_eval(line[len("syncs:"):]) for line in lines if line.startswith("syncs:")), {})
    written = next((int(line[len("written:"):]) for line in lines if line.startswith("written:")), None)
    return len(rows), sum(us for us, _name in rows), sum(v for k, v in syncs.items() if k != "directory"), written


def measure(tree, runs):
    """{path: (modules, minimum import µs, syncs, bytes written)} for one source tree, the last two
    made before the answer by the hook process itself (its after-answer child not counted)."""
    with tempfile.TemporaryDirectory(prefix="il-imports-", ignore_cleanup_errors=True) as work:
        ws = Path(work, "ws")
        ws.mkdir()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": work, "INTENT_LOOP_DATA_DIR": str(Path(work, "d")),
               "PYCACHE": str(Path(work, "pyc"))}
        event, payload = payloads(ws, 0)["prompt with two commands"]
        payload = dict(payload, prompt="intent: goal ship the parser")
        run(tree, event, payload, env, importtime=False)
        out = {}
        for name in PATHS:
            best, count, syncs, written = None, None, None, None
            for n in range(runs + 1):  # the first run compiles the bytecode: not counted
                event, payload = payloads(ws, n)[name]
                count, us, syncs, written = run(tree, event, payload, env, importtime=True)
                if n and (best is None or us < best):
                    best = us
            out[name] = (count, best, syncs, written)
        return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--against", metavar="REV", help="also measure this revision (a git worktree)")
    args = parser.parse_args(argv)
    here = measure(ROOT, args.runs)
    other = None
    if args.against:
        with tempfile.TemporaryDirectory(prefix="il-rev-") as tmp:
            tree = Path(tmp, "tree")
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.against], cwd=ROOT, check=True,
                           capture_output=True)
            try:
                other = measure(tree, args.runs)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    print(f"hook path                  | modules | min import (of {args.runs}) | syncs, bytes before the answer" +
          (f" | {args.against}: modules, min import | difference" if other else ""))
    for name in PATHS:
        count, us, syncs, written = here[name]
        shown = "-" if written is None else written
        line = f"{name:<26} | {count:>7} | {us / 1000:>8.2f} ms | {syncs:>2}, {shown:>6}"
        if other:
            o_count, o_us, _o_syncs, _o_written = other[name]
            line += (f" | {o_count:>3}, {o_us / 1000:6.2f} ms | {count - o_count:+d} modules, "
                     f"{(us - o_us) / 1000:+.2f} ms")
        print(line)


if __name__ == "__main__":
    main()

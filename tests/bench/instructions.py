"""Instructions executed per hook run, the source-run plugin against the binaries (issue 24).

    python3 tests/bench/instructions.py [--runs 3]

Wall-clock p95 on two shared cores moves by more than the difference looked for (0.1x), so this
counts what does not move: the user-space instructions of the processes Codex waits for in one
hook run (the launcher's shell and Python; `valgrind --tool=callgrind --trace-children=yes`; the
child forked to work after the answer is left out, as Codex does not wait for it), the minimum of
`--runs` runs, as a ratio to `python -I -S -c pass` counted the same way. Needs valgrind; each run takes a few seconds.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
SOURCE = ROOT / "hooks" / "intent-loop"
PYTHON = os.path.realpath(sys.executable)
SESSION = "01a22b43-73c0-7793-8e50-f1583941ed4b"


def count(cmd, stdin, env, work):
    for old in glob.glob(os.path.join(work, "cg.out.*")):
        os.unlink(old)
    subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                    f"--callgrind-out-file={work}/cg.out.%p", *cmd], input=stdin, env=env, cwd=work,
                   capture_output=True, timeout=600, check=False)
    first = {}  # per command line, the process that started first: a forked child (the work after the
    for path in glob.glob(os.path.join(work, "cg.out.*")):  # answer) has its parent's command line, a later pid
        pid, cmd, summary = int(path.rsplit(".", 1)[1]), None, 0
        with open(path) as fh:
            for line in fh:
                if line.startswith("cmd:"):
                    cmd = line
                elif line.startswith("summary:"):
                    summary = int(line.split()[1])
                    break
        if cmd not in first or pid < first[cmd][0]:
            first[cmd] = (pid, summary)
    return sum(summary for _pid, summary in first.values())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions: valgrind is not installed (Debian: apt-get install valgrind)")
    with tempfile.TemporaryDirectory(prefix="il-instr-") as work:
        workspace = Path(work, "ws")
        workspace.mkdir()
        env = {"PATH": os.environ.get("PATH", ""), "HOME": work, "INTENT_LOOP_DATA_DIR": str(Path(work, "root"))}
        counter = iter(range(10**6))

        def payload(event, **extra):
            body = {"session_id": SESSION, "cwd": str(workspace), "hook_event_name": event,
                    "turn_id": f"turn-{next(counter)}", "transcript_path": None, **extra}
            return json.dumps(body).encode()

        rows = [
            ("SessionStart resume", "session-start", "intent-loop-session-start",
             lambda: payload("SessionStart", source="resume")),
            ("prompt without commands", "user-prompt", "intent-loop-user-prompt",
             lambda: payload("UserPromptSubmit", prompt="keep going")),
            ("prompt with two commands", "user-prompt", "intent-loop-user-prompt",
             lambda: payload("UserPromptSubmit", prompt=f"intent: must keep API {next(counter)}\n"
                                                        f"intent: include src/m{next(counter)}/")),
            ("Stop", "stop", "intent-loop-stop",
             lambda: payload("Stop", stop_hook_active=False, last_assistant_message="Done.")),
        ]
        for _name, entry, binary, make in rows:  # warm: extraction, bytecode, the cached interpreter
            for cmd in ([str(DIST / binary)], [str(SOURCE), entry]):
                subprocess.run(cmd, input=make(), env=env, capture_output=True, timeout=60, check=True)
        floor = min(count([PYTHON, "-I", "-S", "-c", "pass"], b"", env, work) for _ in range(args.runs))
        print(f"floor `python -I -S -c pass`: {floor:,} instructions (min of {args.runs})")
        for name, entry, binary, make in rows:
            # alternating, since a prompt with commands grows the task it meets: each way sees the same sizes
            ways = {"binary": ([str(DIST / binary)], []), "source": ([str(SOURCE), entry], [])}
            for i in range(args.runs):
                for cmd, counts in (list(ways.values()) if i % 2 == 0 else list(ways.values())[::-1]):
                    counts.append(count(cmd, make(), env, work))
            built, source = min(ways["binary"][1]), min(ways["source"][1])
            print(f"{name:<28} binary {built / floor:5.2f}x   source {source / floor:5.2f}x   "
                  f"source - binary {(source - built) / floor:+5.3f}x   ({built:,} / {source:,})", flush=True)


if __name__ == "__main__":
    main()

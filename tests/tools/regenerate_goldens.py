"""Rewrite tests/fixtures/replay/*.golden.json from the built binaries (review the diff!).

    python3 build.py && .venv/bin/python tests/tools/regenerate_goldens.py
"""
import glob
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[0:0] = [str(ROOT / "tests"), str(ROOT / "lib")]

from helpers.replay_golden import normalize  # noqa: E402


def main():
    for sequence in sorted(glob.glob(str(ROOT / "tests" / "fixtures" / "replay" / "*.jsonl"))):
        out = subprocess.run([str(ROOT / "dist" / "intent-loop"), "replay", "--json", sequence],
                             capture_output=True, text=True, check=False)
        doc = json.loads(out.stdout)
        golden = [{"event": s["event"], "exit_code": s["exit_code"], "answer": normalize(s["answer"])}
                  for s in doc["steps"]]
        Path(sequence[: -len(".jsonl")] + ".golden.json").write_text(
            json.dumps(golden, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        print(Path(sequence).name, "exit", out.returncode, "events", doc["ledger"].get("events"))


if __name__ == "__main__":
    main()

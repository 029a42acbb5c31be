"""Rewrite the golden files (review the diff!): tests/fixtures/receipts.golden.txt, the words of
every receipt (in process), and tests/fixtures/replay/*.golden.json, from the built binaries.

    .venv/bin/python tests/tools/regenerate_goldens.py receipts   # after rewording a receipt
    python3 build.py && .venv/bin/python tests/tools/regenerate_goldens.py replay
    python3 build.py && .venv/bin/python tests/tools/regenerate_goldens.py   # both
"""
import glob
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[0:0] = [str(ROOT / "tests"), str(ROOT / "lib")]

from helpers.receipt_golden import every_receipt  # noqa: E402
from helpers.replay_golden import normalize  # noqa: E402

RECEIPTS = ROOT / "tests" / "fixtures" / "receipts.golden.txt"


def receipts():
    RECEIPTS.write_text(every_receipt())
    print(RECEIPTS.name, "rewritten")


def replay():
    for sequence in sorted(glob.glob(str(ROOT / "tests" / "fixtures" / "replay" / "*.jsonl"))):
        out = subprocess.run([str(ROOT / "dist" / "intent-loop"), "replay", "--json", sequence],
                             capture_output=True, text=True, check=False)
        doc = json.loads(out.stdout)
        golden = [{"event": s["event"], "exit_code": s["exit_code"], "answer": normalize(s["answer"])}
                  for s in doc["steps"]]
        Path(sequence[: -len(".jsonl")] + ".golden.json").write_text(
            json.dumps(golden, indent=2, sort_keys=True, ensure_ascii=False) + "\n")
        print(Path(sequence).name, "exit", out.returncode, "events", doc["ledger"].get("events"))


def main(argv):
    kinds = {"receipts": receipts, "replay": replay}
    wanted = argv or list(kinds)
    unknown = [kind for kind in wanted if kind not in kinds]
    if unknown:
        sys.exit(f"usage: regenerate_goldens.py [{' | '.join(kinds)}]... (unknown: {' '.join(unknown)})")
    for kind in wanted:
        kinds[kind]()


if __name__ == "__main__":
    main(sys.argv[1:])

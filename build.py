#!/usr/bin/env python3
"""The one entry for people and CI: set up, build dist/, test, benchmark, demo.

    python3 build.py            build the four binaries into dist/
    python3 build.py test       set up, build, run the whole test suite
    python3 build.py demo       set up, build, run the main job on an embedded sample
    python3 build.py bench      hook start-up ratios against `python3 -I -S -c pass`
    python3 build.py bench-ledger   append cost ratios at 10 / 1,000 / 10,000 events

Every step is idempotent: the virtual environment (.venv/), the npm cache for the real-Codex
end-to-end test (.cache/npm/) and dist/ are reused when their inputs did not change.
"""
import hashlib
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
CACHE = ROOT / ".cache"
DIST = ROOT / "dist"
SETUP_STAMP = VENV / ".intent-loop-deps"
NPM_DIR = ROOT / "tests" / "e2e" / "npm"
NPM_CACHE = CACHE / "npm"


def dev_requirements():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["dependency-groups"]["dev"]


def venv_python():
    return VENV / "bin" / "python3"


def run(cmd, **kwargs):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def create_venv():
    """python3 -m venv, or a pip-less venv seeded by the outer pip where ensurepip is missing."""
    try:
        run([sys.executable, "-m", "venv", "--clear", VENV])
        return
    except subprocess.CalledProcessError:
        print("venv with pip failed (ensurepip missing?); trying a venv without pip", flush=True)
    run([sys.executable, "-m", "venv", "--clear", "--without-pip", VENV])
    try:
        run([sys.executable, "-m", "pip", "--python", venv_python(), "install", "pip"])
    except subprocess.CalledProcessError:
        sys.exit(
            "build.py: cannot create a virtual environment with pip.\n"
            "Install the venv module (Debian/Ubuntu: apt-get install python3-venv) and run again."
        )


def ensure_venv():
    """Create or reuse .venv/ with exactly the pinned dev dependencies; returns its python."""
    reqs = dev_requirements()
    stamp = hashlib.sha256("\n".join(reqs + [sys.version]).encode()).hexdigest()
    if venv_python().exists() and SETUP_STAMP.exists() and SETUP_STAMP.read_text() == stamp:
        return venv_python()
    if not venv_python().exists():
        create_venv()
    run([venv_python(), "-m", "pip", "install", "--disable-pip-version-check", "-q", *reqs])
    SETUP_STAMP.write_text(stamp)
    return venv_python()


def reexec_in_venv(argv):
    """Run this script again inside .venv/ so every step sees the pinned packages."""
    python = ensure_venv()
    if Path(sys.prefix).resolve() != VENV.resolve():
        os.execv(str(python), [str(python), str(ROOT / "build.py"), *argv])


def ensure_npm_codex():
    """Install the pinned @openai/codex from the committed lockfile into .cache/npm (git-ignored)."""
    lock = NPM_DIR / "package-lock.json"
    if not lock.exists() or shutil.which("npm") is None:
        return None
    stamp_text = hashlib.sha256(lock.read_bytes()).hexdigest()
    target = NPM_CACHE
    stamp = target / ".lock-sha256"
    binary = target / "node_modules" / ".bin" / "codex"
    if binary.exists() and stamp.exists() and stamp.read_text() == stamp_text:
        return binary
    target.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(NPM_DIR / name, target / name)
    try:
        run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=target)
    except subprocess.CalledProcessError:
        print("build.py: npm ci failed; the real-Codex end-to-end test will be skipped", flush=True)
        return None
    stamp.write_text(stamp_text)
    return binary


def cmd_build(_args):
    sys.path.insert(0, str(ROOT / "lib"))
    from intent_loop.packaging import build_all

    for path in build_all(ROOT, DIST):
        print(f"built {path.relative_to(ROOT)}")
    return 0


def cmd_test(args):
    cmd_build([])
    codex = ensure_npm_codex()
    env = dict(os.environ)
    if codex is not None:
        env["INTENT_LOOP_CODEX_BIN"] = str(codex)
    result = subprocess.run([str(venv_python()), "-m", "pytest", *args], cwd=ROOT, env=env)
    return result.returncode


def cmd_demo(args):
    cmd_build([])
    result = subprocess.run([str(DIST / "intent-loop"), "demo", *args], cwd=ROOT)
    return result.returncode


def cmd_bench(args):
    cmd_build([])
    return subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "bench_hooks.py"), *args]).returncode


def cmd_bench_ledger(args):
    return subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "bench_ledger.py"), *args]).returncode


COMMANDS = {
    "build": cmd_build,
    "test": cmd_test,
    "demo": cmd_demo,
    "bench": cmd_bench,
    "bench-ledger": cmd_bench_ledger,
}


def main(argv):
    name = argv[0] if argv else "build"
    if name in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    if name not in COMMANDS:
        print(f"build.py: unknown command {name!r}; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    reexec_in_venv(argv or ["build"])
    return COMMANDS[name](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

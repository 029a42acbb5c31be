"""Which costly modules does some code load, in a fresh `python -I -S` like a hook's?"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def costly_modules_loaded(statements, costly):
    """Run `statements` (with lib/ and the repo root importable) and return the sorted subset of
    `costly` module names it loaded."""
    code = "\n".join([
        "import sys",
        f"sys.path[:0] = [{os.path.join(ROOT, 'lib')!r}, {ROOT!r}]",
        statements,
        f"print(','.join(sorted(set({tuple(costly)!r}) & set(sys.modules))))",
    ])
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60,
                          env={"PATH": os.environ.get("PATH", "")})
    assert done.returncode == 0, done.stderr
    return [name for name in done.stdout.strip().split(",") if name]

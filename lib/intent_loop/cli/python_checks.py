"""doctor's `interpreter` and `hook_python` checks: which Python this install and its hooks run, probed
for real, and only once it passes the launchers' location rules (launch/python_place.py)."""
import os
import subprocess
import sys

from intent_loop.errors import ErrorCode
from intent_loop.launch import python_place

PROBE = "import sys;print('%d.%d.%d'%sys.version_info[:3])"  # parses in every Python, 2.7 included
PROBE_SECONDS = 10
BINARY_MARK = b'py="${INTENT_LOOP_PYTHON:-'  # the first line a binary's launcher runs (launch/launcher.sh)
SEARCHED = ("python3", "python3.13", "python3.12", "python3.11")  # find_python.sh's names
SEARCHED_DIRS = ("/opt/homebrew/bin", "/usr/local/bin", "/usr/bin")
NEXT_ACTION = ("install Python 3.11+ under a trusted Python root (/usr/bin, /usr/local, /opt/homebrew, pyenv, uv, "
               "asdf, mise, conda: docs/install.md) or set INTENT_LOOP_PYTHON, or name its directory in "
               "INTENT_LOOP_PYTHON_ROOTS, in the environment Codex starts from")


def check(name, ok, detail, next_action=None):
    return {"name": name, "ok": bool(ok), "detail": detail, "next_action": None if ok else next_action}


def _cwd():
    try:
        return os.getcwd()
    except OSError:
        return None


def probe(python, *, env):
    """(version, None) when `python` passes the location rules and answers a version of 3.11 or later,
    run from / (a version shim reads the cwd's .python-version); else (None, why not)."""
    chosen, why = python_place.choose(python, cwd=_cwd(), env=env)
    if chosen is None:
        return None, f"not run: {why}"
    try:
        done = subprocess.run([chosen, "-I", "-S", "-c", PROBE], cwd="/", stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=PROBE_SECONDS)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{chosen} does not run ({exc.__class__.__name__})"
    version = done.stdout.strip()
    parts = version.split(".")[:2]
    if done.returncode != 0 or len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None, f"{chosen} gave no version (exit {done.returncode}): another program is at that path"
    if tuple(int(part) for part in parts) < (3, 11):
        return None, f"{chosen} is Python {version}, older than 3.11"
    return version, None


# -- interpreter: what this install runs ---------------------------------------------------------
def _launcher_kind(path):
    """'binary', 'source' (hooks/intent-loop, the repository plugin's), or None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return None
    if BINARY_MARK in head:
        return "binary"
    return "source" if head.startswith(b"#!/bin/sh") and os.path.basename(os.path.dirname(path)) == "hooks" else None


def _baked(path):
    """The interpreter a binary's launcher names (build.py bakes it in; empty: it searches)."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    start = head.index(BINARY_MARK) + len(BINARY_MARK)
    return head[start:head.index(b"}", start)].decode("utf-8", "replace")


def interpreter_check(binary_names, *, env, program=None):
    """A source-run install (the repository plugin) has no binaries by design: it is checked by what
    it runs. A build's binaries are checked by the interpreter they name, probed for real."""
    program = program if program is not None else (sys.argv[0] if sys.argv else "")
    here = f"this command runs {sys.executable} ({sys.version.split()[0]})"
    kind = _launcher_kind(os.path.realpath(program)) if program else None
    if kind != "binary":
        what = ("a source-run install (the repository plugin): it runs lib/ with the Python the launcher chose"
                if kind == "source" else "no built binaries run this command")
        chosen, why = python_place.choose(sys.executable, cwd=_cwd(), env=env)
        return check("interpreter", chosen is not None, f"{what}; {here}" + (f"; {why}" if why else ""),
                     f"{ErrorCode.PYTHON_NOT_FOUND}: {NEXT_ACTION}")
    directory = os.path.dirname(os.path.realpath(program))
    missing = [n for n in binary_names if _launcher_kind(os.path.join(directory, n)) != "binary"]
    if missing:
        return check("interpreter", False, f"{', '.join(missing)} missing in {directory}; {here}",
                     "rebuild with `python3 build.py`")
    baked = _baked(os.path.realpath(program))
    version, why = probe(baked, env=env) if baked else (None, "none named at build time")
    if version is not None:
        return check("interpreter", True, f"{len(binary_names)} binaries name {baked} (Python {version}); {here}")
    return check("interpreter", True, f"{len(binary_names)} binaries checked; the interpreter they name is not "
                                      f"used ({why}): they use the Python found at run time instead; {here}")


# -- hook_python: what the hooks run -------------------------------------------------------------
def _found_by_search(env):
    """(first passing, refused) over find_python.sh's candidates, none run (a rules check only)."""
    names = [os.path.join(d, n) for d in (env.get("PATH") or "").split(":") if d.startswith("/") for n in SEARCHED]
    names += [os.path.join(d, n) for d in SEARCHED_DIRS for n in SEARCHED]
    refused = []
    for name in dict.fromkeys(names):
        if not os.access(name, os.X_OK) or os.path.isdir(name):
            continue
        chosen, why = python_place.choose(name, cwd=_cwd(), env=env)
        if chosen is not None:
            return chosen, refused
        refused.append(why)
    return None, refused


def hook_python_check(data_roots, told, *, env, ago):
    """The interpreter the hooks recorded, re-checked by the rules and probed; or why none runs."""
    if told is not None:
        detail = f"{ErrorCode.PYTHON_NOT_FOUND}: a hook found no Python 3.11+ {ago(told)} and recorded nothing since"
        chosen, refused = _found_by_search(env)
        if chosen is None and refused:
            detail += ("; the only Python 3.11+ found lies outside the trusted Python roots or where the agent "
                       "can write (" + refused[0] + ")")
        return check("hook_python", False, detail, NEXT_ACTION)
    records = [(root, r) for root in data_roots for r in [python_place.read_record(root)] if r]
    if not records:
        return check("hook_python", True, "no hook has recorded an interpreter yet (INTENT_LOOP_PYTHON, "
                                          "or the binaries' own, is used as given)")
    root, record = records[0]
    version, why = probe(record["py"], env=env)
    if version is None:
        return check("hook_python", False, f"{ErrorCode.PYTHON_NOT_FOUND}: the hooks' recorded interpreter "
                                           f"{record['py']}: {why}", NEXT_ACTION)
    detail = f"the hooks run {record['py']} (Python {version}, recorded in {root})"
    if not _same_identity(record):
        detail += "; it changed since it was recorded: the next hook chooses again"
    return check("hook_python", True, detail)


def _same_identity(record):
    try:
        st = os.stat(record["py"])
    except OSError:
        return False
    return record.get("py_id", "").split()[:4] == [str(st.st_dev), str(st.st_ino), str(st.st_size),
                                                     str(st.st_mtime_ns)]

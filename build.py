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
import json
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


# -- the binaries ---------------------------------------------------------------------------
sys.path.insert(0, str(ROOT / "lib"))
from intent_loop.launch.binaries import BINARIES, BY_NAME, HOOKS, PLUGIN_COMMAND, handler_group  # noqa: E402

SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01, the zip epoch: builds from one commit are byte-identical
PLUGIN_HOOKS = ROOT / "hooks.json"
PLUGIN_DESCRIPTION = ("intent-loop: records the user's `intent:` commands and publishes the Guard contract "
                      "(needs a built dist/: python3 build.py)")

# The launcher's Python: find the data root (the embedded _data_root source; the CLI uses a
# private temp runtime until the data root exists, so a dry run creates nothing there), import from the
# extracted runtime when its completion marker is there, else run this same file as a zip so
# shiv extracts it. Kept free of single quotes because it sits inside sh '...'.
LAUNCHER_CODE = """import sys,os
{early_sigterm}B=os.path.realpath(sys.argv[1]);A=sys.argv[2:]
{data_root_source}
def _runtime_root():
    try:
        f=find_data_root(os.environ,B)
    except ValueError:
        f=None
    if f and (H or os.path.isdir(f[0])):
        return os.path.join(f[0],"runtime",K)
    if H:
        return None
    u=os.path.join(os.environ.get("TMPDIR") or "/tmp","intent-loop-runtime-%d" % os.getuid())
    os.makedirs(u,0o700,exist_ok=True)
    s=os.lstat(u)
    if s.st_uid!=os.getuid() or s.st_mode & 0o077 or not os.path.isdir(u) or os.path.islink(u):
        sys.exit("intent-loop: unsafe runtime directory %s; set CODEX_HOME or INTENT_LOOP_DATA_DIR" % u)
    return os.path.join(u,K)
K="{build_id}";E="{module}";F="{function}";H={is_hook}
R=_runtime_root()
if R is None:
    while os.read(0,65536):
        pass
    os.write(1,b'{{"continue":true}}')
    sys.exit(0)
S=os.path.join(R,os.path.basename(B)+"_"+K,"site-packages")
M=os.path.join(S,".intent-loop-complete")
if os.path.isfile(M):
    sys.path[0:0]=[S];sys.argv=[B]+A
    try:
        m=__import__(E,fromlist=[F])
    except ImportError:
        m=None
    if m is not None:
        getattr(m,F)()
        sys.exit(0)
    os.unlink(M)
for k in [k for k in os.environ if k.startswith("SHIV_")]:
    del os.environ[k]
if os.path.isdir(S):
    os.environ["SHIV_FORCE_EXTRACT"]="1"
os.makedirs(R,0o700,exist_ok=True)
os.environ["SHIV_ROOT"]=R;os.environ["INTENT_LOOP_EXTRACTING"]=S
os.execv(sys.executable,[sys.executable,"-I","-S",B]+A)
"""

# A hook killed before hook_runtime installs its own handler still answers fail-open.
EARLY_SIGTERM = """import _signal,posix
_signal.signal(15,lambda *a:(posix.write(1,b'{"continue":true}'),posix._exit(0)))
"""

# The shell finds the common data roots itself (INTENT_LOOP_DATA_DIR, CODEX_HOME, ~/.codex, in
# the order of intent_loop/_data_root.py); when that runtime is complete it starts Python on a
# few lines that import the entry point. Anything else (PLUGIN_DATA, a plugin-cache path, a
# symlinked binary, no runtime yet, a relative override) goes to the full launcher above, which
# resolves the data root in Python and extracts. Python compiling the full launcher costs ~1.4 ms,
# a tenth of an interpreter start, so the common case skips it.
FAST_CODE = """import sys
{early_sigterm}S=sys.argv[1];sys.argv=sys.argv[2:];sys.path[0:0]=[S]
try:
    from {module} import {function} as entry
except ImportError:
    import os
    os.unlink(S+"/.intent-loop-complete");os.execv("/bin/sh",["/bin/sh"]+sys.argv)
entry()
"""

LAUNCHER_SH = """#!/bin/sh
# intent-loop {name}: this /bin/sh launcher is followed by a shiv zip (README: "Binaries").
PY="${{INTENT_LOOP_PYTHON:-{python}}}"
if [ -x "$PY" ]; then
  R=
  if [ -n "${{INTENT_LOOP_DATA_DIR:-}}" ]; then
    case $INTENT_LOOP_DATA_DIR in /*) R=$INTENT_LOOP_DATA_DIR ;; esac
  elif [ -n "${{CODEX_HOME:-}}" ]; then
    case $CODEX_HOME in /*) R=$CODEX_HOME/plugin-data/intent-loop/v1 ;; esac
  elif [ -z "${{PLUGIN_DATA:-}}" ]; then
    case $0 in */plugins/cache/*) ;; *) case ${{HOME:-}} in /?*) [ -d "$HOME/.codex" ] && R=$HOME/.codex/plugin-data/intent-loop/v1 ;; esac ;; esac
  fi
  S=$R/runtime/{build_id}/${{0##*/}}_{build_id}/site-packages
  if [ -n "$R" ] && [ ! -L "$0" ] && [ -f "$S/.intent-loop-complete" ]; then
    {run} "$PY" -I -S -c "{fast_code}" "$S" "$0" "$@"{after_run}
  fi
  {run} "$PY" -I -S -c "{code}" "$0" "$@"{after_run}
fi
{fallback}
"""
# A hook keeps the shell as its parent: whatever kills Python before hook_runtime answers (a
# crash inside shiv's bootstrap, a missing module), Codex still gets continue:true and exit 0.
# The shell ignores SIGTERM (so does Python until hook_runtime's handler, which answers fail-open,
# is in place): a TERM sent to the shell alone or to the whole group never leaves Codex without
# an answer.
HOOK_RUN, HOOK_AFTER_RUN = "trap '' TERM;", " || printf '{\"continue\":true}'; exit 0"
CLI_RUN, CLI_AFTER_RUN = "exec", ""

HOOK_FALLBACK = "cat >/dev/null; printf '{\"continue\":true}'; exit 0"
CLI_FALLBACK = 'echo "intent-loop: no Python at $PY; set INTENT_LOOP_PYTHON to a Python 3.11+ interpreter" >&2; exit 1'


def _sh_double_quoted(text):
    """Escape the four characters that stay special inside a POSIX sh double-quoted string."""
    for char in ("\\", '"', "$", "`"):
        text = text.replace(char, "\\" + char)
    return text


def _embedded_data_root_source():
    import ast

    source = (ROOT / "lib" / "intent_loop" / "storage" / "data_root.py").read_text()
    tree = ast.parse(source)
    for node in ast.walk(tree):  # drop docstrings: they only lengthen the launcher
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]
    # the library reads `os` through intent_loop.storage.fast_os; the launcher runs before intent_loop is
    # importable and has the real `os` already, which the same calls behave identically on
    tree.body = [ast.Import(names=[ast.alias("os", "fast_os")]) if _is_os_alias(node) else node for node in tree.body]
    return ast.unparse(tree)


def _is_os_alias(node):
    import ast

    return (isinstance(node, ast.ImportFrom) and node.module == "intent_loop.storage"
            and [(a.name, a.asname) for a in node.names] == [("fast_os", None)])


def plugin_hooks_json():
    """The plugin's hooks.json: one handler per hook of the table, each on one line."""
    events = []
    for hook in HOOKS:
        group = handler_group(hook, PLUGIN_COMMAND + hook.name)
        matcher = f'        "matcher": {json.dumps(group["matcher"])},\n' if "matcher" in group else ""
        [handler] = group["hooks"]
        events.append(f'    {json.dumps(hook.event)}: [\n      {{\n{matcher}        "hooks": [\n'
                      f'          {json.dumps(handler)}\n        ]\n      }}\n    ]')
    return (f'{{\n  "description": {json.dumps(PLUGIN_DESCRIPTION)},\n  "hooks": {{\n'
            + ",\n".join(events) + "\n  }\n}\n")


def stage_site_packages(stage):
    """lib/intent_loop, hooks/ and orjson, copied without caches, in a fresh directory."""
    import orjson

    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "lib" / "intent_loop", stage / "intent_loop", ignore=ignore)
    shutil.copytree(ROOT / "hooks", stage / "hooks", ignore=ignore)
    shutil.copytree(Path(orjson.__file__).parent, stage / "orjson", ignore=ignore)


def build_binary(name, stage, out_dir, python):
    import zipfile

    binary = BY_NAME[name]
    module, function, is_hook = binary.module, binary.function, binary.is_hook
    pyz = CACHE / "build" / f"{name}.pyz"
    env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    run([venv_python(), "-m", "shiv", "--site-packages", stage, "-e", f"{module}:{function}",
         "-o", pyz, "--reproducible", "--no-modify", "-p", "/bin/sh"], env=env, stdout=subprocess.DEVNULL)
    data = pyz.read_bytes()
    with zipfile.ZipFile(pyz) as archive:
        build_id = json.loads(archive.read("environment.json"))["build_id"]
    code = LAUNCHER_CODE.format(early_sigterm=EARLY_SIGTERM if is_hook else "",
                                data_root_source=_embedded_data_root_source(), build_id=build_id,
                                module=module, function=function, is_hook=is_hook)
    fast_code = FAST_CODE.format(early_sigterm=EARLY_SIGTERM if is_hook else "", module=module, function=function)
    prefix = LAUNCHER_SH.format(name=name, python=python, code=_sh_double_quoted(code), build_id=build_id,
                                fast_code=_sh_double_quoted(fast_code),
                                run=HOOK_RUN if is_hook else CLI_RUN,
                                after_run=HOOK_AFTER_RUN if is_hook else CLI_AFTER_RUN,
                                fallback=HOOK_FALLBACK if is_hook else CLI_FALLBACK)
    out = out_dir / name
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(prefix.encode() + data[data.index(b"\n") + 1 :])
    tmp.chmod(0o755)
    os.replace(tmp, out)
    return out


def write_plugin_hooks():
    """hooks.json is committed (Codex reads it from the plugin's tree) and regenerated here."""
    text = plugin_hooks_json()
    if not PLUGIN_HOOKS.exists() or PLUGIN_HOOKS.read_text() != text:
        PLUGIN_HOOKS.write_text(text)
    return PLUGIN_HOOKS


def build_all():
    python = os.path.realpath(sys.executable)
    stage = CACHE / "build" / "site-packages"
    stage_site_packages(stage)
    DIST.mkdir(exist_ok=True)
    return [build_binary(binary.name, stage, DIST, python) for binary in BINARIES] + [write_plugin_hooks()]


def cmd_build(_args):
    for path in build_all():
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

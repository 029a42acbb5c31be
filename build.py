#!/usr/bin/env python3
"""The one entry for people and CI: set up, build dist/, test, benchmark, demo.

    python3 build.py            build the five binaries into dist/ and the plugin marketplace
    python3 build.py plugin     (re)write the local marketplace dist/marketplace/ from dist/'s binaries
                                (building them first when one is missing)
    python3 build.py test       set up, build, lint (ruff check), run the whole test suite
    python3 build.py test-e2e   set up, build, run only the real-host tests (tests/e2e/) against the Codex
                                version in $INTENT_LOOP_CODEX_VERSION and the Claude Code version in
                                $INTENT_LOOP_CLAUDE_VERSION (default: the pinned ones)
    python3 build.py test-other-pythons   the fast tests (no e2e, slow or dist/ tests) under each other
                                CPython 3.11-3.13 on the machine, each in .cache/venv-3.X/ (CI runs it after test)
    python3 build.py demo       set up, build, run the main job on an embedded sample
    python3 build.py bench      hook and MCP server ratios against `python3 -I -S -c pass` at 1,000 /
                                10,000 / 100,000 events, with bytes written and peak RSS (--quick: a smoke run)
    python3 build.py bench-ledger   append cost at 10 to 100,000 events and the ledger commands
                                (verify, timeline, export, import, delete, doctor) at 100,000
    python3 build.py bench-cache [LIB ...]   a year of history: cache bytes per hook read and mutation
    python3 build.py release X.Y.Z   a release: the version in lib/intent_loop/base/release.py, pyproject.toml
                                and .codex-plugin/plugin.json, and the digest of the plugin's files in
                                release.json (tests/test_release.py fails while they differ)

Every step is idempotent: the virtual environment (.venv/), the npm installs for the real-host
end-to-end tests (.cache/npm-codex-<version>/, .cache/npm-claude-<version>/) and dist/ are reused when
their inputs did not change.
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
CODEX_PACKAGE = "@openai/codex"
# The one variable for the host version of the real-Codex tests; unset: the version the committed
# tests/e2e/npm/package.json pins (CI's). Any other exact version comes from the npm registry.
CODEX_VERSION_VAR = "INTENT_LOOP_CODEX_VERSION"


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


def pinned_codex_version():
    """The @openai/codex version pinned by the committed tests/e2e/npm/package.json (and its lockfile)."""
    return _pinned_version(NPM_DIR, CODEX_PACKAGE)


def wanted_codex_version():
    """$INTENT_LOOP_CODEX_VERSION (an exact version such as 0.171.0), else the pinned version."""
    return _wanted_version(CODEX_VERSION_VAR, pinned_codex_version(), example="0.171.0")


def codex_version_of(binary):
    """The version `codex --version` prints ("codex-cli 0.169.0" -> "0.169.0"), or None."""
    return _version_said(binary, word=-1)


def _pinned_version(npm_dir, package):
    return json.loads((npm_dir / "package.json").read_text())["dependencies"][package]


def _wanted_version(variable, pinned, *, example):
    version = os.environ.get(variable, "").strip() or pinned
    if not version[:1].isdigit() or not all(c.isalnum() or c in ".-" for c in version):
        sys.exit(f"build.py: {variable}={version!r} is not an exact version such as {example}")
    return version


def _version_said(binary, *, word, env=None):
    """The `word`th word of what `binary --version` prints, or None when it fails or says nothing."""
    try:
        done = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return words[word] if done.returncode == 0 and words else None


def ensure_npm_codex(version=None):
    """Install @openai/codex `version` (default: wanted_codex_version()) into .cache/npm-codex-<version>/
    (git-ignored), reused while its inputs are unchanged, and check that the binary says that version.
    The pinned version is installed from the committed lockfile (`npm ci`); any other one from the
    registry (`npm install --no-save @openai/codex@<version>`, in its own directory).
    Returns (binary, None), or (None, why not)."""
    version = version or wanted_codex_version()
    return _ensure_npm_package(CODEX_PACKAGE, version, pinned=version == pinned_codex_version(), npm_dir=NPM_DIR,
                               target=CACHE / f"npm-codex-{version}", bin_name="codex", version_of=codex_version_of,
                               label="intent-loop-e2e-codex", purpose="intent-loop's real-Codex tests")


def _ensure_npm_package(package, version, *, pinned, npm_dir, target, bin_name, version_of, label, purpose,
                        extra_args=()):
    """Install `package`@`version` into `target` (git-ignored), reused while its inputs are unchanged:
    the pinned version with `npm ci` from the committed lockfile in `npm_dir`, any other one with
    `npm install --no-save` from the registry in a directory of its own; then check that
    `version_of(binary)` says `version`. Returns (binary, None), or (None, why not)."""
    if shutil.which("npm") is None:
        return None, f"npm is not installed, so {package}@{version} cannot be installed"
    if pinned:
        lock = (npm_dir / "package-lock.json").read_bytes()
        stamp_text = "npm ci, package-lock.json sha256 " + hashlib.sha256(lock).hexdigest()
        argv = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", *extra_args]
    else:
        stamp_text = f"npm install {package}@{version}"
        argv = ["npm", "install", "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error",
                *extra_args, f"{package}@{version}"]
    stamp = target / ".intent-loop-stamp"
    binary = target / "node_modules" / ".bin" / bin_name
    if not (binary.exists() and stamp.exists() and stamp.read_text() == stamp_text):
        target.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        if pinned:
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(npm_dir / name, target / name)
        else:  # a package.json of its own, so that npm does not look for one in a parent directory
            (target / "package-lock.json").unlink(missing_ok=True)
            (target / "package.json").write_text(json.dumps({
                "name": label, "version": "0.0.0", "private": True, "license": "UNLICENSED",
                "description": f"{package}@{version} for a hand run of {purpose}"}) + "\n")
        try:
            run(argv, cwd=target)
        except subprocess.CalledProcessError as exc:
            return None, f"`{' '.join(argv)}` failed (exit {exc.returncode}) in {target}"
        stamp.write_text(stamp_text)
    said = version_of(binary)
    if said != version:
        stamp.unlink(missing_ok=True)  # installed again next time, not reused
        return None, f"{binary} says its version is {said!r}, not {version}"
    return binary, None


# -- the real Claude Code (issue 37) ---------------------------------------------------------
NPM_CLAUDE_DIR = ROOT / "tests" / "e2e" / "npm-claude"
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
# The one variable for the host version of the real-Claude-Code tests; unset: the version the
# committed tests/e2e/npm-claude/package.json pins (CI's). Any other exact version: from the registry.
CLAUDE_VERSION_VAR = "INTENT_LOOP_CLAUDE_VERSION"


def pinned_claude_version():
    """The @anthropic-ai/claude-code version pinned by the committed tests/e2e/npm-claude/package.json."""
    return _pinned_version(NPM_CLAUDE_DIR, CLAUDE_PACKAGE)


def wanted_claude_version():
    """$INTENT_LOOP_CLAUDE_VERSION (an exact version such as 2.1.332), else the pinned version."""
    return _wanted_version(CLAUDE_VERSION_VAR, pinned_claude_version(), example="2.1.332")


def claude_version_of(binary):
    """The version `claude --version` prints ("2.1.332 (Claude Code)" -> "2.1.332"), or None. A
    placeholder left where npm skipped the native optional dependency says no version."""
    return _version_said(binary, word=0, env=dict(os.environ, DISABLE_AUTOUPDATER="1",
                                                  CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1"))


def ensure_npm_claude(version=None):
    """Install @anthropic-ai/claude-code `version` (default: wanted_claude_version()) into
    .cache/npm-claude-<version>/ as ensure_npm_codex does Codex: the pinned version by `npm ci` from
    the committed tests/e2e/npm-claude/package-lock.json. Its native binary is an optional dependency
    (one package per platform, copied over bin/claude.exe by the package's postinstall), so optional
    dependencies and install scripts are asked for explicitly: a user's `omit=optional` or
    `ignore-scripts` would leave a placeholder, which the version check then refuses. The package
    asks for node 22 (`engines`), but what runs is the native binary: node 20 installs it as well,
    so a user's `engine-strict` is overridden.
    Returns (binary, None), or (None, why not)."""
    version = version or wanted_claude_version()
    return _ensure_npm_package(CLAUDE_PACKAGE, version, pinned=version == pinned_claude_version(),
                               npm_dir=NPM_CLAUDE_DIR, target=CACHE / f"npm-claude-{version}", bin_name="claude",
                               version_of=claude_version_of, label="intent-loop-e2e-claude-code",
                               purpose="intent-loop's real-Claude-Code tests",
                               extra_args=("--include=optional", "--ignore-scripts=false", "--engine-strict=false"))


def codex_test_env():
    """The environment for pytest: INTENT_LOOP_CODEX_BIN is the installed Codex, or, where none could
    be installed, INTENT_LOOP_CODEX_UNAVAILABLE says why (the real-host tests skip, and under CI=true
    fail, with that reason); the same for Claude Code (INTENT_LOOP_CLAUDE_BIN,
    INTENT_LOOP_CLAUDE_UNAVAILABLE)."""
    env = dict(os.environ)
    codex, why_not = ensure_npm_codex()
    if codex is not None:
        env["INTENT_LOOP_CODEX_BIN"] = str(codex)
        env.pop("INTENT_LOOP_CODEX_UNAVAILABLE", None)
        print(f"build.py: the real-Codex tests run {CODEX_PACKAGE}@{codex_version_of(codex)} ({codex})", flush=True)
    else:
        env.pop("INTENT_LOOP_CODEX_BIN", None)
        env["INTENT_LOOP_CODEX_UNAVAILABLE"] = why_not
        print(f"build.py: no real Codex for the end-to-end tests: {why_not}", flush=True)
    claude, why_not = ensure_npm_claude()
    if claude is not None:
        env["INTENT_LOOP_CLAUDE_BIN"] = str(claude)
        env.pop("INTENT_LOOP_CLAUDE_UNAVAILABLE", None)
        print(f"build.py: the real-Claude-Code tests run {CLAUDE_PACKAGE}@{claude_version_of(claude)} ({claude})",
              flush=True)
    else:
        env.pop("INTENT_LOOP_CLAUDE_BIN", None)
        env["INTENT_LOOP_CLAUDE_UNAVAILABLE"] = why_not
        print(f"build.py: no real Claude Code for the end-to-end tests: {why_not}", flush=True)
    return env


# -- the binaries ---------------------------------------------------------------------------
sys.path.insert(0, str(ROOT / "lib"))
from intent_loop.launch.binaries import (  # noqa: E402
    BINARIES,
    BY_NAME,
    HOOKS,
    PLUGIN_COMMAND,
    WINDOWS_NOTICE,
    claude_handler_group,
    handler_group,
    source_command,
)
from intent_loop.launch.fast_path import MARKER  # noqa: E402

SOURCE_DATE_EPOCH = "315532800"  # 1980-01-01, the zip epoch: builds from one commit are byte-identical
LAUNCH = ROOT / "lib" / "intent_loop" / "launch"
PLUGIN_HOOKS = ROOT / "hooks.json"
CLAUDE_PLUGIN_HOOKS = ROOT / "hooks" / "hooks.json"
PLUGIN_DESCRIPTION = "intent-loop: records the user's `intent:` commands and publishes the Guard contract"


def launcher_prefix(binary, *, build_id, python):
    """The /bin/sh prefix of one binary: launch/launcher.sh with its @VALUES@ filled in, its comment
    lines (after the first three: the shebang, what it is, shellcheck's file-wide directive) dropped,
    and the Python launchers embedded as `-c` code."""
    lines = (LAUNCH / "launcher.sh").read_text().splitlines(keepends=True)
    text = "".join(lines[:3] + [line for line in lines[3:] if not line.lstrip().startswith("#")])
    hook = "is_hook=True" if binary.is_hook else "is_hook=False"
    entry = f"{binary.module!r}, {binary.function!r}, {hook}"
    values = {
        "NAME": binary.name, "PYTHON": python, "BUILD_ID": build_id, "MARKER": MARKER,
        "IS_HOOK": "1" if binary.is_hook else "",
        "DATA_ROOT": sh_code("data_root.sh"),
        "FIND_PYTHON": find_python_code(),
        "CHOOSE_PYTHON": _sh_single_quoted(sh_code("choose_python.sh")),
        "FAST_PATH_CODE": _sh_double_quoted(embedded_source("launch/fast_path.py") + f"\nrun_extracted({entry})\n"),
        "LAUNCHER_CODE": _sh_double_quoted(embedded_source("launch/launcher.py") + f"\nrun({build_id!r}, {entry})\n"),
    }
    for name, value in values.items():  # the code values last: nothing inside them is a placeholder
        text = text.replace(f"@{name}@", value)
    return text


def find_python_code():
    """launch/find_python.sh without its comment lines, for the launcher's @FIND_PYTHON@ line."""
    return sh_code("find_python.sh")


def sh_code(name):
    """A sh file of launch/ without its blank and comment lines (the shell parses every byte it reads)."""
    lines = (LAUNCH / name).read_text().splitlines()
    return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#"))


def _sh_single_quoted(text):
    """One sh word holding text exactly: single quotes, each quote inside written as '\\''."""
    return "'" + text.replace("'", "'\\''") + "'"


def _sh_double_quoted(text):
    """Escape the four characters that stay special inside a POSIX sh double-quoted string."""
    for char in ("\\", '"', "$", "`"):
        text = text.replace(char, "\\" + char)
    return text


def embedded_source(relative, _seen=None):
    """A module of lib/intent_loop as one self-contained piece of code for `python -c`: docstrings
    dropped, each `from intent_loop.<module> import ...` replaced by that module's embedded source
    (once), and the fast os slice replaced by the real `os`, which the launcher has already and
    which behaves identically for the calls made (tests/base/test_fast_os.py)."""
    import ast

    seen = set() if _seen is None else _seen
    tree = ast.parse((ROOT / "lib" / "intent_loop" / relative).read_text())
    body = []
    for node in _without_docstrings(tree).body:
        if _is_fast_os_import(node):
            body.append(ast.Import(names=[ast.alias("os", "fast_os")]))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("intent_loop."):
            module = node.module.removeprefix("intent_loop.").replace(".", "/") + ".py"
            if module not in seen:
                seen.add(module)
                body.extend(ast.parse(embedded_source(module, seen)).body)
        else:
            body.append(node)
    names = [n.name for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    names += [t.id for n in body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)]
    if len(names) != len(set(names)):  # one namespace now: a second definition would replace the first
        raise SystemExit(f"build.py: the modules embedded for {relative} define a name twice: {sorted(names)}")
    return ast.unparse(ast.Module(body=body, type_ignores=[]))


def _without_docstrings(tree):
    import ast

    for node in ast.walk(tree):  # they only lengthen what Python compiles on every start
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            node.body = body[1:] or [ast.Pass()]
    return tree


def _is_fast_os_import(node):
    import ast

    return (isinstance(node, ast.ImportFrom) and node.module == "intent_loop.base"
            and [(a.name, a.asname) for a in node.names] == [("fast_os", None)])


def plugin_hooks_json(command_of=source_command, *, group_of=None):
    """A plugin's hooks.json: one handler per hook of the table, each on one line. The repository's
    own (committed at the root) runs the source launcher; dist/marketplace's runs the binaries;
    Claude Code's (committed as hooks/hooks.json, `group_of` claude_handler_group) the source
    launcher by Claude Code's variable."""
    events = []
    for hook in HOOKS:
        group = group_of(hook) if group_of else handler_group(hook, command_of(hook), windows=WINDOWS_NOTICE)
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
    shutil.copytree(ROOT / "hooks", stage / "hooks", ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.json"))
    shutil.copytree(Path(orjson.__file__).parent, stage / "orjson", ignore=ignore)


def build_binary(name, stage, out_dir, python):
    import zipfile

    binary = BY_NAME[name]
    pyz = CACHE / "build" / f"{name}.pyz"
    env = dict(os.environ, SOURCE_DATE_EPOCH=SOURCE_DATE_EPOCH)
    run([venv_python(), "-m", "shiv", "--site-packages", stage, "-e", f"{binary.module}:{binary.function}",
         "-o", pyz, "--reproducible", "--no-modify", "-p", "/bin/sh"], env=env, stdout=subprocess.DEVNULL)
    data = pyz.read_bytes()
    with zipfile.ZipFile(pyz) as archive:
        build_id = json.loads(archive.read("environment.json"))["build_id"]
    prefix = launcher_prefix(binary, build_id=build_id, python=python)
    out = out_dir / name
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(prefix.encode() + data[data.index(b"\n") + 1 :])
    tmp.chmod(0o755)
    os.replace(tmp, out)
    return out


def binary_command(hook):
    return PLUGIN_COMMAND + hook.name


def write_plugin_hooks():
    """hooks.json (Codex) and hooks/hooks.json (Claude Code) are committed (each host reads its own
    from the repository plugin's tree) and regenerated here from the one table."""
    for path, text in ((PLUGIN_HOOKS, plugin_hooks_json()),
                       (CLAUDE_PLUGIN_HOOKS, plugin_hooks_json(group_of=claude_handler_group))):
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return PLUGIN_HOOKS


def baked_python():
    """The interpreter the binaries name: this one, when it passes the launchers' location rules
    (launch/python_place.py; the cwd is checked again at every run), else none (they search)."""
    from intent_loop.launch.python_place import choose

    python, why = choose(os.path.realpath(sys.executable), cwd=None, env=os.environ)
    if python is None:
        print(f"build.py: the binaries name no interpreter and search at run time: {why}", flush=True)
        return ""
    return python


def build_all():
    python = baked_python()
    stage = CACHE / "build" / "site-packages"
    stage_site_packages(stage)
    DIST.mkdir(exist_ok=True)
    return [build_binary(binary.name, stage, DIST, python) for binary in BINARIES] + [write_plugin_hooks()]


# -- the plugin: a local marketplace under dist/ ---------------------------------------------
MARKETPLACE = DIST / "marketplace"
MARKETPLACE_NAME = "intent-loop-local"  # `codex plugin add intent-loop@intent-loop-local`
PLUGIN_NAME = "intent-loop"
SKILLS = ROOT / "skills"
PLUGIN_MCP = ROOT / ".mcp.json"  # the repository plugin's; dist/marketplace's starts the binary instead
MARKETPLACE_MCP = {"mcpServers": {"intent_loop": {"command": "./dist/intent-loop-mcp", "args": [], "cwd": "."}}}


def project_version():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["version"]


RELEASE_FILE = ROOT / "release.json"
# What a plugin install runs (the repository plugin runs this tree): a change to any of these files
# changes what users run, so it is a release (issue 36 item 5; Claude Code refreshes an installed
# plugin only when its version changes).
PLUGIN_PATHS = ("lib", "hooks", "skills", "hooks.json", ".mcp.json", ".codex-plugin/plugin.json", ".claude-plugin")


def plugin_files():
    """The plugin's files (relative paths, sorted), bytecode and __pycache__ left out."""
    found = []
    for name in PLUGIN_PATHS:
        path = ROOT / name
        if path.is_file():
            found.append(name)
            continue
        for dirpath, dirnames, filenames in os.walk(path):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            found += [os.path.relpath(os.path.join(dirpath, f), ROOT) for f in filenames if not f.endswith(".pyc")]
    return sorted(found)


def plugin_files_digest():
    """SHA-256 over each plugin file's path and content: what release.json records for a release."""
    lines = [f"{name}\0{hashlib.sha256((ROOT / name).read_bytes()).hexdigest()}\n" for name in plugin_files()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def cmd_release(args):
    """Record a release: the new version in its four places, then the digest of the plugin's files."""
    import re

    current = project_version()
    if len(args) != 1 or not re.fullmatch(r"\d+\.\d+\.\d+", args[0]):
        print(f"build.py release: give the new version as X.Y.Z (now {current})", file=sys.stderr)
        return 2
    version = args[0]
    if tuple(map(int, version.split("."))) <= tuple(map(int, current.split("."))):
        print(f"build.py release: {version} is not above the current version {current}", file=sys.stderr)
        return 2
    for path, pattern, text in (
            (ROOT / "lib" / "intent_loop" / "base" / "release.py", r'^VERSION = "[^"]*"$', f'VERSION = "{version}"'),
            (ROOT / "pyproject.toml", r'^version = "[^"]*"$', f'version = "{version}"'),
            (ROOT / ".codex-plugin" / "plugin.json", r'^  "version": "[^"]*",$', f'  "version": "{version}",'),
            (ROOT / ".claude-plugin" / "plugin.json", r'^  "version": "[^"]*",$', f'  "version": "{version}",')):
        old = path.read_text()
        new, count = re.subn(pattern, text, old, count=1, flags=re.M)
        if count != 1:
            print(f"build.py release: no version line in {path.relative_to(ROOT)}", file=sys.stderr)
            return 1
        path.write_text(new)
    RELEASE_FILE.write_text(_json_text({"version": version, "plugin_files_sha256": plugin_files_digest()}))
    print(f"release {version}: {len(plugin_files())} plugin files recorded in release.json; add its CHANGELOG entry")
    return 0


def _json_text(value):
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def marketplace_files():
    """{relative path: (bytes, mode)} of the marketplace, everything from the table, the committed
    plugin files and dist/'s binaries: nothing in it names the source tree, and the same inputs
    give the same bytes (no time stamps, sorted walks)."""
    plugin = f"plugins/{PLUGIN_NAME}"
    files = {
        ".agents/plugins/marketplace.json": _json_text({
            "name": MARKETPLACE_NAME,
            "interface": {"displayName": "intent-loop (local build)"},
            "plugins": [{"name": PLUGIN_NAME, "source": {"source": "local", "path": f"./{plugin}"},
                         "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
                         "category": "Productivity"}],
        }),
        f"{plugin}/.codex-plugin/plugin.json": _json_text({
            "name": PLUGIN_NAME,
            "version": project_version(),
            "description": "Local-first companion for the Codex CLI: records what the user asked for with "
                           "`intent:` commands in a hash-chained ledger and publishes a Guard contract file.",
            "hooks": "./hooks/hooks.json",
            "mcpServers": "./.mcp.json",
            "skills": "./skills/",
            "interface": {"displayName": "intent-loop"},
        }),
        # Codex trusts a hook by its handler's hash (and a plugin's hooks also by a hash of the
        # plugin's files: docs/upgrading.md), so these bytes are pinned by a golden copy.
        f"{plugin}/hooks/hooks.json": plugin_hooks_json(binary_command),
        f"{plugin}/.mcp.json": _json_text(MARKETPLACE_MCP),
    }
    files = {name: (text.encode(), 0o644) for name, text in files.items()}
    for path in sorted(SKILLS.rglob("*")):
        if path.is_file():
            files[f"{plugin}/skills/{path.relative_to(SKILLS).as_posix()}"] = (path.read_bytes(), 0o644)
    for binary in BINARIES:
        files[f"{plugin}/dist/{binary.name}"] = ((DIST / binary.name).read_bytes(), 0o755)
    return files


def write_marketplace():
    """dist/marketplace/, rebuilt whole in a sibling directory and swapped in, so a file a
    previous build wrote and this one does not never lingers."""
    missing = [b.name for b in BINARIES if not (DIST / b.name).is_file()]
    if missing:
        sys.exit(f"build.py: no {', '.join(missing)} in dist/: run `python3 build.py` first")
    tmp = DIST / ".marketplace.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    for name, (data, mode) in marketplace_files().items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    old = DIST / ".marketplace.old"
    if old.exists():
        shutil.rmtree(old)
    if MARKETPLACE.exists():
        os.rename(MARKETPLACE, old)
    os.rename(tmp, MARKETPLACE)
    if old.exists():
        shutil.rmtree(old)
    return MARKETPLACE


def cmd_build(_args):
    for path in build_all() + [write_marketplace()]:
        print(f"built {path.relative_to(ROOT)}")
    return 0


def cmd_plugin(_args):
    if not all((DIST / b.name).is_file() for b in BINARIES):
        build_all()
    print(f"built {write_marketplace().relative_to(ROOT)}")
    return 0


def cmd_test(args):
    cmd_build([])
    lint = subprocess.run([str(venv_python()), "-m", "ruff", "check", "."], cwd=ROOT)
    if lint.returncode != 0:
        print("build.py: ruff check failed (configured in pyproject.toml); fix the findings above", flush=True)
        return lint.returncode
    env = codex_test_env()
    result = subprocess.run([str(venv_python()), "-m", "pytest", *args], cwd=ROOT, env=env)
    return result.returncode


def cmd_test_e2e(args):
    """Only tests/e2e/ (the real Codex against the mock model), against $INTENT_LOOP_CODEX_VERSION
    (default: the pinned version); builds dist/ first, no lint. Extra arguments go to pytest."""
    cmd_build([])
    env = codex_test_env()
    return subprocess.run([str(venv_python()), "-m", "pytest", "tests/e2e", *args], cwd=ROOT, env=env).returncode


# -- the fast tests under the other supported Pythons ----------------------------------------
SUPPORTED_MINORS = (11, 12, 13)
# No real host (e2e), no long runs (slow), and nothing behind a skip condition: that is every test
# of dist/'s binaries, which bake in the interpreter that built them (this one), and a few that need
# root or Linux's /proc. What is left is the library and its source-run paths, ~4/5 of the suite.
FAST_TESTS = ("-m", "not e2e and not slow and not skipif")


def other_pythons():
    """One CPython per supported minor version other than this one: pyenv's newest, else
    python3.X on PATH; a candidate that does not run, or is another version (a pyenv shim of a
    version not selected), is passed over."""
    import glob

    pyenv = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    found = []
    for minor in SUPPORTED_MINORS:
        if minor == sys.version_info.minor:
            continue
        pattern = os.path.join(pyenv, "versions", f"3.{minor}.*", "bin", f"python3.{minor}")
        by_patch = sorted(glob.glob(pattern), key=lambda p: [int(n) for n in Path(p).parents[1].name.split(".")
                                                              if n.isdigit()])
        candidates = by_patch[::-1] + [p for p in [shutil.which(f"python3.{minor}")] if p]
        for candidate in candidates:
            if _runs_cpython(candidate, minor):
                found.append((minor, candidate))
                break
    return found


def _runs_cpython(python, minor):
    code = "import sys; print(sys.implementation.name, sys.version_info.minor)"
    try:
        done = subprocess.run([python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.split() == ["cpython", str(minor)]


def other_venv(python, minor):
    """.cache/venv-3.X/ with the pinned dev dependencies, reused while they and the interpreter match."""
    venv = CACHE / f"venv-3.{minor}"
    python_in_venv = venv / "bin" / "python3"
    stamp, reqs = venv / ".intent-loop-deps", dev_requirements()
    version = subprocess.run([python, "-I", "-S", "-c", "import sys; print(sys.version)"], capture_output=True,
                             text=True, check=True).stdout
    text = hashlib.sha256("\n".join([*reqs, version, os.path.realpath(python)]).encode()).hexdigest()
    if python_in_venv.exists() and stamp.exists() and stamp.read_text() == text:
        return python_in_venv
    run([python, "-m", "venv", "--clear", venv])
    run([python_in_venv, "-m", "pip", "install", "--disable-pip-version-check", "-q", *reqs])
    stamp.write_text(text)
    return python_in_venv


def cmd_test_other_pythons(args):
    """The fast tests (FAST_TESTS, then any pytest arguments) under each other CPython 3.11-3.13
    on this machine, each in its own venv; prints how long each took. CI runs it after `test`."""
    import time

    pythons = other_pythons()
    if not pythons:
        print(f"build.py: no other CPython 3.11-3.13 on this machine (pyenv versions, python3.X on PATH); "
              f"only {sys.version.split()[0]} was tested", flush=True)
        return 0
    failed = []
    for minor, python in pythons:
        started = time.monotonic()
        try:
            venv = other_venv(python, minor)
        except subprocess.CalledProcessError as exc:  # e.g. Debian's python3.X without python3.X-venv
            print(f"build.py: 3.{minor} ({python}): NOT TESTED, its venv cannot be set up ({exc})", flush=True)
            continue
        ready = time.monotonic()
        result = subprocess.run([str(venv), "-m", "pytest", "-q", *FAST_TESTS, *args], cwd=ROOT)
        verdict = "passed" if result.returncode == 0 else f"FAILED (pytest exit {result.returncode})"
        print(f"build.py: fast tests under 3.{minor} ({os.path.realpath(python)}): {verdict} in "
              f"{time.monotonic() - ready:.0f} s (+{ready - started:.0f} s for its venv)", flush=True)
        if result.returncode != 0:
            failed.append(f"3.{minor}")
    if failed:
        print(f"build.py: the fast tests failed under {', '.join(failed)}", flush=True)
    return 1 if failed else 0


def cmd_demo(args):
    cmd_build([])
    result = subprocess.run([str(DIST / "intent-loop"), "demo", *args], cwd=ROOT)
    return result.returncode


def cmd_bench(args):
    cmd_build([])
    hooks = subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "bench_hooks.py"), *args]).returncode
    mcp = subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "bench_mcp.py")]).returncode
    # the modules each hook path loads before its answer, and their minimum import time (issue 26)
    imports = subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "import_cost.py")]).returncode
    return hooks or mcp or imports


def cmd_bench_ledger(args):
    return subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "bench_ledger.py"), *args]).returncode


def cmd_bench_cache(args):
    return subprocess.run([str(venv_python()), str(ROOT / "tests" / "bench" / "bench_cache.py"), *args]).returncode


COMMANDS = {
    "build": cmd_build,
    "plugin": cmd_plugin,
    "test": cmd_test,
    "test-e2e": cmd_test_e2e,
    "test-other-pythons": cmd_test_other_pythons,
    "demo": cmd_demo,
    "bench": cmd_bench,
    "bench-ledger": cmd_bench_ledger,
    "bench-cache": cmd_bench_cache,
    "release": cmd_release,
}


def main(argv):
    name = argv[0] if argv else "build"
    if name in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    if name not in COMMANDS:
        print(f"build.py: unknown command {name!r}; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    if name != "release":  # recording a release needs nothing installed
        reexec_in_venv(argv or ["build"])
    return COMMANDS[name](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

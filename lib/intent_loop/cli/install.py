"""install / uninstall: merge our three hook handlers into <codex-home>/hooks.json, or take them out.

Dry run by default (a unified diff of what --apply would write). --apply backs the old file up
to hooks.json.bak-<UTC timestamp> and replaces it atomically. Every foreign hook and key is kept;
a file that is not valid JSON or not of the shape Codex reads is refused, never overwritten.
"""
import json
import os
import shlex
import sys
import time

from intent_loop.cli.common import add_json_flag
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.launch.binaries import BINARIES, BY_NAME, HOOK_PREFIX, HOOKS, handler_group
from intent_loop.storage.timestamps import format_compact_utc

HOOKS_FILE = "hooks.json"
TOP_LEVEL_KEYS = ("description", "hooks")
TRUST_REMINDER = ("Codex skips untrusted hooks silently: start Codex, open `/hooks` in the TUI and trust the "
                  "three intent-loop hooks (again after every install that changed them).")


def register(subparsers):
    p = subparsers.add_parser("install", help="add the intent-loop hooks to Codex's hooks.json (dry run by default)",
                              description="Merge the three intent-loop hook handlers into <codex-home>/hooks.json, "
                                          "keeping every other hook. Without --apply nothing is written: the diff "
                                          "is printed.")
    _common_options(p)
    p.add_argument("--dist", metavar="DIR", help="directory holding the built hook binaries "
                                                 "(default: the directory of this intent-loop binary)")
    p.set_defaults(func=cmd_install)
    p = subparsers.add_parser("uninstall",
                              help="remove the intent-loop hooks from Codex's hooks.json (dry run by default)",
                              description="Remove exactly the intent-loop handlers (commands running an "
                                          "intent-loop-* binary) from <codex-home>/hooks.json, keeping the rest.")
    _common_options(p)
    p.set_defaults(func=cmd_uninstall)


def _common_options(p):
    p.add_argument("--codex-home", metavar="DIR", help="the Codex home (default: $CODEX_HOME, else ~/.codex)")
    p.add_argument("--apply", action="store_true", help="write the change (default: only show it)")
    add_json_flag(p)


# -- pure helpers (tested directly) --------------------------------------------------------
def codex_home_for(option, env):
    if option:
        return os.path.abspath(os.path.expanduser(option))
    if env.get("CODEX_HOME"):
        return os.path.abspath(env["CODEX_HOME"])
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".codex")


def handler_command(binary, python):
    return f"INTENT_LOOP_PYTHON={shlex.quote(python)} {shlex.quote(binary)}"


def desired_groups(dist_dir, python):
    """event -> the matcher group we install."""
    return {hook.event: handler_group(hook, handler_command(os.path.join(dist_dir, hook.name), python))
            for hook in HOOKS}


def is_ours(handler):
    """A handler whose command runs a binary named intent-loop-* (after any VAR=value prefixes)."""
    program = handler_program(handler)
    return program is not None and os.path.basename(program).startswith(HOOK_PREFIX)


def handler_program(handler):
    """The program a handler's command runs (after any VAR=value prefixes, env, exec), or None."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return None
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return None
    for word in words:
        if "=" in word.split("/", 1)[0] and not word.startswith("/"):
            continue  # NAME=value assignment
        if word in ("env", "exec"):
            continue
        return word
    return None


def _invalid(path, why):
    return IntentLoopError(ErrorCode.HOOKS_CONFIG_INVALID,
                           f"{path} {why}; fix or move it by hand (intent-loop never overwrites it)",
                           details={"path": path})


def load_config(path):
    """(config dict or None when missing, raw bytes or None). Raises HOOKS_CONFIG_INVALID."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        raise _invalid(path, f"cannot be read ({exc.strerror})") from exc
    try:
        config = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _invalid(path, f"is not valid JSON ({exc})") from exc
    check_shape(config, path)
    return config, raw


def check_shape(config, path):
    if not isinstance(config, dict):
        raise _invalid(path, "is not a JSON object")
    unknown = sorted(k for k in config if k not in TOP_LEVEL_KEYS)
    if unknown:
        raise _invalid(path, f"has top-level keys Codex does not accept ({', '.join(unknown)}), "
                             "so Codex ignores the whole file")
    if "description" in config and not isinstance(config["description"], str):
        raise _invalid(path, "has a non-string \"description\"")
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise _invalid(path, "has a \"hooks\" that is not an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise _invalid(path, f"has hooks.{event} that is not a list")
        for i, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise _invalid(path, f"has hooks.{event}[{i}] without a \"hooks\" list")
            if "matcher" in group and not isinstance(group["matcher"], str):
                raise _invalid(path, f"has hooks.{event}[{i}].matcher that is not a string")
            for j, handler in enumerate(group["hooks"]):
                if not isinstance(handler, dict):
                    raise _invalid(path, f"has hooks.{event}[{i}].hooks[{j}] that is not an object")


def without_ours(config):
    """A copy of config with every intent-loop handler removed (emptied groups/events dropped)."""
    out = {k: v for k, v in config.items() if k != "hooks"}
    hooks = {}
    for event, groups in config.get("hooks", {}).items():
        kept_groups = []
        for group in groups:
            handlers = [h for h in group["hooks"] if not is_ours(h)]
            if handlers or len(handlers) == len(group["hooks"]):
                kept_groups.append(dict(group, hooks=handlers))
        if kept_groups or not groups:
            hooks[event] = kept_groups
    if "hooks" in config or hooks:
        out["hooks"] = hooks
    return out


def our_entries(config):
    """Sorted (event, matcher, canonical handler) triples of our handlers: what idempotence compares."""
    found = []
    for event, groups in config.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if is_ours(handler):
                    found.append((event, group.get("matcher"), json.dumps(handler, sort_keys=True)))
    return sorted(found, key=lambda t: (t[0], t[1] or "", t[2]))


def merged(config, groups):
    out = without_ours(config or {})
    hooks = out.setdefault("hooks", {})
    for event, group in groups.items():
        hooks.setdefault(event, []).append(group)
    return out


def render(config):
    return (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def unified_diff(path, old_bytes, new_bytes):
    import difflib

    old = (old_bytes or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = new_bytes.decode("utf-8").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, fromfile=f"{path} (now)" if old_bytes is not None else "/dev/null",
                                        tofile=f"{path} (after --apply)"))


def write_config(path, old_raw, new_bytes):
    """Back up the old file (if any), then replace atomically, keeping its permission bits."""
    from intent_loop.storage.atomic import replace_atomically

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    backup = None
    mode = 0o600
    if old_raw is not None:
        try:
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            pass
        stamp = format_compact_utc(time.time())
        backup = f"{path}.bak-{stamp}"
        n = 1
        while os.path.lexists(backup):
            backup = f"{path}.bak-{stamp}-{n}"
            n += 1
        replace_atomically(backup, old_raw, mode=mode)
    replace_atomically(path, new_bytes, mode=mode)
    return backup


# -- commands ------------------------------------------------------------------------------
def _dist_dir(args):
    if getattr(args, "dist", None):
        return os.path.abspath(args.dist)
    return os.path.dirname(os.path.realpath(sys.argv[0]))


def cmd_install(args, console):
    codex_home = codex_home_for(args.codex_home, console.env)
    path = os.path.join(codex_home, HOOKS_FILE)
    dist = _dist_dir(args)
    missing = [hook.name for hook in HOOKS if not os.access(os.path.join(dist, hook.name), os.X_OK)]
    if missing:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT,
                              f"no built hook binaries in {dist} (missing {', '.join(missing)}); "
                              "run `python3 build.py` or pass --dist DIR")
    python = os.path.realpath(sys.executable)
    config, raw = load_config(path)
    groups = desired_groups(dist, python)
    wanted = merged(config, groups)
    already = config is not None and our_entries(config) == our_entries(wanted)
    runtimes = old_runtimes(console, codex_home=codex_home, dist=dist, replacing=path)
    return _finish(args, console, "install", path, raw, None if already else wanted,
                   extra={"dist": dist, "python": python}, runtimes=runtimes)


def cmd_uninstall(args, console):
    codex_home = codex_home_for(args.codex_home, console.env)
    path = os.path.join(codex_home, HOOKS_FILE)
    config, raw = load_config(path)
    if config is None or not our_entries(config):
        target = None
    else:
        target = without_ours(config)
    return _finish(args, console, "uninstall", path, raw, target, extra={})


def _finish(args, console, verb, path, raw, target, *, extra, runtimes=()):
    result = dict(extra, ok=True, action=verb, path=path, applied=False, changed=target is not None,
                  backup=None, diff="")
    if target is None:
        result["message"] = ("intent-loop hooks already installed; nothing to change" if verb == "install"
                             else "no intent-loop hooks installed; nothing to change")
    else:
        new_bytes = render(target)
        result["diff"] = unified_diff(path, raw, new_bytes)
        if args.apply:
            result["backup"] = write_config(path, raw, new_bytes)
            result["applied"] = True
            result["message"] = f"{verb}ed intent-loop hooks in {path}"
        else:
            result["message"] = (f"dry run: nothing written; `intent-loop {verb} --apply` would "
                                 + (f"back up {path} and " if raw is not None else "")
                                 + f"write {path}")
    if verb == "install":
        result["reminder"] = TRUST_REMINDER
        result["old_runtimes"], runtimes_line = _sweep(runtimes, apply=args.apply)
    if args.json:
        console.json(result)
        return 0
    if result["diff"]:
        console.out(result["diff"].rstrip("\n"))
    console.out(result["message"])
    if result["backup"]:
        console.out(f"backup: {result['backup']}")
    if verb == "install":
        if runtimes_line:
            console.out(runtimes_line)
        console.out(TRUST_REMINDER)
    return 0


# -- old extracted runtimes ----------------------------------------------------------------
def old_runtimes(console, *, codex_home=None, dist=None, replacing=None):
    """The extracted runtimes (<data root>/runtime/<build id>/) that no binary still in use needs:
    in use are this process's own, those in `dist`, our handlers' in the hooks.json of each Codex
    home (except `replacing`, which install is about to rewrite) and the plugin copies there."""
    from intent_loop.launch import extracted_runtime
    from intent_loop.storage.data_root import ROOT_SUFFIX
    from intent_loop.storage.paths import resolve_data_root

    home_dir = console.env.get("HOME")
    homes = [codex_home, codex_home_for(None, console.env), os.path.join(home_dir, ".codex") if home_dir else None]
    homes = list(dict.fromkeys(h for h in homes if h))
    binaries = [sys.argv[0]] if sys.argv and sys.argv[0] else []
    binaries += [os.path.join(dist, binary.name) for binary in BINARIES] if dist else []
    for home in homes:
        if os.path.join(home, HOOKS_FILE) != replacing:
            binaries += _handler_programs(os.path.join(home, HOOKS_FILE))
        binaries += _plugin_copies(home)
    in_use = {extracted_runtime.build_id_of(b) for b in binaries} | {extracted_runtime.running_build_id()}
    roots = [os.path.join(home, *ROOT_SUFFIX) for home in homes]
    try:
        roots.insert(0, resolve_data_root(console.env, executable=sys.argv[0] if sys.argv else None)[0])
    except IntentLoopError:
        pass
    return [r for root in dict.fromkeys(roots) for r in extracted_runtime.old_runtimes(root, in_use)]


def _handler_programs(path):
    try:
        config, _raw = load_config(path)
    except IntentLoopError:
        return []  # Codex ignores a file it cannot read: nothing runs from it
    return [handler_program(h) for groups in (config or {}).get("hooks", {}).values() for group in groups
            for h in group["hooks"] if is_ours(h)]


def _plugin_copies(codex_home, *, depth=5):
    """Our binaries under <codex-home>/plugins/cache/<marketplace>/<plugin>/<version>/dist/."""
    top = os.path.join(codex_home, "plugins", "cache")
    found = []
    for directory, dirs, files in os.walk(top):
        if directory[len(top):].count(os.sep) >= depth:
            dirs[:] = []
        found += [os.path.join(directory, name) for name in files if name in BY_NAME]
    return found


def _sweep(runtimes, *, apply):
    """({found, removed, errors} for --json, the line to print or None); removes with --apply."""
    from intent_loop.launch import extracted_runtime

    report = {"found": [dict(r) for r in runtimes], "removed": [], "errors": []}
    if not runtimes:
        return report, None
    if not apply:
        return report, (f"not used by any installed binary: {extracted_runtime.describe(runtimes)}; "
                        "`intent-loop install --apply` removes them")
    for runtime in runtimes:
        try:
            extracted_runtime.remove_runtime(runtime["path"])
            report["removed"].append(runtime["path"])
        except OSError as exc:
            report["errors"].append({"path": runtime["path"], "error": exc.strerror or str(exc)})
    removed = [r for r in runtimes if r["path"] in report["removed"]]
    line = f"removed {extracted_runtime.describe(removed)}" if removed else ""
    for error in report["errors"]:
        line += ("; " if line else "") + f"could not remove {error['path']}: {error['error']}"
    return report, line

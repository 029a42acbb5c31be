"""install / uninstall: merge our three hook handlers into <codex-home>/hooks.json, or take them out.
(Codex only: for Claude Code it names the plugin route, CLAUDE_CODE_ROUTE.)

Dry run by default (a unified diff of what --apply would write). --apply backs the old file up
to hooks.json.bak-<UTC timestamp> and replaces it atomically. Every foreign hook and key is kept;
a file that is not valid JSON or not of the shape Codex reads is refused, never overwritten.
"""
import os
import sys

from intent_loop.cli import mcp_config, plugin_state
from intent_loop.cli.common import USER_ONLY_WHEN_APPLIED, add_json_flag
from intent_loop.cli.hooks_config import (
    HOOKS_FILE,
    codex_home_for,
    desired_groups,
    load_config,
    merged,
    our_entries,
    render,
    unified_diff,
    without_ours,
    write_config,
)
from intent_loop.cli.old_runtimes import old_runtimes, sweep
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.launch.binaries import HOOKS

TRUST_REMINDER = ("Codex skips untrusted hooks silently: start Codex, open `/hooks` in the TUI and trust the "
                  "three intent-loop hooks (again after every install that changed them).")
# The second host (docs/hosts.md): this command writes Codex's files only. Claude Code's way is its
# plugin, which brings the hooks, the MCP server and the skill, and which it updates by version;
# hooks written into ~/.claude/settings.json by hand would run beside the plugin's, twice.
CLAUDE_CODE_ROUTE = ("Claude Code: not written by this command; install the plugin from this repository: "
                     "`claude plugin marketplace add <owner>/intent-loop`, then `claude plugin install "
                     "intent-loop@intent-loop` (docs/install.md, \"Claude Code\"); it uses the same store")


def register(subparsers):
    p = subparsers.add_parser("install", help="add the intent-loop hooks and MCP server to Codex (dry run by default)",
                              description="Merge the three intent-loop hook handlers into <codex-home>/hooks.json, "
                                          "keeping every other hook, and register the MCP server "
                                          "(intent-loop-mcp) as [mcp_servers.intent_loop] in <codex-home>/config.toml. "
                                          "Without --apply nothing is written: the diff is printed.")
    _common_options(p)
    p.add_argument("--dist", metavar="DIR", help="directory holding the built hook binaries "
                                                 "(default: the directory of this intent-loop binary)")
    p.add_argument("--force", action="store_true",
                   help="install even though intent-loop is installed as a Codex plugin in that Codex home "
                        "(every hook would then run twice)")
    p.set_defaults(func=cmd_install, user_only=USER_ONLY_WHEN_APPLIED)
    p = subparsers.add_parser("uninstall",
                              help="remove the intent-loop hooks from Codex's hooks.json (dry run by default)",
                              description="Remove exactly the intent-loop handlers (commands running an "
                                          "intent-loop-* binary) from <codex-home>/hooks.json, keeping the rest.")
    _common_options(p)
    p.set_defaults(func=cmd_uninstall, user_only=USER_ONLY_WHEN_APPLIED)


def _common_options(p):
    p.add_argument("--codex-home", metavar="DIR", help="the Codex home (default: $CODEX_HOME, else ~/.codex)")
    p.add_argument("--apply", action="store_true", help="write the change (default: only show it)")
    add_json_flag(p)


# -- pure helpers (tested directly) --------------------------------------------------------
def _dist_dir(args):
    if getattr(args, "dist", None):
        return os.path.abspath(args.dist)
    return os.path.dirname(os.path.realpath(sys.argv[0]))


def _refuse_from_a_plugin(args):
    """`install` run from a Codex plugin copy (the repository plugin's command line, or `intent-loop`
    linked to it): that plugin's hooks are Codex's to run already, and a user-level copy would
    run every hook twice."""
    from intent_loop.cli.link import plugin_of

    found = plugin_of(sys.argv[0]) if sys.argv and sys.argv[0] and not getattr(args, "dist", None) else None
    if found is not None:
        raise IntentLoopError(ErrorCode.PLUGIN_INSTALLED, (
            f"this intent-loop runs from the Codex plugin intent-loop@{found[1]}, whose hooks and MCP server Codex "
            "already runs: there is nothing to install (`install` puts a build's binaries into hooks.json; "
            "`intent-loop doctor` says whether the plugin's hooks run)"))


def cmd_install(args, console):
    codex_home = codex_home_for(args.codex_home, console.env)
    path = os.path.join(codex_home, HOOKS_FILE)
    dist = _dist_dir(args)
    _refuse_from_a_plugin(args)
    missing = [hook.name for hook in HOOKS if not os.access(os.path.join(dist, hook.name), os.X_OK)]
    if missing:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT,
                              f"no built hook binaries in {dist} (missing {', '.join(missing)}); "
                              "run `python3 build.py` or pass --dist DIR")
    conflict = _plugin_conflict(codex_home, apply=args.apply, force=args.force)
    python = _interpreter(console.env)
    mcp = mcp_config.plan(codex_home, install=True, binary=os.path.join(dist, mcp_config.MCP_BINARY), python=python)
    config, raw = load_config(path)
    groups = desired_groups(dist, python)
    wanted = merged(config, groups)
    already = config is not None and our_entries(config) == our_entries(wanted)
    runtimes = old_runtimes(console, codex_home=codex_home, dist=dist, replacing=path)
    return _finish(args, console, "install", path, raw, None if already else wanted,
                   extra={"dist": dist, "python": python, "plugin_conflict": conflict}, runtimes=runtimes, mcp=mcp)


def _interpreter(env):
    """The interpreter hooks.json names (as INTENT_LOOP_PYTHON, used as given at every run): this one,
    out of any virtualenv, only where the agent cannot write it (launch/python_place.py)."""
    from intent_loop.launch.python_place import choose

    python, why = choose(os.path.realpath(sys.executable), cwd=_cwd_or_none(), env=env)
    if python is None:
        raise IntentLoopError(ErrorCode.PYTHON_NOT_FOUND, (
            f"the Python running this command is not one the hooks may run: {why}; run install with a Python "
            "3.11+ outside the workspace and the temp directories"))
    return python


def _cwd_or_none():
    try:
        return os.getcwd()
    except OSError:
        return None


def _plugin_conflict(codex_home, *, apply, force):
    """Installed both ways, Codex would run every hook twice and start two `intent_loop` servers:
    --apply is refused while the plugin is enabled there (unless --force); a dry run warns."""
    plugins = plugin_state.enabled_plugins(codex_home)
    if not plugins:
        return None
    ids = [p["id"] for p in plugins]
    message = (f"intent-loop is installed as the Codex plugin {', '.join(ids)} in {codex_home}; installing it "
               "user-level as well would run every hook twice and register a second intent_loop server. "
               f"Use the plugin, or remove it first (`codex plugin remove {ids[0]}`)"
               + (", or pass --force" if not force else ""))
    if apply and not force:
        raise IntentLoopError(ErrorCode.PLUGIN_INSTALLED, message, details={"plugins": ids})
    return {"code": ErrorCode.PLUGIN_INSTALLED, "message": message, "plugins": ids, "forced": force}


def cmd_uninstall(args, console):
    codex_home = codex_home_for(args.codex_home, console.env)
    path = os.path.join(codex_home, HOOKS_FILE)
    config, raw = load_config(path)
    mcp = mcp_config.plan(codex_home, install=False)
    if config is None or not our_entries(config):
        target = None
    else:
        target = without_ours(config)
    return _finish(args, console, "uninstall", path, raw, target, extra={}, mcp=mcp)


def _mcp_step(args, verb, mcp):
    """The config.toml half: its diff, and with --apply a backup and the write (through a symlink)."""
    out = {"path": mcp.path, "changed": mcp.new_bytes is not None, "applied": False, "backup": None, "diff": "",
           "warning": mcp.warning}
    if mcp.new_bytes is not None:
        new_bytes = mcp.new_bytes.encode("utf-8")
        old_bytes = mcp.raw.encode("utf-8") if mcp.raw is not None else None
        out["diff"] = unified_diff(mcp.path, old_bytes, new_bytes)
        if args.apply:
            out["backup"] = write_config(mcp.target, old_bytes, new_bytes)
            out["applied"] = True
    return out


def _finish(args, console, verb, path, raw, target, *, extra, runtimes=(), mcp=None):
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
        result["claude_code"] = CLAUDE_CODE_ROUTE
        result["old_runtimes"], runtimes_line = sweep(runtimes, apply=args.apply)
    if mcp is not None:
        result["mcp"] = _mcp_step(args, verb, mcp)
    if args.json:
        console.json(result)
        return 0
    if result.get("plugin_conflict"):
        conflict = result["plugin_conflict"]
        console.out(f"warning: {conflict['code']}: {conflict['message']}")
    if result["diff"]:
        console.out(result["diff"].rstrip("\n"))
    console.out(result["message"])
    if result["backup"]:
        console.out(f"backup: {result['backup']}")
    if mcp is not None:
        _print_mcp(console, result["mcp"], verb=verb, apply=args.apply)
    if verb == "install":
        if runtimes_line:
            console.out(runtimes_line)
        console.out(TRUST_REMINDER)
        console.out(CLAUDE_CODE_ROUTE)
    return 0


def _print_mcp(console, step, *, verb, apply):
    if step["warning"]:
        console.out(f"warning: {step['warning']['code']}: {step['warning']['message']}")
    if not step["changed"]:
        if not step["warning"]:
            console.out(f"MCP server: {step['path']} needs no change")
        return
    console.out(step["diff"].rstrip("\n"))
    done = f"{verb}ed the intent-loop MCP server in {step['path']}" if apply else \
        f"dry run: `intent-loop {verb} --apply` would write {step['path']}"
    console.out(done + (f" (backup: {step['backup']})" if step["backup"] else ""))


# -- old extracted runtimes ----------------------------------------------------------------

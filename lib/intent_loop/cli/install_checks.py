"""doctor's checks of how intent-loop is installed in each Codex home ($CODEX_HOME, ~/.codex), read from
Codex's own files and never written: hooks_installed, duplicate_install, hooks_trusted, hooks_ran and
hook_python (`intent-loop status` reads hooks_ran from here too); and in Claude Code (claude_code,
cli/claude_install.py), whose hooks hooks_ran covers too."""
import os

from intent_loop.base.data_root import ROOT_SUFFIX
from intent_loop.cli import python_checks
from intent_loop.cli.python_checks import check
from intent_loop.errors import IntentLoopError
from intent_loop.launch.binaries import HOOK_EVENTS, HOOK_PREFIX
from intent_loop.launch.hook_runs import UNTRUSTED_ACTION, ago


def codex_homes(env):
    """$CODEX_HOME and ~/.codex, each absolute one once: the Codex homes doctor reads."""
    homes = []
    for base in (env.get("CODEX_HOME"), os.path.join(env["HOME"], ".codex") if env.get("HOME") else None):
        if base and os.path.isabs(base) and base not in homes:
            homes.append(base)
    return homes


def install_checks(env, root=None):
    """hooks_installed (either way: user-level hooks.json or the Codex plugin), duplicate_install
    (both ways in one Codex home: every hook runs twice) and hooks_trusted (what config.toml
    records of the user's trust), from Codex's files, read only; then hooks_ran (have the installed
    hooks ever run) and hook_python (did a hook find its Python)."""
    from intent_loop.cli import hooks_ran, plugin_state
    from intent_loop.cli.hooks_config import CONFIG_READ_CAP
    from intent_loop.cli.old_runtimes import handler_programs
    from intent_loop.storage.paths import read_through_links

    found, twice, trust, unknown, installs = [], [], [], [], []
    homes = codex_homes(env)
    for home in homes:
        path = os.path.join(home, "hooks.json")
        try:  # through a dotfile manager's link, never a FIFO or /dev/zero, at most the read cap
            user_hooks = HOOK_PREFIX.encode() in (read_through_links(path, CONFIG_READ_CAP) or b"")
        except (OSError, IntentLoopError):
            user_hooks = False
        try:
            config = plugin_state.read_config(home)
        except IntentLoopError as exc:
            config = None
            unknown.append(f"{home}: {exc.code}")
        plugins = [p for p in plugin_state.plugin_installs(home, config) if p["enabled"]] if config is not None else []
        user = plugin_state.user_install(home, config) if config is not None else None
        if user_hooks:
            found.append(f"user-level in {path}" + (" with the MCP server" if user and user["mcp_server"] else ""))
            if user is not None and user["hooks"]:
                trust.append((f"{path}", len(plugin_state.user_trust(config, user)), len(user["hooks"])))
            for install, installed_at, program in hooks_ran.user_level_installs(handler_programs(path)):
                installs.append((f"user-level {os.path.dirname(program)}", install, installed_at))
        features = config.get("features") if config is not None else None
        off = isinstance(features, dict) and features.get("plugins") is False
        for plugin in plugins:
            versions = ", ".join(plugin["versions"]) or "no copy in the plugin cache"
            found.append(f"plugin {plugin['id']} ({versions}) in {home}"
                         + (" but [features] plugins = false: Codex runs none of it" if off else ""))
            copies = [os.path.join(plugin["cache"], v) for v in plugin["versions"]]
            hooks_file = plugin_state.plugin_hooks_file(copies[-1]) if copies else "hooks/hooks.json"
            trust.append((plugin["id"], len(plugin_state.plugin_trust(config, plugin["id"], hooks_file)),
                          len(HOOK_EVENTS)))
            for copy in copies if not off else ():
                known = hooks_ran.plugin_copy_install(copy)
                if known is not None:
                    installs.append((f"plugin {plugin['id']} ({os.path.basename(copy)})", *known))
        if plugins and (user_hooks or (user and user["mcp_server"])):
            twice.append(f"{home}: plugin {', '.join(p['id'] for p in plugins)} and the user-level "
                         + ("hooks" if user_hooks else "MCP server"))
        elif len(plugins) > 1:  # e.g. the local dist/marketplace build and the repository's plugin
            twice.append(f"{home}: plugins {' and '.join(p['id'] for p in plugins)}")
    checks = [check("hooks_installed", found, "; ".join(found) if found else
                     f"no intent-loop hooks or plugin in {', '.join(homes) or 'any Codex home'}",
                     "install the plugin (README, Install) or run `intent-loop install --apply`, "
                     "then trust the hooks in Codex")]
    checks.append(check("duplicate_install", not twice,
                         "no Codex home has intent-loop installed twice" if not twice else
                         "installed twice, every hook runs twice: " + "; ".join(twice),
                         "keep one: `codex plugin remove intent-loop@<marketplace>` or "
                         "`intent-loop uninstall --apply`"))
    untrusted = [where for where, n, total in trust if n < total]
    detail = ("trust recorded in config.toml for " + ", ".join(f"{where} ({n} of {total})" for where, n, total in trust)
              if trust else "no installed hooks to trust")
    if trust:
        detail += "; Codex alone can tell whether a record still matches (a new build needs trusting again)"
    if unknown:
        detail += "; config.toml unreadable: " + ", ".join(unknown)
    checks.append(check("hooks_trusted", not untrusted, detail,
                         "start Codex, open `/hooks` and trust the intent-loop hooks (Codex skips untrusted "
                         "hooks silently)"))
    from intent_loop.cli.claude_install import claude_code_check, claude_installs

    claude = claude_installs(env)  # Claude Code's copies leave the same run records (docs/hosts.md)
    checks.append(claude_code_check(claude))
    for plugin in claude:
        known = hooks_ran.plugin_copy_install(plugin["path"]) if plugin["enabled"] else None
        if known is not None:
            installs.append((f"Claude Code plugin {plugin['id']} ({plugin['version']})", *known))
    roots = list(dict.fromkeys(([root] if root else []) + [os.path.join(h, *ROOT_SUFFIX) for h in homes]))
    ran = hooks_ran.verdicts(roots, installs)
    checks.append(check("hooks_ran", all(ok for ok, _line in ran),
                         "; ".join(line for _ok, line in ran) if ran else "no installed hooks",
                         UNTRUSTED_ACTION))
    checks.append(python_checks.hook_python_check(roots, hooks_ran.python_told(roots), env=env, ago=ago))
    return checks

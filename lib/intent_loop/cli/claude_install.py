"""doctor's view of intent-loop in Claude Code (docs/hosts.md), read from Claude Code's own files and
never written: which release of the plugin it installed, whether it is enabled, and where its copy
is, so that install_checks' hooks_ran covers its hooks too (they leave the same run records)."""
import json
import os

from intent_loop.cli.python_checks import check
from intent_loop.errors import IntentLoopError

PLUGIN = "intent-loop"
_READ_CAP = 1 << 20


def claude_home(env):
    """$CLAUDE_CONFIG_DIR when absolute, else ~/.claude, or None."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured and os.path.isabs(configured):
        return configured
    home = env.get("HOME")
    return os.path.join(home, ".claude") if home and os.path.isabs(home) else None


def _read_json(path):
    from intent_loop.storage.paths import read_through_links

    try:
        data = read_through_links(path, _READ_CAP)
        value = json.loads(data) if data else None
    except (OSError, ValueError, IntentLoopError):
        return None
    return value if isinstance(value, dict) else None


def claude_installs(env):
    """[{"id", "version", "path", "enabled"}] of the intent-loop plugins Claude Code installed (its
    plugins/installed_plugins.json, version 2; enabledPlugins in settings.json)."""
    home = claude_home(env)
    if home is None:
        return []
    installed = _read_json(os.path.join(home, "plugins", "installed_plugins.json")) or {}
    settings = _read_json(os.path.join(home, "settings.json")) or {}
    enabled = settings.get("enabledPlugins") if isinstance(settings.get("enabledPlugins"), dict) else {}
    found = []
    plugins = installed.get("plugins") if isinstance(installed.get("plugins"), dict) else {}
    for plugin_id, entries in sorted(plugins.items()):
        if plugin_id.partition("@")[0] != PLUGIN or not isinstance(entries, list):
            continue
        for entry in entries:
            if isinstance(entry, dict) and isinstance(entry.get("installPath"), str):
                found.append({"id": plugin_id, "version": str(entry.get("version", "?")), "path": entry["installPath"],
                              "enabled": enabled.get(plugin_id) is True})
    return found


def claude_code_check(installs):
    """The `claude_code` check: the plugin, its release and whether it is enabled; never a failure when
    Claude Code is not used (a host you do not run is nothing to fix)."""
    if not installs:
        return check("claude_code", True, "no intent-loop plugin in Claude Code (docs/install.md, \"Claude Code\")")
    disabled = [i for i in installs if not i["enabled"]]
    detail = "; ".join(f"plugin {i['id']} {i['version']} ({'enabled' if i['enabled'] else 'disabled'}) at {i['path']}"
                       for i in installs)
    return check("claude_code", not disabled, detail + "; Guard does not run there, and it asks no hook trust",
                 f"enable it: `claude plugin enable {disabled[0]['id']}`" if disabled else None)

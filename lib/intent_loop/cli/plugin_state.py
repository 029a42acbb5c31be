"""What Codex's own files say about intent-loop in one Codex home: installed as a plugin, installed
user-level (hooks.json + config.toml), and whether Codex recorded trust in its hooks. Read only:
nothing here writes a file of Codex's.

Facts of Codex 0.169.0 (observed, docs/upgrading.md): `codex plugin add intent-loop@<marketplace>`
writes `[plugins."intent-loop@<marketplace>"] enabled = true` into config.toml and copies the
plugin to `plugins/cache/<marketplace>/intent-loop/<version>/`; `codex plugin remove` deletes
both. Trusting a hook writes `[hooks.state."<key>"] trusted_hash = ..., trusted_content_hash = ...`
into config.toml (a hook runs only with both), the key
being `<plugin id>:<hooks file>:<event>:<group>:<handler>` for a plugin's hook (the hooks file as
the manifest names it: `hooks/hooks.json` for dist/marketplace's plugin, `hooks.json` for the
repository's, both seen with 0.169.0) and
`<path of hooks.json>:<event>:<group>:<handler>` for a user-level one (event in snake case,
indexes from 0). Codex hashes what it trusts in its own way: a record says the user trusted the
hook once, not that the record still matches (a new plugin build never does).
"""
import json
import os

from intent_loop.cli import mcp_config
from intent_loop.cli.hooks_config import HOOKS_FILE, is_ours, load_config
from intent_loop.errors import IntentLoopError
from intent_loop.launch.binaries import HOOKS

PLUGIN_NAME = "intent-loop"
EVENT_KEYS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop"}


def read_config(codex_home):
    """config.toml parsed ({} when missing); CODEX_CONFIG_INVALID when Codex could not read it either."""
    return mcp_config.read(os.path.join(codex_home, mcp_config.CONFIG_FILE))[1]


def plugin_installs(codex_home, config):
    """Every `intent-loop@<marketplace>` config.toml names, with whether it is enabled and the
    versions copied to Codex's plugin cache for it."""
    found = []
    plugins = config.get("plugins")
    for plugin_id, table in sorted(plugins.items()) if isinstance(plugins, dict) else ():
        name, _, marketplace = plugin_id.partition("@")
        if name != PLUGIN_NAME or not marketplace or not isinstance(table, dict):
            continue
        cache = os.path.join(codex_home, "plugins", "cache", marketplace, PLUGIN_NAME)
        try:
            versions = sorted(v for v in os.listdir(cache) if os.path.isdir(os.path.join(cache, v)))
        except OSError:
            versions = []
        found.append({"id": plugin_id, "marketplace": marketplace, "enabled": table.get("enabled", True) is not False,
                      "versions": versions, "cache": cache})
    return found


def user_install(codex_home, config):
    """{hooks: [events with our handler in <codex-home>/hooks.json], positions, mcp_server: bool}."""
    path = os.path.join(codex_home, HOOKS_FILE)
    try:
        hooks_config, _raw = load_config(path)
    except IntentLoopError:  # Codex ignores a hooks.json it cannot read: nothing runs from it
        hooks_config = None
    positions = {}
    for event, groups in ((hooks_config or {}).get("hooks") or {}).items():
        for g, group in enumerate(groups):
            for h, handler in enumerate(group.get("hooks") or []):
                if is_ours(handler):
                    positions.setdefault(event, (g, h))
    servers = config.get("mcp_servers")
    table = servers.get(mcp_config.SERVER_NAME) if isinstance(servers, dict) else None
    return {"path": path, "hooks": sorted(positions), "positions": positions,
            "mcp_server": isinstance(table, dict) and mcp_config.is_our_table(table)}


def _trusted(config, key):
    """Codex 0.169.0 runs a hook only when its record holds BOTH hashes: with `trusted_hash` alone it
    calls the hook modified and skips it without a word."""
    states = (config.get("hooks") or {}).get("state") if isinstance(config.get("hooks"), dict) else None
    state = states.get(key) if isinstance(states, dict) else None
    return isinstance(state, dict) and isinstance(state.get("trusted_hash"), str) \
        and isinstance(state.get("trusted_content_hash"), str) and state.get("enabled") is not False


def plugin_hooks_file(copy):
    """The hooks file a plugin copy's manifest names, relative to the plugin root, as Codex keys
    its trust records: `hooks.json` for the repository plugin, `hooks/hooks.json` for
    dist/marketplace's (and Codex's default without a `hooks` field)."""
    from intent_loop.storage.paths import read_through_links

    try:
        manifest = json.loads(read_through_links(os.path.join(copy, ".codex-plugin", "plugin.json"), 65536) or b"{}")
    except (OSError, ValueError, IntentLoopError):
        manifest = {}
    hooks = manifest.get("hooks") if isinstance(manifest, dict) else None
    return hooks[2:] if isinstance(hooks, str) and hooks.startswith("./") else "hooks/hooks.json"


def plugin_trust(config, plugin_id, hooks_file="hooks/hooks.json"):
    """Events of our plugin hooks with a trust record (our hooks.json has one group, one handler each)."""
    return sorted(hook.event for hook in HOOKS
                  if _trusted(config, f"{plugin_id}:{hooks_file}:{EVENT_KEYS[hook.event]}:0:0"))


def user_trust(config, install):
    return sorted(event for event, (g, h) in install["positions"].items() if event in EVENT_KEYS
                  and _trusted(config, f"{install['path']}:{EVENT_KEYS[event]}:{g}:{h}"))


def enabled_plugins(codex_home):
    """The enabled intent-loop plugin installs of a Codex home ([] when config.toml is unreadable:
    the MCP step of install reports that file's error itself)."""
    try:
        config = read_config(codex_home)
    except IntentLoopError:
        return []
    return [p for p in plugin_installs(codex_home, config) if p["enabled"]]

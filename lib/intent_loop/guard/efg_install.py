"""Why Guard's hooks would or would not run, from Codex's own files (read only): the plugin
installed and enabled in config.toml, its copy in Codex's plugin cache, `[features]`, a
user-level <codex home>/hooks.json naming Guard, and the trust records of Guard's hooks.

Facts of Codex 0.169.0: `codex plugin add execution-fidelity-guard@<marketplace>` writes
`[plugins."execution-fidelity-guard@<marketplace>"] enabled = true` and copies the plugin to
`plugins/cache/<marketplace>/execution-fidelity-guard/<version>/`; the marketplace name is the
user's choice, so installs are matched by the plugin name before the `@`. A hook runs only once
trusted, and trusted means its `[hooks.state."<key>"]` record holds BOTH `trusted_hash` and
`trusted_content_hash` (with the first alone Codex calls it modified and skips it without a
word). Guard 0.2.2 has 11 hooks (guard/enforcement.GUARD_HOOKS). `[features] hooks = false`
(or its old name `codex_hooks`) turns every hook off, `plugins = false` every plugin.

Parsing TOML costs a hook a few milliseconds, so guard/enforcement.py caches these facts by the
identity (device, inode, size, mtime) of config.toml and hooks.json: parsed again only when one changed.
"""
from intent_loop.base import fast_os

PLUGIN_NAME = "execution-fidelity-guard"
_CONFIG_CAP = 4 << 20


def read_facts(codex_home):
    """{"plugins": [{"id", "marketplace", "enabled", "trusted", "disabled_hooks"}], "features":
    {"hooks", "plugins"}, "user_hooks": {"handlers", "trusted"}, "config": "ok"|"missing"|"invalid"}
    from config.toml and <codex home>/hooks.json."""
    facts = {"plugins": [], "features": {"hooks": True, "plugins": True},
             "user_hooks": {"handlers": 0, "trusted": 0}, "config": "ok"}
    config = _parse_config(fast_os.path.join(codex_home, "config.toml"), facts)
    features = config.get("features") if isinstance(config.get("features"), dict) else {}
    for name in ("hooks", "plugins"):
        value = features.get(name, features.get("codex_hooks") if name == "hooks" else None)
        facts["features"][name] = value is not False
    states = _hook_states(config)
    plugins = config.get("plugins") if isinstance(config.get("plugins"), dict) else {}
    for plugin_id, table in sorted(plugins.items()):
        name, _at, marketplace = plugin_id.partition("@")
        if name != PLUGIN_NAME or not marketplace or not isinstance(table, dict):
            continue
        mine = {key: state for key, state in states.items() if key.startswith(plugin_id + ":")}
        facts["plugins"].append({
            "id": plugin_id, "marketplace": marketplace, "enabled": table.get("enabled", True) is not False,
            "trusted": sum(1 for state in mine.values() if _is_trusted(state)),
            "disabled_hooks": sum(1 for state in mine.values() if state.get("enabled") is False)})
    hooks_file = fast_os.path.join(codex_home, "hooks.json")
    positions = _user_level_guard_hooks(hooks_file)
    facts["user_hooks"] = {"handlers": len(positions),
                           "trusted": sum(1 for key in positions if _is_trusted(states.get(f"{hooks_file}:{key}")))}
    return facts


def _is_trusted(state):
    return isinstance(state, dict) and isinstance(state.get("trusted_hash"), str) \
        and isinstance(state.get("trusted_content_hash"), str) and state.get("enabled") is not False


def _hook_states(config):
    hooks = config.get("hooks") if isinstance(config.get("hooks"), dict) else {}
    states = hooks.get("state") if isinstance(hooks.get("state"), dict) else {}
    return {key: state for key, state in states.items() if isinstance(state, dict)}


def _parse_config(path, facts):
    from intent_loop.storage.paths import read_through_links

    try:
        data = read_through_links(path, _CONFIG_CAP)
    except Exception:  # unreadable, too big: Codex runs with its defaults or not at all
        data = None
    if data is None:
        facts["config"] = "missing"
        return {}
    import tomllib

    try:
        return tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        facts["config"] = "invalid"
        return {}


def _user_level_guard_hooks(path):
    """["<event snake>:<group>:<handler>"] of the handlers in a user-level hooks.json that run Guard."""
    import json

    from intent_loop.storage.paths import read_through_links

    try:
        document = json.loads(read_through_links(path, 1 << 20) or b"{}")
    except Exception:  # Codex ignores a hooks.json it cannot read: nothing runs from it
        return []
    found = []
    events = document.get("hooks") if isinstance(document, dict) else None
    for event, groups in (events.items() if isinstance(events, dict) else ()):
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else ()):
                command = handler.get("command") if isinstance(handler, dict) else None
                if isinstance(command, str) and PLUGIN_NAME in command:
                    found.append(f"{_snake(event)}:{g}:{h}")
    return found


def _snake(event):
    return "".join("_" + c.lower() if c.isupper() and i else c.lower() for i, c in enumerate(event))

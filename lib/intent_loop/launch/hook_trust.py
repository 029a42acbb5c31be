"""Why Codex did not run the hooks of the plugin copy this process runs from, as far as Codex's own
files can tell (intent_status's `hooks.cause`; the MCP server gets no CODEX_HOME from Codex, so the
Codex home is read off the copy's own path, `<codex home>/plugins/cache/<marketplace>/<plugin>/<version>/`).

Codex 0.169.0 runs a plugin's hook only when config.toml holds a `[hooks.state."<plugin>@<marketplace>:..."]`
record with BOTH `trusted_hash` and `trusted_content_hash`; a record whose hashes no longer match the
copy (a new version, an edited file) leaves the hook skipped without a word. So the words can only be
as sure as this: no record at all, or trusted once but not run since this copy was installed.
"""
import os

NO_TRUST_RECORD = "no_trust_record"
TRUSTED_ONCE = "trusted_once"
CAUSES = {
    NO_TRUST_RECORD: "Codex has no trust record for these hooks: open /hooks in the Codex TUI and trust them",
    TRUSTED_ONCE: "these hooks were trusted once, but have not run since this copy was installed (likely "
                  "modified since trusted: open /hooks in the Codex TUI and trust them again)",
}


def plugin_copy_of(executable):
    """(codex home, "<plugin>@<marketplace>") when `executable` lies in a copy in Codex's plugin
    cache, else None."""
    parts = os.path.realpath(executable).split(os.sep) if executable else []
    for index in range(len(parts) - 4, 0, -1):
        if parts[index - 1:index + 1] == ["plugins", "cache"] and index + 3 < len(parts):
            home = os.sep.join(parts[:index - 1]) or os.sep
            return home, f"{parts[index + 2]}@{parts[index + 1]}"
    return None


def untrusted_cause(executable):
    """NO_TRUST_RECORD, TRUSTED_ONCE, or None when this is not a plugin copy or config.toml cannot
    be read."""
    found = plugin_copy_of(executable)
    if found is None:
        return None
    home, plugin_id = found
    import tomllib

    try:
        with open(os.path.join(home, "config.toml"), "rb") as config_file:
            config = tomllib.loads(config_file.read(4 << 20).decode("utf-8"))
    except (OSError, ValueError):
        return None
    hooks = config.get("hooks") if isinstance(config.get("hooks"), dict) else {}
    states = hooks.get("state") if isinstance(hooks.get("state"), dict) else {}
    trusted = [state for key, state in states.items() if key.startswith(plugin_id + ":") and isinstance(state, dict)
               and isinstance(state.get("trusted_hash"), str) and isinstance(state.get("trusted_content_hash"), str)]
    return TRUSTED_ONCE if trusted else NO_TRUST_RECORD

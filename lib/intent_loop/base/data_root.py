"""Find the data root from the environment; dependency-free so the launcher can embed it.

The one rule for where intent-loop keeps its data. Its shell twin is launch/data_root.sh, which
both sh launchers use before any Python runs (the interpreter's record, the extracted runtime and
bytecode live under the data root): change the order in both, and tests/launch/test_data_root_sh.py
compares the two over every combination of the variables. build.py also embeds this module's
source in each binary's Python launcher (it swaps the `fast_os` import below for the real `os`).
"""
from intent_loop.base import fast_os

ROOT_SUFFIX = ("plugin-data", "intent-loop", "v1")


def _codex_home_from_plugin_data(plugin_data):
    """Codex sets PLUGIN_DATA to <codex-home>/plugins/data/<plugin>; return <codex-home> or None."""
    parts = fast_os.path.normpath(plugin_data).rsplit(fast_os.sep, 3)
    if len(parts) == 4 and parts[1] == "plugins" and parts[2] == "data" and parts[3] and parts[0]:
        return parts[0]
    return None


def _codex_home_from_executable(executable):
    """An executable inside <codex-home>/plugins/cache/... names the Codex home it belongs to."""
    marker = fast_os.sep + fast_os.path.join("plugins", "cache") + fast_os.sep
    path = fast_os.path.abspath(executable)
    index = path.find(marker)
    return path[:index] if index > 0 else None


def _under(base, *parts):
    """The normalized join: both launchers name a root by exactly this string."""
    return fast_os.path.normpath(fast_os.path.join(base, *parts))


def find_data_root(env, executable=None, home=None):
    """(data_root, how_chosen), or None when nothing applies; ValueError for a relative override.

    The order extends the seed's (override, CODEX_HOME, PLUGIN_DATA, cache layout) with
    `~/.codex` when it exists: Codex does not export CODEX_HOME to hooks, so without this
    step the hooks and the command line would disagree about where data lives.
    """
    explicit = env.get("INTENT_LOOP_DATA_DIR")
    if explicit:
        if not fast_os.path.isabs(explicit):
            raise ValueError(f"INTENT_LOOP_DATA_DIR must be an absolute path, got {explicit!r}")
        return fast_os.path.normpath(explicit), "INTENT_LOOP_DATA_DIR"
    codex_home = env.get("CODEX_HOME")
    if codex_home and fast_os.path.isabs(codex_home):
        return _under(codex_home, *ROOT_SUFFIX), "CODEX_HOME"
    plugin_data = env.get("PLUGIN_DATA")
    if plugin_data and fast_os.path.isabs(plugin_data):
        inferred = _codex_home_from_plugin_data(plugin_data)
        if inferred:
            return _under(inferred, *ROOT_SUFFIX), "PLUGIN_DATA (Codex layout)"
        return _under(plugin_data, "intent-loop", "v1"), "PLUGIN_DATA"
    if executable:
        inferred = _codex_home_from_executable(executable)
        if inferred:
            return _under(inferred, *ROOT_SUFFIX), "plugin cache path"
    home = home if home is not None else env.get("HOME")
    if home and fast_os.path.isabs(home) and fast_os.path.isdir(fast_os.path.join(home, ".codex")):
        return _under(home, ".codex", *ROOT_SUFFIX), "~/.codex"
    return None

"""Find the data root from the environment; dependency-free so the launcher can embed it.

The one rule for where intent-loop keeps its data. Its shell twin is launch/data_root.sh, which
both sh launchers use before any Python runs (the interpreter's record, the extracted runtime and
bytecode live under the data root): change the order in both, and tests/launch/test_data_root_sh.py
compares the two over every combination of the variables. build.py also embeds this module's
source in each binary's Python launcher (it swaps the `fast_os` import below for the real `os`).
"""
from intent_loop.base import fast_os

ROOT_SUFFIX = ("plugin-data", "intent-loop", "v1")
CODEX_CONFIG = "config.toml"


def _codex_home_from_plugin_data(plugin_data):
    """Codex sets PLUGIN_DATA to <codex-home>/plugins/data/<plugin>; return <codex-home> or None."""
    parts = fast_os.path.normpath(plugin_data).rsplit(fast_os.sep, 3)
    if len(parts) == 4 and parts[1] == "plugins" and parts[2] == "data" and parts[3] and parts[0]:
        return parts[0]
    return None


def _codex_home_from_executable(executable):
    """An executable inside <home>/plugins/cache/... names <home> when it is a Codex home: one that
    holds Codex's config.toml (where `codex plugin add` enables a plugin). Claude Code's home has the
    same plugins/cache layout and no config.toml: its plugin copy must not make a store of its own."""
    marker = fast_os.sep + fast_os.path.join("plugins", "cache") + fast_os.sep
    path = fast_os.path.abspath(executable)
    index = path.find(marker)
    if index > 0 and fast_os.path.isfile(fast_os.path.join(path[:index], CODEX_CONFIG)):
        return path[:index]
    return None


def _under(base, *parts):
    """The normalized join: both launchers name a root by exactly this string."""
    return fast_os.path.normpath(fast_os.path.join(base, *parts))


def find_data_root(env, executable=None, home=None):
    """(data_root, how_chosen), or None when nothing applies; ValueError for a relative override.

    One store for every host, the command line and the MCP server (issue 37): the seed's order
    (override, CODEX_HOME, PLUGIN_DATA, cache layout), where PLUGIN_DATA and the cache path count
    only in Codex's layout, then `~/.codex/plugin-data/...` whether or not ~/.codex exists yet.
    Codex does not export CODEX_HOME to hooks, and Claude Code's plugin variables
    (CLAUDE_PLUGIN_DATA, set by both hosts) are per plugin: the last step is what makes the hooks of
    either host and a terminal with no host variables land on the same store, whichever host ran
    first and whether or not the other is installed.
    """
    for root, how in _steps(env, executable, home):
        if root is None:
            # .get: `env` may be fast_os.environment, which reads the process's variables by get() only
            raise ValueError(f"INTENT_LOOP_DATA_DIR must be an absolute path, got {env.get('INTENT_LOOP_DATA_DIR')!r}")
        return root, how
    return None


def candidate_roots(env, home=None):
    """Every root a step of find_data_root names from this environment, whichever step wins, and the
    one a build before 0.3.0 named for a PLUGIN_DATA outside Codex's layout: where a second store of
    the same user may lie (a CODEX_HOME, or INTENT_LOOP_DATA_DIR, set for one host or one shell
    only). Absolute values only, in the order's order, each once."""
    found = [root for root, _how in _steps(env, None, home, former=True) if root is not None]
    return [root for index, root in enumerate(found) if root not in found[:index]]


def _steps(env, executable, home, *, former=False):
    """(root, how_chosen) for each step of the order that applies, first to last, lazily (the
    plugin-cache step costs a stat): None for the root of a relative INTENT_LOOP_DATA_DIR, which
    find_data_root refuses. `former`: also the root a build before 0.3.0 named for a PLUGIN_DATA
    outside Codex's layout (no store now, but where such data may still lie)."""
    explicit = env.get("INTENT_LOOP_DATA_DIR")
    if explicit:
        yield (fast_os.path.normpath(explicit) if fast_os.path.isabs(explicit) else None), "INTENT_LOOP_DATA_DIR"
    codex_home = env.get("CODEX_HOME")
    if codex_home and fast_os.path.isabs(codex_home):
        yield _under(codex_home, *ROOT_SUFFIX), "CODEX_HOME"
    plugin_data = env.get("PLUGIN_DATA")
    if plugin_data and fast_os.path.isabs(plugin_data):
        inferred = _codex_home_from_plugin_data(plugin_data)
        if inferred:
            yield _under(inferred, *ROOT_SUFFIX), "PLUGIN_DATA (Codex layout)"
        elif former:
            yield _under(plugin_data, "intent-loop", "v1"), "PLUGIN_DATA (before 0.3.0)"
    if executable:
        inferred = _codex_home_from_executable(executable)
        if inferred:
            yield _under(inferred, *ROOT_SUFFIX), "plugin cache path"
    home = home if home is not None else env.get("HOME")
    if home and fast_os.path.isabs(home):
        yield _under(home, ".codex", *ROOT_SUFFIX), "~/.codex"


def other_stores(env, data_root, project_id):
    """The other candidate roots that hold a ledger of this project: a store the hooks of one host,
    or the command line, would use instead of `data_root` (docs/storage.md, "Two stores"). One
    lstat each, nothing created."""
    found = []
    for root in candidate_roots(env):
        if root != data_root:
            try:
                fast_os.lstat(fast_os.path.join(root, "projects", project_id, "ledger.jsonl"))
            except OSError:
                continue
            found.append(root)
    return found

"""Which extracted runtimes of earlier builds no installed binary uses, and which bytecode trees no
installed source, and sweeping them (install --apply removes them, doctor reports them)."""
import os
import sys

from intent_loop.cli.hooks_config import HOOKS_FILE, codex_home_for, handler_program, is_ours, load_config
from intent_loop.errors import IntentLoopError
from intent_loop.launch.binaries import BINARIES, BY_NAME


def old_runtimes(console, *, codex_home=None, dist=None, replacing=None):
    """The extracted runtimes (<data root>/runtime/<build id>/) that no binary still in use needs:
    in use are this process's own, those in `dist`, our handlers' in the hooks.json of each Codex
    home (except `replacing`, which install is about to rewrite) and the plugin copies there. Then
    the trees of <data root>/pycache/ whose sources are gone (plugin versions no longer installed)."""
    from intent_loop.base.data_root import ROOT_SUFFIX
    from intent_loop.launch import bytecode_cache, extracted_runtime
    from intent_loop.storage.paths import resolve_data_root

    home_dir = console.env.get("HOME")
    homes = [codex_home, codex_home_for(None, console.env), os.path.join(home_dir, ".codex") if home_dir else None]
    homes = list(dict.fromkeys(h for h in homes if h))
    binaries = [sys.argv[0]] if sys.argv and sys.argv[0] else []
    binaries += [os.path.join(dist, binary.name) for binary in BINARIES] if dist else []
    for home in homes:
        if os.path.join(home, HOOKS_FILE) != replacing:
            binaries += handler_programs(os.path.join(home, HOOKS_FILE))
        binaries += _plugin_copies(home)
    in_use = {extracted_runtime.build_id_of(b) for b in binaries} | {extracted_runtime.running_build_id()}
    roots = [os.path.join(home, *ROOT_SUFFIX) for home in homes]
    try:
        roots.insert(0, resolve_data_root(console.env, executable=sys.argv[0] if sys.argv else None)[0])
    except IntentLoopError:
        pass
    return [r for root in dict.fromkeys(roots)
            for r in extracted_runtime.old_runtimes(root, in_use) + bytecode_cache.stale_trees(root)]


def handler_programs(path):
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


def sweep(runtimes, *, apply):
    """({found, removed, errors} for --json, the line to print or None); removes with --apply."""
    from intent_loop.launch import extracted_runtime

    report = {"found": [dict(r) for r in runtimes], "removed": [], "errors": []}
    if not runtimes:
        return report, None
    if not apply:
        return report, (f"not used by any installed binary or plugin: {extracted_runtime.describe(runtimes)}; "
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

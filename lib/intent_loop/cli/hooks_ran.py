"""doctor's `hooks_ran` and `python` checks: has Codex run the hooks of what is installed, and did a
hook find a Python? Codex skips untrusted hooks without a word, so an install whose hooks never
ran since it was installed is the one sign a user can be shown (launch/hook_runs.py records runs).

An install is a plugin copy in Codex's plugin cache (the source-run repository plugin or
dist/marketplace's binaries) or the user-level handlers in <codex-home>/hooks.json.
"""
import os

from intent_loop.launch import hook_runs
from intent_loop.launch.extracted_runtime import build_id_of
from intent_loop.launch.run_record import source_install_id


def plugin_copy_install(copy):
    """(install id, installed at) of one plugin copy, or None when it holds neither launcher."""
    install = source_install_id(copy)
    if install is None:
        install = build_id_of(os.path.join(copy, "dist", "intent-loop-stop"))
    if install is None:
        return None
    return install, _mtime(os.path.join(copy, ".codex-plugin", "plugin.json"))


def user_level_installs(programs):
    """[(install id, installed at, program)] of the user-level handlers' binaries."""
    found = {}
    for program in programs:
        install = build_id_of(program) if program else None
        if install and install not in found:
            found[install] = (install, _mtime(program), program)
    return list(found.values())


def _mtime(path):
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def verdicts(data_roots, installs):
    """[(ok, line)] for every (label, install id, installed at): runs are looked up in every data
    root the hooks may use (the one this command uses, and each Codex home's)."""
    out = []
    for label, install, installed_at in installs:
        best = None
        for root in data_roots:
            ok, sentence = hook_runs.verdict(root, install, installed_at)
            if best is None or (ok and not best[0]):
                best = (ok, sentence)
        out.append((best[0], f"{label}: {best[1]}"))
    return out


def python_told(data_roots):
    """The newest time a hook said it found no Python, when no hook ran after it, else None."""
    told = [t for t in (hook_runs.no_python_told(root) for root in data_roots) if t]
    if not told:
        return None
    newest_run = max([0.0] + [t for root in data_roots for t in hook_runs.all_runs(root).values()])
    return max(told) if max(told) > newest_run else None

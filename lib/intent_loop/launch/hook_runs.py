"""Which installs' hooks have run: every hook run leaves its install's id and the time in the data
root, so `doctor` and `intent_status` can say when Codex never ran the hooks of what is installed.

Codex skips an untrusted or disabled hook without a word (a plugin's hooks are untrusted again by
any changed byte of the plugin: docs/upgrading.md). Nothing inside a session can see that, but
the absence of runs can: `<data root>/runtime/<install id>/hooks-ran/<Event>`, whose mtime is the
last run and whose text is the launcher that ran it. It lives in the data root, never in a
project, so a hook run in a folder that is not a project creates none. Cost: one utime a run.

An install id is the build id of a binary (the directory of its extracted runtime), or for the
plugin that runs the committed source tree, `source-` and 16 hex digits of a hash of that tree's
real path and its launcher's inode and mtime: each `codex plugin add` copies a new tree (a new
inode), so each install has its own id, and the id is computed by one stat. The writer is
launch/run_record.py, kept small since every hook loads it.
"""
import time

from intent_loop.base import fast_os as os
from intent_loop.base.timestamps import duration_words
from intent_loop.launch.binaries import HOOK_EVENTS
from intent_loop.launch.run_record import RAN_DIR, RUNTIME_DIR, running_install_id

NO_PYTHON_TOLD = "no-python-told"  # launch/find_python.sh writes the session it told
UNTRUSTED_ACTION = ("Codex may not trust these hooks: start Codex, open `/hooks` and trust the intent-loop "
                    "hooks, then send one prompt")


def runs(data_root, install):
    """{event: last run (epoch seconds)} of an install's hooks (empty: never ran)."""
    ran = os.path.join(data_root, RUNTIME_DIR, install, RAN_DIR)
    found = {}
    try:
        names = os.listdir(ran)
    except OSError:
        return found
    for name in names:
        try:
            st = os.lstat(os.path.join(ran, name))
        except OSError:
            continue
        found[name] = st.st_mtime
    return found


def all_runs(data_root):
    """{install id: newest run} over every install that left a trace."""
    base = os.path.join(data_root, RUNTIME_DIR)
    try:
        names = os.listdir(base)
    except OSError:
        return {}
    newest = {}
    for name in names:
        times = runs(data_root, name)
        if times:
            newest[name] = max(times.values())
    return newest


def no_python_told(data_root):
    """When a hook last answered that it found no Python (epoch seconds), or None."""
    try:
        return os.lstat(os.path.join(data_root, RUNTIME_DIR, NO_PYTHON_TOLD)).st_mtime
    except OSError:
        return None


def own_state(data_root, executable):
    """{ran, detail, next_action} of the install this process runs from (intent_status's `hooks`)."""
    install = running_install_id()
    try:
        installed_at = os.stat(executable).st_mtime if executable else 0.0
    except OSError:
        installed_at = 0.0
    ok, sentence = verdict(data_root, install, installed_at) if install else (False, "unknown install")
    state = {"ran": ok, "install": install, "detail": sentence, "next_action": None if ok else UNTRUSTED_ACTION,
             "cause": None}
    if not ok:  # why, as sure as Codex's files can say (launch/hook_trust.py)
        from intent_loop.launch.hook_trust import CAUSES, untrusted_cause

        state["cause"] = untrusted_cause(executable)
        if state["cause"] is not None:
            state["next_action"] = CAUSES[state["cause"]]
    return state


def verdict(data_root, install, installed_at):
    """(ok, sentence) about one install: its hooks ran, or never since it was installed (and
    whether another install's ran after that, as an older build's would while Codex distrusts
    the new one)."""
    ran = runs(data_root, install)
    missing = [e for e in HOOK_EVENTS if e not in ran]
    if ran and not missing:
        return True, f"its hooks last ran {ago(max(ran.values()))}"
    if ran:
        return True, f"its hooks ran ({', '.join(sorted(ran))}), {', '.join(missing)} not yet"
    others = {i: t for i, t in all_runs(data_root).items() if i != install and t >= installed_at}
    sentence = f"its hooks have never run since it was installed {ago(installed_at)}"
    if others:
        sentence += f", while another install's hooks ran {ago(max(others.values()))}"
    return False, sentence


def ago(when):
    """"2 days ago", worded as the task ages a session is told (base/timestamps.py)."""
    return f"{duration_words(time.time() - when)} ago"


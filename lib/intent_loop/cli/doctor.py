"""doctor: every check a user could trip over, each with its next action (content-free reports)."""
import os
import time

from intent_loop.base.data_root import candidate_roots
from intent_loop.cli import python_checks
from intent_loop.cli.common import current_project, damage_next_action, data_root, load_state
from intent_loop.cli.install_checks import codex_homes, install_checks
from intent_loop.cli.old_runtimes import old_runtimes
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import provider
from intent_loop.hook import failure_log
from intent_loop.intent.state import REDUCER
from intent_loop.launch.binaries import BINARIES
from intent_loop.launch.extracted_runtime import describe as describe_runtimes
from intent_loop.storage.paths import ProjectPaths
from intent_loop.storage.reading import verify_all

_BINARIES = tuple(binary.name for binary in BINARIES)


_check = python_checks.check  # one shape for every check (name, ok, detail, next_action)


def projects(root):
    directory = os.path.join(root, "projects")
    try:
        return sorted(n for n in os.listdir(directory) if os.path.isdir(os.path.join(directory, n)))
    except OSError:
        return []


def _guard_check(console):
    """What Guard enforces, as the hooks last saw it in this project (this terminal cannot see Codex's
    EFG_MODE), and what Codex's files say of Guard's install. Only hooks that do not run fail: shadow,
    off and no Guard are choices, told as what they are."""
    from intent_loop.guard.efg_install import read_facts
    from intent_loop.guard.enforcement import GUARD_HOOKS, reported
    from intent_loop.ops.enforcement_words import TURN_ON, enforcement_summary

    try:
        seen = reported(current_project(console))
    except IntentLoopError:
        seen = None
    installs = []
    for home in codex_homes(console.env):
        facts = read_facts(home)
        installs += [f"{p['id']} ({'enabled' if p['enabled'] else 'disabled'}, "
                     f"{p['trusted']} of {GUARD_HOOKS} hooks trusted)" for p in facts["plugins"]]
        if facts["user_hooks"]["handlers"]:
            installs.append(f"user-level in {home} ({facts['user_hooks']['trusted']} of "
                            f"{facts['user_hooks']['handlers']} hooks trusted)")
    detail = enforcement_summary(seen) + "; installed: " + ("; ".join(installs) if installs else "none found")
    state = (seen or {}).get("state")
    next_action = {"not_running": "open /hooks in the Codex TUI and trust Guard's hooks (see the cause above)",
                   "reminders": TURN_ON, "off": TURN_ON,
                   "not_installed": "install Guard (README, Guard) for rules that block"}.get(state)
    return _check("guard", state != "not_running", detail, next_action)


def _sandbox_check(env, root, *, here):
    """The threat model's limits that a terminal can see (docs/security.md): config.toml's sandbox
    (a flag given to one Codex run is seen only by that run's hooks) and this folder's contents."""
    from intent_loop.hook import exposure
    from intent_loop.ops.enforcement_words import exposure_text

    reasons = [exposure.UNSANDBOXED] if exposure.config_sandbox_mode(env) == exposure.FULL_ACCESS else []
    reasons += exposure.workspace_exposures(env, project_root=here, data_root=root)
    return _check("sandbox", not reasons, exposure_text(reasons) or "config.toml keeps Codex's sandbox, and this "
                  "folder holds neither your home folder nor the data root", "see docs/security.md")


def _lock_residue(project_dir):
    try:
        return sorted(n for n in os.listdir(project_dir) if n == "ledger.lock" or n.startswith("ledger.lock."))
    except OSError:
        return []


def _quarantine(project_dir):
    count = size = 0
    try:
        for name in os.listdir(os.path.join(project_dir, "quarantine")):
            st = os.lstat(os.path.join(project_dir, "quarantine", name))
            count += 1
            size += st.st_size
    except OSError:
        pass
    return count, size


RECENT_FAILURES = 24 * 3600  # older failures are history, not a problem to act on now


def _hook_failures_check(root, *, now):
    """Fails on hook failures of the last 24 hours only; names their codes and steps (content-free).

    Also fails when a hook touched the unlogged marker in that time: a failure it could not write
    to the log (a full disk), which would otherwise read as "0 failures"."""
    summary = failure_log.read(root)
    recent = {}
    for record in summary.records:
        try:
            at = float(record["at"])
            key = f"{record.get('code')} at {record.get('event')}/{record.get('where')}"
        except (ValueError, KeyError, TypeError):
            continue
        if now - at <= RECENT_FAILURES:
            recent[key] = recent.get(key, 0) + 1
    count = sum(recent.values())
    detail = f"{count} in the last 24 h ({len(summary.records)} logged in all)"
    if recent:
        detail += ": " + ", ".join(f"{n}x {key}" for key, n in sorted(recent.items(), key=lambda kv: -kv[1]))
    unlogged = summary.unlogged_at is not None and now - summary.unlogged_at <= RECENT_FAILURES
    if unlogged:
        detail += "; a hook failure could not be logged (last at " + time.strftime(
            "%Y-%m-%d %H:%M UTC", time.gmtime(summary.unlogged_at)) + "; is the disk full?)"
    if summary.unreadable:
        detail += f"; the log is not a regular file of ours ({summary.unreadable}): remove it"
    return _check("hook_failures", count == 0 and not unlogged and not summary.unreadable, detail,
                  f"read {failure_log.log_path(root)} (content-free); "
                  "a failed hook answered continue:true, so Codex went on without intent-loop there")


def _runtime_check(root):
    """The extracted runtimes' directory: a link or file there, or one the launcher moved aside
    (`<name>.broken-<hex>`: something not a directory stood where a runtime belongs)."""
    runtime = os.path.join(root, "runtime")
    moved = []
    for directory in (root, runtime):
        try:
            moved += [os.path.join(directory, n) for n in os.listdir(directory) if ".broken-" in n]
        except OSError:
            pass
    if os.path.islink(runtime) or (os.path.lexists(runtime) and not os.path.isdir(runtime)):
        return _check("runtime", False, f"{ErrorCode.RUNTIME_BROKEN}: {runtime} is not a directory",
                      "remove it; the next run extracts the runtime again")
    if moved:
        return _check("runtime", False, f"{ErrorCode.RUNTIME_BROKEN}: moved aside by the launcher: " + ", ".join(moved),
                      "look at them, then remove them (the runtime was extracted again)")
    return _check("runtime", True, f"{runtime} is a real directory" if os.path.isdir(runtime) else "not extracted yet")


def _bytecode_check(root):
    """Bytecode under the data root that fails to load (a .pyc a full disk cut short) is cleared
    here, so the next import compiles from source; a pycache/ that is a link or another user's is
    named, since the source launcher then reads and writes no bytecode there."""
    from intent_loop.launch import bytecode_cache

    pycache = os.path.join(root, bytecode_cache.PYCACHE_DIR)
    if os.path.lexists(pycache) and not bytecode_cache.is_own_directory(pycache):
        return _check("bytecode", False, f"{ErrorCode.UNSAFE_PATH}: {pycache} is not a directory of this "
                      "user's (a link?); no bytecode is read or written there",
                      "remove it; the next run writes bytecode again")
    found = bytecode_cache.damaged(root)
    if not found:
        return _check("bytecode", True, "no damaged bytecode")
    failed = bytecode_cache.remove(found)
    detail = f"cleared {len(found) - len(failed)} damaged bytecode files (cut short, as on a full disk)"
    detail += "".join(f"; could not remove {path}: {why}" for path, why in failed.items())
    return _check("bytecode", False, detail, "nothing to do: the next import compiles them from source; if "
                  "it recurs, free space on the data root's disk")


def _check_project(paths, broken, diverged, damage=None):
    """Verify a project's whole chain and re-derive its state, comparing it with the cache (the
    daily scrub, run now): a difference is rebuilt and named, never silently believed."""
    from intent_loop.storage.cache import cache_upkeep

    findings = []
    try:
        outcome = cache_upkeep.scrub(paths, REDUCER, report=findings.append)
        if outcome == "busy":  # a hook's child is rebuilding right now: verify without comparing
            verify_all(paths, REDUCER, leave_checkpoint=True)
    except IntentLoopError as exc:
        findings.append(exc)
    for finding in findings:
        if finding.code == ErrorCode.CACHE_MISMATCH:
            diverged.append(paths.project_id[:12])
        else:
            line = f"line {finding.line} " if finding.line is not None else ""
            broken.append(f"{paths.project_id[:12]}: {line}{finding.code}")
            if damage is not None:
                damage.append(finding)


def _running_from():
    """Where this intent-loop runs from: the binary or launcher, else the library's folder."""
    import sys

    return os.path.realpath(sys.argv[0]) if sys.argv and sys.argv[0] else os.path.dirname(__file__)


def cmd_doctor(args, console):
    from intent_loop.base.release import VERSION

    checks = [_check("version", True, f"intent-loop {VERSION}, running from {_running_from()}")]
    try:
        root, how = data_root(console)
        checks.append(_check("data_root", True, f"{root} (chosen by {how}), {len(projects(root))} projects"))
    except IntentLoopError as exc:
        root = None
        checks.append(_check("data_root", False, exc.message,
                             "set INTENT_LOOP_DATA_DIR (or CODEX_HOME) to an absolute path, or HOME"))
    others = [r for r in candidate_roots(console.env) if r != root and projects(r)]
    checks.append(_check("other_roots", not others,
                         "no other candidate root holds projects" if not others else
                         "other roots with projects: " + ", ".join(f"{r} ({len(projects(r))})" for r in others),
                         "two stores: point every host and shell at one (docs/storage.md, \"Two stores\")"))
    checks.extend(install_checks(console.env, root))
    checks.append(python_checks.interpreter_check(_BINARIES, env=console.env))
    checks.append(_sandbox_check(console.env, root, here=console.cwd))
    checks.append(_guard_check(console))
    if root is not None:
        checks.append(_runtime_check(root))
        checks.append(_bytecode_check(root))
    old = old_runtimes(console)
    checks.append(_check("old_runtimes", not old, describe_runtimes(old) if old else "none left by earlier builds",
                         "run `intent-loop install --apply`, which removes them"))
    if root is not None:
        broken, diverged, residue, q_count, q_bytes, damage = [], [], [], 0, 0, []
        project_ids = projects(root)
        for project_id in project_ids:
            ppaths = ProjectPaths(root, project_id)
            _check_project(ppaths, broken, diverged, damage)
            names = _lock_residue(ppaths.dir)
            residue.extend(f"{project_id[:12]}/{n}" for n in names)
            count, size = _quarantine(ppaths.dir)
            q_count, q_bytes = q_count + count, q_bytes + size
        checks.append(_check("chains", not broken,
                             f"{len(project_ids)} projects verified" if not broken else "damaged: " + "; ".join(broken),
                             "; ".join(dict.fromkeys(damage_next_action(f) for f in damage))
                             or damage_next_action(None)))
        checks.append(_check("cache", not diverged,
                             "every project's cache matches what its ledger folds to" if not diverged else
                             f"{ErrorCode.CACHE_MISMATCH} (rebuilt from the ledger): " + ", ".join(diverged),
                             "nothing to do: the cache was rebuilt; if it recurs, something edits cache/"))
        checks.append(_check("lock_residue", not residue,
                             "no lock directories left" if not residue else "left: " + ", ".join(residue),
                             "if no intent-loop process runs, the next mutation cleans it; otherwise wait"))
        checks.append(_check("quarantine", True, f"{q_count} files, {q_bytes} bytes"))
        checks.append(_hook_failures_check(root, now=time.time()))
        try:
            paths = current_project(console)
            guard_path = provider.provider_path(paths.root, console.env)
            outside = provider.outside_reason(guard_path, paths.root)
            if outside:
                checks.append(_check("guard_file", False, f"PROVIDER_PATH_OUTSIDE: {outside}",
                                     "point EFG_CONTRACT_PATH inside the project, or unset it"))
            else:
                fstate = provider.read_file_state(guard_path, load_state(paths))
                ok = fstate["kind"] not in ("ours", "unrecorded") or (fstate["kind"] == "ours"
                                                                      and not fstate.get("errors"))
                detail = fstate["kind"] + (f" version {fstate['version']}" if fstate["kind"] == "ours" else "")
                if fstate["kind"] == "unrecorded":  # Guard may enforce a version our ledger lost
                    detail = f"{ErrorCode.GUARD_VERSION_UNRECORDED}: {guard_path} {fstate['why']}"
                checks.append(_check("guard_file", ok, detail, "run `intent-loop contract publish` (it publishes "
                                                               "above the file's version)"))
        except IntentLoopError as exc:
            if exc.code == ErrorCode.NO_PROJECT:  # outside every project: no Guard file to check
                checks.append(_check("guard_file", True, "not in a recorded project"))
            else:
                checks.append(_check("guard_file", False, exc.code,
                                     "run `intent-loop verify` and `intent-loop recover`"))
    ok = all(c["ok"] for c in checks)
    if args.json:
        console.json({"ok": ok, "checks": checks})
    else:
        for c in checks:
            console.out(f"[{'ok' if c['ok'] else 'FAIL'}] {c['name']}: {c['detail']}")
            if c["next_action"]:
                console.out(f"       next: {c['next_action']}")
    return 0 if ok else 1

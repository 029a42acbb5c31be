"""`contract withdraw [--all-projects] [--apply]`: take intent-loop's Guard files away before removing it.

Guard has no staleness check: once intent-loop is removed, a Guard file it published keeps the last
contract in force with nobody updating it. This lists, per recorded project, each Guard path we
wrote (the project's record of them, guard-file.json, and the current project's path) and what a
withdrawal does there; --apply does it. The decision is the provider's own (provider.plan_refresh
with the task Guard gets turned off), so a file that is not ours is never touched. --apply records
the withdrawal in the ledger: a user `mode_set off` of that task (`intent: on` publishes again),
then the provider's refresh under the project lock removes the file and forgets the path.
"""
import os

from intent_loop.cli.common import (
    USER_ONLY_WHEN_APPLIED,
    current_project,
    data_root,
    deadline,
    find_recorded_project,
    finish_command,
    load_state,
)
from intent_loop.errors import IntentLoopError

WITHDRAWN = "removed"  # the provider's action for a file of ours taken away
_FAILED = ("error", "outside")  # a path we could not decide or carry out


def register(sub):
    w = sub.add_parser("withdraw", help="remove intent-loop's Guard files (dry run by default), before removing it",
                       description="List each Guard file intent-loop published for this project (--all-projects: "
                                   "every recorded project) and whether it is ours; --apply turns off the task "
                                   "Guard gets (recorded in the ledger; `intent: on` publishes again) and removes "
                                   "our files. A file intent-loop did not write is left alone. Without it, Guard "
                                   "keeps enforcing the last contract after intent-loop is removed.")
    w.add_argument("--all-projects", action="store_true", help="every project under the data root, not only this one")
    w.add_argument("--apply", action="store_true", help="withdraw (default: a dry run that changes nothing)")
    finish_command(w, cmd_withdraw, user_only=USER_ONLY_WHEN_APPLIED)


def recorded_paths(paths):
    """The Guard paths the project's record says we last wrote (guard-file.json), sorted."""
    from intent_loop.guard import file_state

    return sorted(p for p in (file_state.read_records(paths) or {}) if isinstance(p, str) and os.path.isabs(p))


def _root_of(data_root_dir, project_id, guard_paths):
    """(root, None) of the project whose Guard paths these are, or (None, the folder it was in):
    the nearest ancestor of a recorded path that is this project's directory. The data root
    keeps only a hash of the project's folder, so a folder moved or deleted is not found."""
    from intent_loop.storage.paths import project_paths

    guess = None
    for path in guard_paths:
        directory = os.path.dirname(path)
        guess = guess or os.path.dirname(directory)
        while True:
            if os.path.isdir(directory):
                try:
                    found = project_paths(data_root_dir, directory)
                except IntentLoopError:
                    found = None
                if found is not None and found.project_id == project_id:
                    return found, None
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
    return None, guess


def targets(console, *, all_projects):
    """[{project_id, paths (ProjectPaths with root, or None), guard_paths, gone}] to look at."""
    from intent_loop.cli.doctor import projects
    from intent_loop.guard import provider
    from intent_loop.storage.paths import ProjectPaths

    root, _how = data_root(console)
    here = current_project(console) if not all_projects else _current_or_none(console, root)
    found = []
    for project_id in projects(root) if all_projects else [here.project_id]:
        bare = ProjectPaths(root, project_id)
        guard_paths = recorded_paths(bare)
        if here is not None and here.project_id == project_id:
            paths, gone = here, None
            guard_paths = sorted(set(guard_paths) | {provider.provider_path(here.root, console.env)})
        else:
            paths, gone = _root_of(root, project_id, guard_paths)
        found.append({"project_id": project_id, "paths": paths, "guard_paths": guard_paths, "gone": gone})
    return found


def _current_or_none(console, root):
    if getattr(console, "project", None) is not None:
        return current_project(console)
    return find_recorded_project(root, console.cwd)


def _off(state):
    """The state with the task Guard gets turned off (what --apply records), and that task's id."""
    from intent_loop.guard import provider

    task_id, _reason = provider.select_task(state)
    if task_id is None:
        return state, None
    tasks = dict(state["tasks"])
    tasks[task_id] = dict(tasks[task_id], guard_mode="off")
    return dict(state, tasks=tasks), task_id


def _plan_project(target):
    from intent_loop.guard import provider

    paths = target["paths"]
    state, task_id = _off(load_state(paths))
    files = [provider.plan_refresh(state, workspace=paths.root, env={"EFG_CONTRACT_PATH": path},
                                   paths=paths).as_dict() for path in target["guard_paths"]]
    return task_id, files


def _apply_project(target):
    import time

    from intent_loop.base.canonical import sha256_hex
    from intent_loop.base.timestamps import format_utc
    from intent_loop.guard import provider
    from intent_loop.intent import tasks
    from intent_loop.intent.state import REDUCER
    from intent_loop.storage.ledger import new_uuid4
    from intent_loop.storage.transaction import Transaction

    paths, files = target["paths"], []
    with Transaction(paths, REDUCER, deadline=deadline()) as tx:
        task_id, _reason = provider.select_task(tx.state)
        if task_id is not None:
            plan = tasks.Plan(tx.state, now=format_utc(time.time()))
            tasks.set_mode(plan, task_id=task_id, mode="off")
            tx.append(plan.drafts, request_id=f"cli:{new_uuid4()}", fingerprint=sha256_hex(b"cli.contract.withdraw"))
        for path in target["guard_paths"]:
            try:
                files.append(provider.refresh(tx, workspace=paths.root, env={"EFG_CONTRACT_PATH": path}))
            except IntentLoopError as exc:
                files.append({"action": "error", "path": path, "code": exc.code, "reason": exc.message})
    return task_id, files


def survey(console, *, all_projects, apply=False):
    """One entry per project: what a withdrawal does (or did, with `apply`) at each Guard path."""
    results = []
    for target in targets(console, all_projects=all_projects):
        entry = {"project_id": target["project_id"], "root": None, "task_turned_off": None, "files": []}
        if target["paths"] is None:
            entry["state"] = "gone" if target["gone"] else "unknown"
            entry["root"] = target["gone"]
            results.append(entry)
            continue
        entry["root"], entry["state"] = target["paths"].root, "ok"
        try:
            entry["task_turned_off"], entry["files"] = (_apply_project if apply else _plan_project)(target)
        except IntentLoopError as exc:
            entry["state"], entry["error"] = "error", exc.to_dict()
        results.append(entry)
    return results


def files_in_force(console):
    """The Guard files of ours a withdrawal would remove in every recorded project (for `unlink`),
    or None when that cannot be told."""
    try:
        results = survey(console, all_projects=True)
    except (IntentLoopError, OSError):
        return None
    return [f["path"] for r in results for f in r["files"] if f["action"] == WITHDRAWN]


def cmd_withdraw(args, console):
    results = survey(console, all_projects=args.all_projects, apply=args.apply)
    failed = any(r["state"] == "error" or any(f["action"] in _FAILED for f in r["files"]) for r in results)
    if args.json:
        console.json({"ok": not failed, "dry_run": not args.apply, "projects": results})
        return 1 if failed else 0
    for result in results:
        _say_project(console, result, applied=args.apply)
    if not results:
        console.out("no projects under the data root")
    if not args.apply:
        ours = sum(f["action"] == WITHDRAWN for r in results for f in r["files"])
        off = sum(bool(r["task_turned_off"]) for r in results)
        console.out(f"dry run: nothing changed; --apply removes {ours} Guard file(s) of intent-loop and turns off "
                    f"{off} task(s), so nothing publishes them again")
    return 1 if failed else 0


def _say_project(console, result, *, applied):
    short = result["project_id"][:12]
    if result["state"] == "gone":
        console.out(f"{short}: its folder is gone (moved or deleted; it was {result['root']}): nothing to withdraw "
                    "there; a moved folder's Guard file is withdrawn by running this command in it")
        return
    if result["state"] == "unknown":
        console.out(f"{short}: no Guard file of intent-loop is recorded (run this command in the project's folder "
                    "to check its Guard path)")
        return
    if result["state"] == "error":
        console.out(f"{result['root']}: not read: {result['error']['code']}: {result['error']['message']}")
        return
    if result["task_turned_off"]:
        verb = "task turned off" if applied else "task would be turned off"
        console.out(f"{result['root']}: {verb}: {result['task_turned_off'][:8]} (`intent: on` publishes again)")
    for f in result["files"]:
        console.out(f"  {f['path']}: {_file_words(f, applied)}")


def _file_words(f, applied):
    action = f["action"]
    if action == WITHDRAWN:
        return "withdrawn (intent-loop's; removed)" if applied else "intent-loop's: would be removed"
    if action == "foreign":
        return "not written by intent-loop: left alone"
    if action == "absent":
        return "no file there"
    code = f" ({f['code']})" if f.get("code") else ""
    return f"{action}{code}: {f.get('reason') or ''}".rstrip(": ")

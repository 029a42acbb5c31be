"""Read-only report commands: status, show, timeline (exit 0 whenever they can report)."""

from intent_loop.cli.common import (
    add_task_option,
    current_project,
    damage_next_action,
    data_root,
    finish_command,
    load_checkpointed,
    load_state,
    pick_task,
)
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import provider
from intent_loop.guard.enforcement import reported
from intent_loop.intent.claim_records import active_count
from intent_loop.intent.views import compact_view, history, snapshot, task_label
from intent_loop.ops.receipts import guard_status
from intent_loop.storage.ledger import is_project_present


def register(subparsers):
    from intent_loop.cli.timeline import DEFAULT_LIMIT, cmd_timeline

    p = subparsers.add_parser("status", help="data root, project, tasks, chain and Guard file state",
                              description="Where data lives and how that was chosen, the project id of the current "
                                          "directory, its tasks (mode, label, active claim count, last change), the "
                                          "chain state, the Guard provider file state and recent hook failures.")
    finish_command(p, cmd_status)

    p = subparsers.add_parser("show", help="the task's recorded intent (compact view; --all for everything)",
                              description="The manual compact view of a task (default: the most recently changed). "
                                          "--all prints the full snapshot with the claim history. Off tasks fail "
                                          "with TASK_OFF; private tasks show nothing.")
    add_task_option(p)
    p.add_argument("--max-chars", type=int, default=None, metavar="N", help="cap the compact view at N characters")
    p.add_argument("--all", action="store_true", help="the full snapshot and history instead of the compact view")
    finish_command(p, cmd_show)

    p = subparsers.add_parser("timeline", help="the project's newest events in ledger order, with filters",
                              description="The newest 50 verified events (matching the filters) in order: time, "
                                          "type, actor, task and a content-free summary (claim events show claim "
                                          "ids and statements; observations show only counts and hash kinds). "
                                          "Read from the end of the ledger, each shown line hash- and "
                                          "chain-checked up to the checkpoint; --all streams every event from the "
                                          "first byte.")
    p.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                   help=f"show the newest N matching events (default {DEFAULT_LIMIT})")
    p.add_argument("--all", action="store_true", help="every matching event, verified from the first byte")
    p.add_argument("--jsonl", action="store_true", help="one JSON object per event and line")
    add_task_option(p, default="every task")  # a timeline is the project's, unless narrowed
    p.add_argument("--session", metavar="ID", help="a Codex session id (matched by its hash)")
    p.add_argument("--actor", metavar="A", choices=("user", "agent", "evidence", "system"),
                   help="user, agent, evidence or system")
    p.add_argument("--type", metavar="T", dest="event_type", help="an event type, e.g. claim_added")
    p.add_argument("--since", metavar="RFC3339", help="only events at or after this time")
    p.add_argument("--until", metavar="RFC3339", help="only events at or before this time")
    finish_command(p, cmd_timeline)  # cli/timeline.py


# -- status -------------------------------------------------------------------------------
def _hook_failures(root):
    from intent_loop.hook import failure_log

    return len(failure_log.read(root).records)


def task_rows(state):
    rows = []
    for task_id in sorted(state["tasks"], key=lambda t: (state["tasks"][t]["changed_seq"], t)):
        task = state["tasks"][task_id]
        rows.append({"task_id": task_id, "mode": task["mode"], "label": task.get("label"),
                     "label_source": task.get("label_by") if task.get("label") else None,
                     "active_claims": active_count(task), "changed_at": task["changed_at"],
                     # `contract_restored` events: the Guard file changed outside intent-loop (issue 33)
                     "guard_restorations": task["observations"].get("contract_restored", 0)})
    return rows


def cmd_status(args, console):
    root, how = data_root(console)
    try:
        paths = current_project(console)
    except IntentLoopError as exc:
        if exc.code != ErrorCode.NO_PROJECT:
            raise
        return _status_without_project(args, console, root, how, exc)
    result = {"data_root": root, "data_root_chosen_by": how, "project_id": paths.project_id,
              "workspace": paths.root, "hook_failures": _hook_failures(root)}
    try:
        state = load_checkpointed(paths).state
        rows = task_rows(state)  # loads every task's shard: a pointer into a damaged line fails here
        result["chain"] = {"ok": True, "present": is_project_present(paths)}
    except IntentLoopError as exc:
        state = None
        result["chain"] = {"ok": False, "error": exc.to_dict(), "next_action": damage_next_action(exc)}
    ppath = provider.provider_path(paths.root, console.env)
    if state is not None:
        result["tasks"] = rows
        result["newest_task"] = state["last_change"]["task_id"]
        fstate = provider.read_file_state(ppath, state)
        pending = provider.plan_refresh(state, workspace=paths.root, env=console.env, paths=paths)
        if pending.code:  # why Guard is not (or no longer) getting this project's contract
            result["guard_not_updated"] = {"code": pending.code, "reason": pending.reason}
        result["enforcement"] = reported(paths)  # what the hooks last saw of Guard (guard/enforcement.py)
        result["guard"] = guard_status(pending.as_dict(), result["enforcement"])  # `intent: show` ends so too
    else:
        result["tasks"], result["newest_task"] = [], None
        fstate = {"kind": "unknown", "why": "the ledger does not verify"}
    result["provider_file"] = dict(fstate, path=ppath)
    result["hooks_ran"] = _hooks_ran(console, root)
    if args.json:
        console.json(result)
        return 0
    console.out(f"data root: {root} (chosen by {how})")
    console.out(f"project:   {paths.project_id} ({paths.root})")
    chain = result["chain"]
    console.out("chain:     " + ("OK" if chain["ok"]
                                 else f"DAMAGED: {chain['error']['code']}; {chain['next_action']}"))
    if not result["tasks"]:
        console.out("tasks:     none yet; `intent-loop claim add goal <text>` starts one")
    for row in result["tasks"]:
        newest = " (newest)" if row["task_id"] == result["newest_task"] else ""
        label = task_label({"label": row["label"], "label_by": row["label_source"]}, for_user=True)
        restored = f", Guard file restored {row['guard_restorations']}x (`intent-loop log`)" \
            if row["guard_restorations"] else ""
        console.out(f"task {row['task_id'][:8]}{label}: {row['mode']}, {row['active_claims']} active claims, "
                    f"changed {row['changed_at']}{newest}{restored}")
    detail = fstate["kind"]
    if fstate["kind"] == "ours":
        detail += f" (task {fstate['task_id'][:8]}, version {fstate['version']})"
    elif fstate.get("why"):
        detail += f" ({fstate['why']})"
    console.out(f"guard file: {ppath}: {detail}")
    if result.get("guard_not_updated"):
        console.out(f"guard:     not updated ({result['guard_not_updated']['code']}): "
                    f"{result['guard_not_updated']['reason']}")
    console.out(f"hook failures logged: {result['hook_failures']}")
    hooks = result["hooks_ran"]
    console.out(f"hooks:     {'ran' if hooks['ok'] else 'NOT RUNNING'}: {hooks['detail']}"
                + ("" if hooks["ok"] else f"; next: {hooks['next_action']}"))
    if state is not None:
        from intent_loop.ops.enforcement_words import enforcement_summary

        console.out(enforcement_summary(result["enforcement"]))
    if result.get("guard"):
        console.out(result["guard"])
    return 0


def _hooks_ran(console, root):
    """doctor's `hooks_ran` check: has Codex run the hooks of what is installed (Codex skips
    untrusted hooks without a word, so `intent:` lines would reach the model unrecorded)."""
    from intent_loop.cli.install_checks import install_checks

    return next(c for c in install_checks(console.env, root) if c["name"] == "hooks_ran")


def _status_without_project(args, console, root, how, exc):
    """Outside every recorded project, status still says where data lives, and that (exit 0)."""
    result = {"data_root": root, "data_root_chosen_by": how, "project_id": None, "workspace": None,
              "project_error": exc.to_dict(), "hook_failures": _hook_failures(root)}
    if args.json:
        console.json(result)
        return 0
    console.out(f"data root: {root} (chosen by {how})")
    console.out(f"project:   none: {exc.message}")
    console.out(f"hook failures logged: {result['hook_failures']}")
    return 0


# -- show -----------------------------------------------------------------------------------
def cmd_show(args, console):
    if args.max_chars is not None and args.max_chars < 1:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "--max-chars takes a positive number")
    paths = current_project(console)
    state = load_state(paths)
    task_id = pick_task(state, args.task)
    task = state["tasks"][task_id]
    if task["mode"] == "off":
        raise IntentLoopError(ErrorCode.TASK_OFF,
                              f"task {task_id[:8]} is off; `intent-loop on --task {task_id[:8]}` re-enables it")
    if task["mode"] == "private":
        result = {"task_id": task_id, "mode": "private"}
        if args.json:
            console.json(result)
        else:
            console.out(f"task {task_id[:8]} is private: nothing is recorded or shown")
        return 0
    if args.all:
        result = {"task_id": task_id, "snapshot": snapshot(state, task_id), "history": history(task)}
        if args.json:
            console.json(result)
        else:
            console.out(show_all_text(result))
        return 0
    kwargs = {} if args.max_chars is None else {"max_chars": args.max_chars}
    view = compact_view(state, task_id, for_user=True, **kwargs)
    enforcement = reported(paths)
    guard = guard_status(provider.plan_refresh(state, workspace=paths.root, env=console.env, paths=paths).as_dict(),
                         enforcement)
    if args.json:
        console.json({"task_id": task_id, "view": view, "guard": guard, "enforcement": enforcement})
    else:
        console.out(view)
        console.out(guard)
    return 0


def show_all_text(result):
    """`show --all` for a person: the task, its active claims by facet, what is disputed or
    unknown, the long-term claims in force, open candidates, the contract, then every claim ever
    recorded, oldest first (`--json` gives the same as data)."""
    snap, task = result["snapshot"], result["snapshot"]["task"]
    label = task_label({"label": task.get("label"), "label_by": task.get("label_by")}, for_user=True)
    lines = [f"task {result['task_id'][:8]}{label} ({task['mode']}), started {task['created_at']}, "
             f"changed {task['changed_at']}"]
    published = snap.get("published")
    lines.append(f"Guard contract: v{published['version']}" if isinstance(published, dict) and published.get("version")
                 else "Guard contract: not published yet")
    active = snap["active"]
    count = len({c["claim_id"] for by_status in active.values() for claims in by_status.values() for c in claims})
    lines.append(f"active claims ({count}), by facet:")
    for facet in sorted(active):
        lines.append(f"  {facet}:")
        for status in sorted(active[facet]):
            lines.extend(f"    {_claim_line(c)}" for c in active[facet][status])
    for title, claims in (("disagreements", snap["disagreements"]), ("unknowns", snap["unknowns"]),
                          ("long-term claims in force here", snap["durable"])):
        if claims:
            lines.append(f"{title} ({len(claims)}):")
            lines.extend(f"  {_claim_line(c)}" for c in claims)
    if snap["stale_long_term"]:
        lines.append(f"stale long-term claims left out until reviewed: "
                     f"{', '.join(c[:8] for c in snap['stale_long_term'])}")
    if snap["candidates"]:
        lines.append(f"open long-term candidates ({len(snap['candidates'])}): `intent-loop candidate list`")
    lines.append(f"history: every claim of the task, oldest first ({len(result['history'])}):")
    lines.extend(f"  {record['state']:<11} {_claim_line(record)}" for record in result["history"])
    return "\n".join(lines)


def _claim_line(claim):
    whose = "yours" if claim.get("role") == "user" else f"{claim.get('role')}'s"
    return (f"[{claim['claim_id'][:8]}] {claim['statement']} ({claim['epistemic_status']}, {whose}, "
            f"scope {claim['scope']})")

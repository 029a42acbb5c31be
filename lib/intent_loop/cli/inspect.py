"""Read-only report commands: status, show, timeline (exit 0 whenever they can report)."""

from intent_loop.cli.common import add_json_flag, add_task_option, current_project, data_root, load_state, pick_task
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import provider
from intent_loop.intent.state import REDUCER, active_claims
from intent_loop.intent.views import compact_view, history, snapshot
from intent_loop.storage.event_list import EventList
from intent_loop.storage.ledger import is_project_present, load_verified, verify_all

_CLAIM_EVENTS = ("claim_added", "claim_replaced", "candidate_confirmed")


def register(subparsers):
    p = subparsers.add_parser("status", help="data root, project, tasks, chain and Guard file state",
                              description="Where data lives and how that was chosen, the project id of the current "
                                          "directory, its tasks (mode, label, active claim count, last change), the "
                                          "chain state, the Guard provider file state and recent hook failures.")
    add_json_flag(p)
    p.set_defaults(func=cmd_status)

    p = subparsers.add_parser("show", help="the task's recorded intent (compact view; --all for everything)",
                              description="The manual compact view of a task (default: the most recently changed). "
                                          "--all prints the full snapshot with the claim history. Off tasks fail "
                                          "with TASK_OFF; private tasks show nothing.")
    add_task_option(p)
    p.add_argument("--max-chars", type=int, default=None, metavar="N", help="cap the compact view at N characters")
    p.add_argument("--all", action="store_true", help="the full snapshot and history instead of the compact view")
    add_json_flag(p)
    p.set_defaults(func=cmd_show)

    p = subparsers.add_parser("timeline", help="the project's events in ledger order, with filters",
                              description="Every verified event in order: time, type, actor, task and a "
                                          "content-free summary (claim events show claim ids and statements; "
                                          "observations show only counts and hash kinds).")
    add_task_option(p)
    p.add_argument("--session", metavar="ID", help="a Codex session id (matched by its hash)")
    p.add_argument("--actor", metavar="A", help="user, agent, evidence or system")
    p.add_argument("--type", metavar="T", dest="event_type", help="an event type, e.g. claim_added")
    p.add_argument("--since", metavar="RFC3339", help="only events at or after this time")
    p.add_argument("--until", metavar="RFC3339", help="only events at or before this time")
    add_json_flag(p)
    p.set_defaults(func=cmd_timeline)


# -- status -------------------------------------------------------------------------------
def _hook_failures(root):
    from intent_loop.storage import failure_log

    return len(failure_log.read(root).records)


def task_rows(state):
    rows = []
    for task_id in sorted(state["tasks"], key=lambda t: (state["tasks"][t]["changed_seq"], t)):
        task = state["tasks"][task_id]
        rows.append({"task_id": task_id, "mode": task["mode"], "label": task.get("label"),
                     "active_claims": len(active_claims(task)), "changed_at": task["changed_at"]})
    return rows


def cmd_status(args, console):
    root, how = data_root(console)
    paths = current_project(console)
    result = {"data_root": root, "data_root_chosen_by": how, "project_id": paths.project_id,
              "workspace": paths.root, "hook_failures": _hook_failures(root)}
    try:
        state = load_verified(paths, REDUCER).state
        result["chain"] = {"ok": True, "present": is_project_present(paths)}
    except IntentLoopError as exc:
        state = None
        result["chain"] = {"ok": False, "error": exc.to_dict()}
    ppath = provider.provider_path(paths.root, console.env)
    if state is not None:
        result["tasks"] = task_rows(state)
        result["newest_task"] = state["last_change"]["task_id"]
        fstate = provider.read_file_state(ppath, state)
    else:
        result["tasks"], result["newest_task"] = [], None
        fstate = {"kind": "unknown", "why": "the ledger does not verify"}
    result["provider_file"] = dict(fstate, path=ppath)
    if args.json:
        console.json(result)
        return 0
    console.out(f"data root: {root} (chosen by {how})")
    console.out(f"project:   {paths.project_id} ({paths.root})")
    chain = result["chain"]
    console.out("chain:     " + ("OK" if chain["ok"]
                                 else f"DAMAGED: {chain['error']['code']}; run `intent-loop recover`"))
    if not result["tasks"]:
        console.out("tasks:     none yet; `intent-loop claim add goal <text>` starts one")
    for row in result["tasks"]:
        newest = " (newest)" if row["task_id"] == result["newest_task"] else ""
        label = f' "{row["label"]}"' if row["label"] else ""
        console.out(f"task {row['task_id'][:8]}{label}: {row['mode']}, {row['active_claims']} active claims, "
                    f"changed {row['changed_at']}{newest}")
    detail = fstate["kind"]
    if fstate["kind"] == "ours":
        detail += f" (task {fstate['task_id'][:8]}, version {fstate['version']})"
    elif fstate.get("why"):
        detail += f" ({fstate['why']})"
    console.out(f"guard file: {ppath}: {detail}")
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
            console.out(stable_text(result))
        return 0
    kwargs = {} if args.max_chars is None else {"max_chars": args.max_chars}
    view = compact_view(state, task_id, **kwargs)
    if args.json:
        console.json({"task_id": task_id, "view": view})
    else:
        console.out(view)
    return 0


def stable_text(value):
    import json

    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


# -- timeline -------------------------------------------------------------------------------
def _parse_time(text, option):
    """Epoch seconds of an RFC 3339 timestamp, or INVALID_ARGUMENT."""
    from intent_loop.storage.timestamps import parse_epoch, rfc3339_error

    problem = rfc3339_error(text) if isinstance(text, str) else "missing"
    if problem:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"{option} {text!r}: {problem} (e.g. 2026-01-31T12:00:00Z)")
    return parse_epoch(text)


def read_events(paths):
    """Every verified event of the ledger in order (full verification; raises on damage)."""
    return verify_all(paths, EventList()).state


def _claim_summary(claim):
    return {"claim_id": claim["claim_id"], "statement": claim["statement"]}


def summarize(event):
    """A content-free summary: claim ids and statements only for claim events."""
    t, p = event["event_type"], event["payload"]
    out = {}
    if t in _CLAIM_EVENTS:
        out["claims"] = [_claim_summary(p["claim"])]
        if t == "claim_replaced":
            out["supersedes"] = list(p.get("supersedes", []))
        if t == "candidate_confirmed":
            out["candidate_id"] = p.get("candidate_id")
    elif t == "task_started":
        out["mode"] = p.get("mode", "on")
        out["claims"] = [_claim_summary(c) for c in p.get("initial_claims", [])]
    elif t == "claim_invalidated":
        out["claim_id"] = p.get("claim_id")
    elif t == "mode_set":
        out["mode"] = p.get("mode")
    elif t == "session_linked":
        out["action"] = p.get("action")
    elif t in ("source_observed", "result_signal_observed"):
        source = p.get("source") if isinstance(p.get("source"), dict) else {}
        out["char_count"] = p.get("char_count")
        out["source_kind"] = source.get("kind")
        out["hash_kinds"] = sorted(k for k in ("event_id", "sha256") if k in source)
    elif t == "contract_published":
        out["contract_version"] = p.get("contract_version")
        out["snapshot_sha256"] = p.get("snapshot_sha256")
    elif t in ("candidate_added", "candidate_dismissed"):
        out["candidate_id"] = p.get("candidate_id")
    elif t == "graph_imported":
        out["claim_count"] = len(p.get("claims", []))
    return out


def _summary_text(summary):
    parts = []
    for key in sorted(summary):
        value = summary[key]
        if key == "claims":
            parts.extend(f"[{c['claim_id'][:8]}] {c['statement']}" for c in value)
        elif isinstance(value, list):
            parts.append(f"{key}={','.join(str(v)[:8] if key == 'supersedes' else str(v) for v in value)}")
        elif key.endswith("_id") and isinstance(value, str):
            parts.append(f"{key}={value[:8]}")
        elif key == "snapshot_sha256" and isinstance(value, str):
            parts.append(f"sha256={value[:12]}")
        else:
            parts.append(f"{key}={value}")
    return "; ".join(parts)


def cmd_timeline(args, console):
    since = _parse_time(args.since, "--since") if args.since is not None else None
    until = _parse_time(args.until, "--until") if args.until is not None else None
    session = None
    if args.session is not None:
        from intent_loop.storage.paths import session_hash

        session = session_hash(args.session)
    paths = current_project(console)
    events = read_events(paths)
    task_id = None
    if args.task:
        state = load_state(paths)
        task_id = pick_task(state, args.task)
    rows = []
    for event in events:
        if task_id is not None and event["task_id"] != task_id:
            continue
        if args.actor and event["actor"] != args.actor:
            continue
        if args.event_type and event["event_type"] != args.event_type:
            continue
        if session is not None and event["payload"].get("host_session_hash") != session:
            continue
        if since is not None or until is not None:
            at = _parse_time(event["occurred_at"], "occurred_at")
            if (since is not None and at < since) or (until is not None and at > until):
                continue
        rows.append({"occurred_at": event["occurred_at"], "event_type": event["event_type"], "actor": event["actor"],
                     "task_id": event["task_id"], "event_id": event["event_id"], "summary": summarize(event)})
    if args.json:
        console.json({"project_id": paths.project_id, "events": rows})
        return 0
    if not rows:
        console.out("no events match")
    for row in rows:
        task = row["task_id"][:8] if row["task_id"] else "-"
        text = _summary_text(row["summary"])
        console.out(f"{row['occurred_at']}  {row['event_type']:<22} {row['actor']:<8} {task}"
                    + (f"  {text}" if text else ""))
    return 0


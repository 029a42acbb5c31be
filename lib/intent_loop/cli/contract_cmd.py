"""The Guard contract: contract show | validate FILE | publish [--dry-run] | withdraw (cli/contract_withdraw.py)."""
from intent_loop.cli.common import current_project, deadline, finish_command, load_state, show_group_help
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import contract_file, document, provider
from intent_loop.intent.state import REDUCER
from intent_loop.storage.transaction import Transaction

_FAILED_ACTIONS = ("invalid", "foreign", "error", "too_large", "outside")  # Guard did not get the contract


def register(subparsers):
    p = subparsers.add_parser("contract", help="the Guard provider document: show, validate, publish",
                              description="The contract intent-loop publishes for Execution Fidelity Guard.")
    sub = p.add_subparsers(dest="contract_command", metavar="ACTION")
    s = sub.add_parser("show", help="which task Guard reads, the contract's fields, hash, versions and file state",
                       description="Which task the contract shows (or why none qualifies), its seven fields as Guard "
                                   "reads them, canonical hash, current and next version, the file state (bound, "
                                   "missing, stale, invalid, unrecorded, foreign) and the other tasks with claims, "
                                   "which Guard does not enforce.")
    finish_command(s, cmd_show)
    v = sub.add_parser("validate", help="check a file with Guard's rules (exit 1 listing every error)",
                       description="Validate any provider document or TaskContractLite with every rule Guard enforces.")
    v.add_argument("file", metavar="FILE")
    finish_command(v, cmd_validate)
    b = sub.add_parser("publish", help="publish, rewrite or withdraw the contract file now",
                       description="Refresh the Guard file under the project lock; --dry-run reports what "
                                   "would happen and writes nothing.")
    b.add_argument("--dry-run", action="store_true", help="compute and report without writing")
    finish_command(b, cmd_publish)
    from intent_loop.cli import contract_withdraw

    contract_withdraw.register(sub)
    show_group_help(p)


def describe(state, paths, env):
    """Everything `contract show` reports, computed without writing."""
    path = provider.provider_path(paths.root, env)
    task_id, reason = provider.select_task(state)
    projection = digest = current = next_version = None
    outside = provider.outside_reason(path, paths.root)
    fstate = {"kind": "outside", "why": outside, "code": "PROVIDER_PATH_OUTSIDE"} if outside else \
        provider.read_file_state(path, state)
    if task_id is not None:
        task = state["tasks"][task_id]
        projection = provider.projection_for(task, project_root=paths.root)
        if projection is None:
            reason = f"task {task_id[:8]} has no goal yet (`intent-loop claim add goal <text>`)"
        else:
            digest = document.projection_sha256(projection)
            published = task.get("published")
            current = published["version"] if published else None
            next_version = provider.next_version(state, task_id, digest)[0]
    kind = fstate["kind"]
    # changed outside intent-loop at a path we hold: the next refresh restores ours (guard.md)
    takeover = None if outside else _takeover(paths, path, state, fstate)
    if kind == "ours":
        if fstate.get("errors"):
            file_state = "invalid"
        elif projection is not None and fstate["task_id"] == task_id and fstate["sha256"] == digest \
                and fstate["version"] == next_version:
            file_state = "bound"
        else:
            file_state = "stale"
    else:
        file_state = kind
    return {
        "task_id": task_id if projection is not None else None, "newest_task": task_id, "reason": reason,
        "projection": projection, "snapshot_sha256": digest, "current_version": current,
        "next_version": next_version, "path": path, "file_state": file_state, "takeover": takeover,
        "file": fstate, "shadowed_tasks": provider.shadowed_tasks(state, task_id if projection is not None else None),
    }


def _takeover(paths, path, state, fstate):
    """What a takeover of the path we hold found (guard/file_state.takeover_kind), or None."""
    from intent_loop.base.canonical import sha256_hex
    from intent_loop.guard import file_state

    record = file_state.read_record(paths, path)
    if record is None:
        return None
    data, _why = file_state.read_bytes(path)
    return file_state.takeover_kind(record, data, fstate, file_sha256=None if data is None else sha256_hex(data))


# What only the write itself can tell, said by every dry run whose real run would write.
DECIDED_BY_WRITING = ("whether the file can be written (disk space, permissions, a file swapped in meanwhile) "
                      "is known only by writing it")


def cmd_show(args, console):
    paths = current_project(console)
    info = describe(load_state(paths), paths, console.env)
    if args.json:
        console.json(info)
        return 0
    if info["task_id"] is None:
        console.out(f"no task qualifies for the Guard contract: {info['reason']}")
    else:
        console.out(f"task {info['task_id'][:8]}: sha256 {info['snapshot_sha256']}, "
                    f"current version {info['current_version'] or '-'}, next version {info['next_version']}")
        console.out(document.render_document(info["projection"]).decode("utf-8").rstrip("\n"))
    changed = f" (changed outside intent-loop: {info['takeover']}; the next refresh restores ours)" \
        if info["takeover"] else ""
    console.out(f"file {info['path']}: {info['file_state']}{changed}")
    for error in info["file"].get("errors") or ():
        console.out(f"  - {error}")
    if info["shadowed_tasks"]:
        console.out("not enforced (Guard reads one task's contract, this one's): other tasks with claims: "
                    + ", ".join(t[:8] for t in info["shadowed_tasks"]))
    return 0


def cmd_validate(args, console):
    try:
        with open(args.file, "rb") as fh:
            data = fh.read(contract_file.MAX_DOCUMENT_BYTES + 1)
    except OSError as exc:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"cannot read {args.file}: {exc.strerror}") from None
    kind, _doc, errors = contract_file.validate_document_bytes(data)
    result = {"ok": not errors, "file": args.file, "kind": kind, "errors": list(errors)}
    if args.json:
        console.json(result)
    elif errors:
        console.out(f"{args.file}: INVALID {kind} document, {len(errors)} errors:")
        for error in errors:
            console.out(f"  - {error}")
    else:
        console.out(f"{args.file}: valid {kind} document")
    return 1 if errors else 0


def cmd_publish(args, console):
    paths = current_project(console, writes=True)
    if args.dry_run:  # the real run's own decision (provider.plan_refresh), stopped before the write
        publication = provider.plan_refresh(load_state(paths), workspace=paths.root, env=console.env, paths=paths)
        result = dict(publication.as_dict(), dry_run=True)
        if publication.writes:
            result["decided_by_writing"] = DECIDED_BY_WRITING
    else:
        with Transaction(paths, REDUCER, deadline=deadline()) as tx:
            result = dict(provider.refresh(tx, workspace=paths.root, env=console.env), dry_run=False)
    failed = result["action"] in _FAILED_ACTIONS
    if args.json:
        console.json(dict(result, ok=not failed))
    else:
        prefix = "would be " if args.dry_run else ""
        version = f" version {result['version']}" if result.get("version") else ""
        reason = f": {result['reason']}" if result.get("reason") else ""
        console.out(f"contract {prefix}{result['action']}{version} at {result['path']}{reason}")
    return 1 if failed else 0

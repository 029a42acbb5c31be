"""Portable graphs and verified deletion: export, import, delete task|claim."""
import os
import stat
import sys

from intent_loop.cli.common import (
    REWRITE_DEADLINE,
    USER_ONLY,
    add_task_option,
    current_project,
    deadline,
    finish_command,
    load_state,
    pick_task,
    show_group_help,
)
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.state import REDUCER
from intent_loop.ops import deletion, graph_export, graph_format, graph_import


def register(subparsers):
    p = subparsers.add_parser("export", help="write a task as a portable, versioned graph (JSON)",
                              description="Export the task's claims with their lifecycle state and supersedes "
                                          "as canonical JSON. Without -o the graph goes to stdout. An existing "
                                          "file is never overwritten without --force (FILE_EXISTS).")
    add_task_option(p)
    p.add_argument("-o", dest="output", metavar="FILE", help="write the graph to FILE (0600, temp + fsync + rename)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    finish_command(p, cmd_export)

    p = subparsers.add_parser("import", help="import a graph as explicit_import evidence (never as your own words)",
                              description="Validate the graph completely (size, UTC timestamps, unique ids, "
                                          "references, acyclic and time-ordered supersession, legal "
                                          "role/status/confidence, redacted statements); on any problem nothing "
                                          "is written (IMPORT_INVALID lists every problem). Accepted claims get "
                                          "fresh ids, provenance explicit_import, and are never shown to the "
                                          "model or put into the Guard contract. Explicit user claims are "
                                          "imported as evidence.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--task", metavar="ID", help="import into this task (default: a new task)")
    finish_command(p, cmd_import, user_only=USER_ONLY)

    p = subparsers.add_parser("delete", help="physically delete a task or a claim (typed confirmation required)",
                              description="Rewrite and re-chain the ledger without the task or claim, clear the "
                                          "cache, quarantine entries and the Guard file that hold it, then scan "
                                          "the project directory for anything left.")
    sub = p.add_subparsers(dest="delete_command", metavar="WHAT")
    for what, func in (("task", cmd_delete_task), ("claim", cmd_delete_claim)):
        d = sub.add_parser(what, help=f"delete a {what}: ID --confirm \"DELETE {what.upper()} <full id>\"",
                           description=f"Delete the {what} with the full id ID. --confirm must be exactly "
                                       f"\"DELETE {what.upper()} <ID>\".")
        d.add_argument("id", metavar="ID")
        d.add_argument("--confirm", required=True, metavar="TEXT",
                       help=f"exactly \"DELETE {what.upper()} <ID>\"")
        finish_command(d, func, user_only=USER_ONLY)

    show_group_help(p)


def cmd_export(args, console):
    paths = current_project(console)
    state = load_state(paths)
    task_id = pick_task(state, args.task)
    data = graph_export.render(graph_export.export_graph(state, task_id))
    if not args.output:
        if args.force:
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "--force only makes sense with -o FILE")
        from intent_loop.cli.common import terminal_safe  # bidi and format characters escaped, still JSON

        console.stdout.write(terminal_safe(data.decode("utf-8")))
        return 0
    target = os.path.join(console.cwd, args.output)
    written = graph_export.write_export(target, data, force=args.force)
    from intent_loop.base.canonical import sha256_hex

    result = {"ok": True, "task_id": task_id, "path": written, "bytes": len(data), "sha256": sha256_hex(data),
              "claims": data.count(b'"claim_id":')}
    if args.json:
        console.json(result)
    else:
        console.out(f"exported task {task_id[:8]} ({result['claims']} claims) to {written}")
    return 0


def _read_graph(console, name):
    if name == "-":
        data = sys.stdin.buffer.read(graph_format.MAX_BYTES + 1)
    else:
        path = os.path.join(console.cwd, name)
        try:  # O_NONBLOCK: a FIFO named here must not hang the command (only a regular file is read)
            with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"{name} is not a regular file; "
                                          "import reads a file that `intent-loop export` wrote")
                data = fh.read(graph_format.MAX_BYTES + 1)
        except OSError as exc:
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"cannot read {name}: {exc.strerror}") from exc
    return data


def cmd_import(args, console):
    data = _read_graph(console, args.file)
    paths = current_project(console, writes=True)
    try:
        result = graph_import.import_graph(paths, REDUCER, data, task_id=args.task, deadline=deadline(),
                                           workspace=paths.root, env=console.env)
    except IntentLoopError as exc:
        if exc.code != ErrorCode.IMPORT_INVALID or args.json:
            raise
        console.err(f"intent-loop: {exc.code}: the graph was not imported; nothing was written:")
        for problem in exc.details.get("problems", []):
            console.err(f"  - {problem}")
        return 1
    if args.json:
        console.json(result)
    else:
        where = "a new task" if result["started_task"] else "task"
        console.out(f"imported {result['imported_claims']} claims into {where} {result['task_id'][:8]} "
                    "as explicit_import evidence (never shown to the model, not in the Guard contract)")
    return 0


def _report(console, args, result):
    if args.json:
        console.json(result)
        return 0 if result["scan"]["clean"] else 1
    what = f"task {result['task_id']}" if result["deleted"] == "task" else f"claim {result['claim_id']}"
    console.out(f"deleted {what}: {result['removed_events']} events removed")
    if result["rechained"]:
        console.out(f"re-chained ledger lines {result['rechained'][0]}-{result['rechained'][1]}; the ledger verifies")
    else:
        console.out("no following events needed re-chaining; the ledger verifies")
    for item in result.get("rewritten", []):
        console.out(f"rewrote event {item['event_id'][:8]}: {item['from']} -> {item['to']}")
    for item in result["cleared"]:
        console.out(f"cleared {item['path']} ({item['why']})")
    scan = result["scan"]
    for item in scan["shared_text"]:
        console.out(f"shared text: the statement of claim {item['claim_id'][:8]} is still held by another live "
                    f"record (in {', '.join(item['files'])}); not a failure")
    if scan["clean"]:
        console.out("scan: no deleted id or statement remains under the project directory")
        return 0
    for hit in scan["hits"]:
        console.out(f"scan FOUND {hit['kind']} {hit.get('id') or hit.get('claim_id')} in {hit['file']}")
    return 1


def cmd_delete_task(args, console):
    paths = current_project(console, writes=True)
    result = deletion.delete_task(paths, args.id, confirm=args.confirm, workspace=paths.root, env=console.env,
                                  deadline=deadline(REWRITE_DEADLINE))
    return _report(console, args, result)


def cmd_delete_claim(args, console):
    paths = current_project(console, writes=True)
    result = deletion.delete_claim(paths, args.id, confirm=args.confirm, workspace=paths.root, env=console.env,
                                   deadline=deadline(REWRITE_DEADLINE))
    return _report(console, args, result)

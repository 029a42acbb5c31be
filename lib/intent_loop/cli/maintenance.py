"""Health commands: verify (full chain check); doctor and recover are added beside it."""
from intent_loop.cli.common import add_json_flag, current_project
from intent_loop.command_runner import REDUCER
from intent_loop.errors import IntentLoopError
from intent_loop.ledger import verify_all


def register(subparsers):
    p = subparsers.add_parser("verify", help="verify the whole hash chain of the project's ledger",
                              description="Full verification from the first byte, ignoring the cache. "
                                          "Exit 1 with the line number on damage.")
    add_json_flag(p)
    p.set_defaults(func=cmd_verify)


def cmd_verify(args, console):
    paths = current_project(console)
    try:
        verified = verify_all(paths, REDUCER, on_progress=console.progress)
    except IntentLoopError as exc:
        result = {"ok": False, "project_id": paths.project_id, "error": exc.to_dict()}
        if args.json:
            console.json(result)
        else:
            console.out(f"ledger DAMAGED at line {exc.line}: {exc.code}: {exc.message}")
        return 1
    result = {"ok": True, "project_id": paths.project_id, "events": verified.count, "bytes": verified.size,
              "last_hash": verified.last_hash, "torn_tail_bytes": verified.torn_tail}
    if args.json:
        console.json(result)
    else:
        console.out(f"ledger OK: {verified.count} events, {verified.size} bytes, last hash {verified.last_hash}")
    return 0

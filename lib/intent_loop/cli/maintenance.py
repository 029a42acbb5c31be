"""Health commands: verify (full chain check), doctor (cli/doctor.py), recover (storage/recovery.py)."""
import os

from intent_loop.cli.common import USER_ONLY_WHEN_APPLIED, current_project, data_root, deadline, finish_command
from intent_loop.cli.doctor import cmd_doctor, projects
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.state import REDUCER
from intent_loop.storage.paths import ProjectPaths
from intent_loop.storage.reading import verify_all
from intent_loop.storage.recovery import cut_to_verified_prefix, export_prefix, export_prefix_empty, scan_project


def register(subparsers):
    p = subparsers.add_parser("verify", help="verify the whole hash chain of the project's ledger",
                              description="Full verification from the first byte, ignoring the cache. "
                                          "Exit 1 with the line number on damage.")
    p.add_argument("--all-projects", action="store_true", help="verify every project under the data root")
    finish_command(p, cmd_verify)
    p = subparsers.add_parser("doctor", help="every check a user could trip over, each with its next action",
                              description="Data root and other candidate roots, hooks, interpreter, chain "
                                          "verification of every project, lock residue, quarantine, Guard file "
                                          "state, recent hook failures. Reports hold counts, sizes and hashes, "
                                          "never claim text. Exit 1 when a check fails.")
    finish_command(p, cmd_doctor)
    p = subparsers.add_parser("recover", help="cut a damaged ledger back to its verified prefix (dry run by default)",
                              description="Without options: report the verified prefix and the first bad line, "
                                          "write nothing. --export FILE writes the verified prefix to FILE. "
                                          "--apply moves the damaged suffix to quarantine/ (0600, with a manifest) "
                                          "and replaces the ledger with exactly the verified prefix.")
    p.add_argument("--export", metavar="FILE", help="write the verified prefix bytes to FILE (must not exist)")
    p.add_argument("--apply", action="store_true", help="replace the ledger with its verified prefix")
    finish_command(p, cmd_recover, user_only=USER_ONLY_WHEN_APPLIED)


def _verify_one(paths, console):
    """Verify the chain and compare the cache with what it folds to (the comparison doctor and the
    daily scrub make): a cache that differs is a named finding and is rebuilt, never believed."""
    findings = []
    try:
        verified = verify_all(paths, REDUCER, on_progress=console.progress, leave_checkpoint=True,
                              report=findings.append)
    except IntentLoopError as exc:
        return {"ok": False, "project_id": paths.project_id, "error": exc.to_dict()}
    return {"ok": not findings, "project_id": paths.project_id, "events": verified.count, "bytes": verified.size,
            "last_hash": verified.last_hash, "torn_tail_bytes": verified.torn_tail,
            "findings": [f.to_dict() for f in findings]}


def cmd_verify(args, console):
    """Exit 1 when any verified ledger is damaged; the line number says where."""
    if args.all_projects:
        root, _how = data_root(console)
        results = [_verify_one(ProjectPaths(root, project_id), console) for project_id in projects(root)]
    else:
        results = [_verify_one(current_project(console), console)]
    if args.json:
        console.json(results[0] if not args.all_projects
                     else {"ok": all(r["ok"] for r in results), "projects": results})
    for result in results if not args.json else ():
        if "events" in result:
            torn = f"; a torn partial last line of {result['torn_tail_bytes']} bytes follows (the next change " \
                   "sets it aside)" if result.get("torn_tail_bytes") else ""
            console.out(f"{result['project_id'][:12]} ledger OK: {result['events']} events, {result['bytes']} bytes, "
                        f"last hash {result['last_hash']}{torn}")
            for finding in result["findings"]:
                console.out(f"{result['project_id'][:12]} cache DIFFERED: {finding['code']}: {finding['message']}")
        else:
            error = result["error"]
            where = f" at line {error['line']}" if error.get("line") is not None else ""  # UNSAFE_PATH has none
            console.out(f"{result['project_id'][:12]} ledger DAMAGED{where}: {error['code']}: {error['message']}")
    if args.all_projects and not results and not args.json:
        console.out("no projects under the data root")
    return 0 if all(r["ok"] for r in results) else 1


def _export(fd, found, path):
    """Write the verified prefix to `path`; a failure names the whole path, not only its last part."""
    try:
        if fd is not None:
            export_prefix(fd, found.size, path)
        else:
            export_prefix_empty(path)
    except IntentLoopError as exc:
        if exc.code != ErrorCode.WRITE_FAILED:
            raise
        why = exc.message.split(": ", 1)[-1]
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not write {path}: {why}") from None


def _republish(paths, console):
    """After a cut: publish, rewrite or withdraw the Guard file so it matches the recovered state
    (a file of ours the cut made unrecorded would otherwise stay frozen as a foreign one)."""
    from intent_loop.guard import provider
    from intent_loop.storage.transaction import Transaction

    try:
        with Transaction(paths, REDUCER, deadline=deadline()) as tx:
            return provider.refresh(tx, workspace=paths.root, env=console.env)
    except IntentLoopError as exc:
        return {"action": "error", "code": exc.code, "reason": exc.message}


def cmd_recover(args, console):
    paths = current_project(console, writes=True)
    export = os.path.abspath(args.export) if args.export else None
    if export and os.path.lexists(export):
        raise IntentLoopError(ErrorCode.FILE_EXISTS, f"{export} exists; choose a new file name")
    found, fd = scan_project(paths, on_progress=console.progress)  # streamed: bounded memory at any size
    try:
        if export:
            _export(fd, found, export)
    finally:
        if fd is not None:
            os.close(fd)
    error, count = found.error, found.count
    result = {"project_id": paths.project_id, "ledger_bytes": found.ledger_bytes, "verified_lines": count,
              "verified_bytes": found.size, "suffix_bytes": found.ledger_bytes - found.size,
              "first_bad_line": error.line if error else None, "error": error.to_dict() if error else None,
              "applied": False, "exported": args.export or None, "quarantine": None}
    if args.apply and error is not None:
        from intent_loop.guard.provider import guard_file_version, provider_path

        guard_path = provider_path(paths.root, console.env)
        result.update(cut_to_verified_prefix(paths, deadline=deadline(), on_progress=console.progress,
                                             guard_version=lambda: guard_file_version(guard_path)))
        if result["applied"]:
            result["guard"] = _republish(paths, console)
    elif args.apply:
        from intent_loop.storage.cache.chain_marker import clear

        clear(paths)  # the chain verifies: a marker left by the daily scrub is stale
    if args.json:
        console.json(result)
    else:
        if error is None:
            console.out(f"ledger OK: {count} lines, {found.size} bytes; nothing to recover")
        else:
            console.out(f"verified prefix: {count} lines, {found.size} bytes; first bad line {error.line}: "
                        f"{error.code}; damaged suffix: {result['suffix_bytes']} bytes")
        if result["exported"]:
            console.out(f"exported the verified prefix to {result['exported']}")
        if result["applied"]:
            where = result["quarantine"]
            moved = f"suffix moved to {where}" if where else "no complete line to keep"
            console.out(f"ledger cut to {result['verified_lines']} lines; {moved}")
            floors = result.get("version_floors")
            if floors:
                console.out("Guard versions carried across the cut (contract_version_floor): " + ", ".join(
                    f"{ref[:15]} v{version}" for ref, version in sorted(floors.items())))
            guard = result.get("guard") or {}
            version = f" version {guard['version']}" if guard.get("version") else ""
            code = f"{guard['code']}: " if guard.get("code") else ""
            reason = f" ({code}{guard['reason']})" if guard.get("reason") else ""
            console.out(f"guard file {guard.get('action')}{version}" + (f" at {guard['path']}" if guard.get("path")
                                                                        else "") + reason)
        elif error is not None and not args.apply:
            console.out("dry run: nothing changed; `intent-loop recover --apply` cuts the ledger back")
    return 0

"""Export a task as a portable graph document (`graph_format`), and write it to a file without clobbering.

Candidates are project-level and never exported.
"""
import os
import time

from intent_loop.base.canonical import canonical_bytes
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claim_records import claim_order
from intent_loop.ops.graph_format import FORMAT, VERSION


def export_graph(state, task_id, *, now=time.time):
    """The graph document (a dict) of one task of `state`."""
    task = state["tasks"].get(task_id)
    if task is None:
        raise IntentLoopError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id} in this project; see `intent-loop status`")
    if task["mode"] == "off":
        raise IntentLoopError(ErrorCode.TASK_OFF, "this task is off; `intent-loop on --task ID` re-enables it first")
    if task["mode"] == "private":
        raise IntentLoopError(ErrorCode.TASK_PRIVATE, "a private task records nothing and cannot be exported")
    records = sorted(task["claims"].values(), key=claim_order)
    claims = []
    for record in records:
        entry = dict(record["claim"])
        entry.setdefault("supersedes", [])
        entry["state"] = record["state"]
        entry["provenance"] = record["provenance"]
        claims.append(entry)
    return {
        "format": FORMAT, "version": VERSION, "exported_at": format_utc(now()),
        "task": {"task_id": task["task_id"], "label": task.get("label"), "mode": task["mode"],
                 "created_at": task["created_at"]},
        "claims": claims,
    }


def render(doc):
    return canonical_bytes(doc) + b"\n"


def write_export(path, data, *, force=False):
    """Write `data` to `path` via temp + fsync + rename; without `force` never replace an existing file.

    Without force the temp file is hard-linked into place (fails atomically if the name exists),
    so a file appearing between the check and the write is never clobbered either.
    """
    from intent_loop.base import platform
    from intent_loop.storage.atomic import replace_atomically, temp_name_for, write_all

    path = os.path.abspath(path)
    if os.path.lexists(path) and not force:
        raise IntentLoopError(ErrorCode.FILE_EXISTS, f"{path} exists; choose a new file name or pass --force")
    if os.path.isdir(path) and not os.path.islink(path):
        raise IntentLoopError(ErrorCode.FILE_EXISTS, f"{path} is a directory; choose a file name")
    if force:
        replace_atomically(path, data, mode=0o600)
        return path
    temp = temp_name_for(path)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            write_all(fd, data)
            platform.fsync_file(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)
        except FileExistsError:
            raise IntentLoopError(ErrorCode.FILE_EXISTS,
                                  f"{path} exists; choose a new file name or pass --force") from None
        platform.fsync_directory(os.path.dirname(path))
    except OSError as exc:
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not write {path}: {exc.strerror or exc}") from exc
    finally:
        try:
            os.unlink(temp)
        except OSError:
            pass
    return path

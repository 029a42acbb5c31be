"""Private-session control files: the only state a private session leaves (no statement, no excerpt)."""
import time

from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import fast_os
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.canonical import canonical_bytes, loads

CONTROL_SCHEMA = 1


def control_path(paths, session_hash):
    return fast_os.path.join(paths.private_dir, f"{session_hash}.json")


def read_control(paths, session_hash):
    """The control record of a session, or None (read path: creates nothing)."""
    path = control_path(paths, session_hash)
    try:
        if paths_mod.check_regular_file(path) is None:
            return None
        with open(path, "rb") as fh:
            record = loads(fh.read())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("project_id") != paths.project_id:
        return None
    return record


def controls_for_task(paths, task_id):
    """Session hashes whose control file names `task_id`."""
    try:
        names = fast_os.listdir(paths.private_dir)
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        if name.endswith(".json") and len(name) == 69:
            record = read_control(paths, name[:-5])
            if record is not None and record.get("task_id") == task_id:
                found.append(name[:-5])
    return found


def claim_control(paths, *, session_hash, task_id, now=time.time):
    """Compare-and-set (caller holds the project lock): a session owns one private task and a
    private task belongs to one session; anything else is PRIVATE_CONFLICT."""
    current = read_control(paths, session_hash)
    if current is not None and current.get("task_id") != task_id:
        raise IntentLoopError(ErrorCode.PRIVATE_CONFLICT,
                              "this session already controls another private task; `intent: on` ends it first")
    owners = [s for s in controls_for_task(paths, task_id) if s != session_hash]
    if owners:
        raise IntentLoopError(ErrorCode.PRIVATE_CONFLICT, "another session already controls this private task")
    record = {"schema_version": CONTROL_SCHEMA, "project_id": paths.project_id, "task_id": task_id,
              "host_session_hash": session_hash, "mode": "private", "updated_at": int(now())}
    paths_mod.check_regular_file(control_path(paths, session_hash))
    from intent_loop.storage.atomic import replace_atomically  # writers only: every hook reads controls

    replace_atomically(control_path(paths, session_hash), canonical_bytes(record))


def release_control(paths, *, session_hash, task_id):
    """Remove the session's control if it names `task_id` (caller holds the lock)."""
    current = read_control(paths, session_hash)
    if current is None:
        return False
    if current.get("task_id") != task_id:
        raise IntentLoopError(ErrorCode.PRIVATE_CONFLICT, "this session's private control names another task")
    fast_os.unlink(control_path(paths, session_hash))
    return True

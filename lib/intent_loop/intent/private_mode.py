"""Private-session control files: the only state a private session leaves (no statement, no excerpt)."""
import time

from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes, loads
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod

CONTROL_SCHEMA = 1


def control_path(paths, session_hash):
    return fast_os.path.join(paths.private_dir, f"{session_hash}.json")


CONTROL_CAP = 4096


def read_control(paths, session_hash):
    """The control record of a session, or None (read path: creates nothing)."""
    try:  # bounded, never through a link or a FIFO (a control file is a few hundred bytes)
        data = paths_mod.read_capped(control_path(paths, session_hash), CONTROL_CAP)
        if data is None:
            return None
        record = loads(data)
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


def is_private_here(paths, session_hash, task):
    """True when nothing semantic may be recorded or shown for `task` in this session: the task's
    mode is private, this session holds a control, or ANY session's control names the task (seed
    000: hook paths check both the session association and task-level controls; a control left by
    another session after `intent-loop on --task` from the CLI must still keep a third session quiet)."""
    if read_control(paths, session_hash) is not None:
        return True
    if task is None:
        return False
    return task["mode"] == "private" or bool(controls_for_task(paths, task["task_id"]))


def release_task_controls(paths, task_id):
    """Remove every session's control naming `task_id` (caller holds the lock): `on` for the task."""
    removed = 0
    for session in controls_for_task(paths, task_id):
        try:
            fast_os.unlink(control_path(paths, session))
            removed += 1
        except FileNotFoundError:
            pass
    return removed


def repair_after_retry(paths, session_hash, state):
    """An exact retry of a prompt is replayed without running its plan, so a crash between its
    events and its control change would leave them apart for good. Under the lock, make the
    session's control agree with the recorded state again: a control naming a task that is no longer
    private, or that the session left (`intent: on` links it back to the current task), is removed
    (the retried `on`, `off` or `new` finishes its cleanup)."""
    current = read_control(paths, session_hash)
    if current is None:
        return False
    task = state["tasks"].get(current.get("task_id"))
    if task is not None and task["mode"] == "private" and state["sessions"].get(session_hash) == task["task_id"]:
        return False  # still this session's private task: private mode goes on
    fast_os.unlink(control_path(paths, session_hash))
    return True

"""What a hook may show a session: the hook view of its task, or a fixed private/off notice."""
from intent_loop.intent import private_mode
from intent_loop.intent.state import active_claims
from intent_loop.intent.views import hook_view

PRIVATE_NOTICE = ("intent-loop: this session is private_mode. Nothing from it is recorded and no stored "
                  "intent is shown; `intent: on` ends private mode.")
OFF_NOTICE = "intent-loop is off for this session's task; `intent: on` turns it back on."


def session_context(state, paths, session_hash):
    """(task_id, text) that hooks may show for a session: the hook view or a fixed notice."""
    task_id = state["sessions"].get(session_hash)
    if private_mode.read_control(paths, session_hash) is not None:
        return task_id, PRIVATE_NOTICE
    task = state["tasks"].get(task_id)
    if task is None:
        return None, None
    if task["mode"] == "private":
        return task_id, PRIVATE_NOTICE
    if task["mode"] == "off":
        return task_id, OFF_NOTICE
    if not active_claims(task):
        return task_id, None
    return task_id, hook_view(state, task_id)

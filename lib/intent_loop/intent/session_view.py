"""What a hook may show a session: a view of the task it works on, or a fixed notice (the continuity
table in docs/hooks.md, "Which task a session sees")."""
import time

from intent_loop.intent import continuity
from intent_loop.intent.claim_records import has_active
from intent_loop.intent.views import HOOK_BUDGET, hook_view

PRIVATE_NOTICE = ("intent-loop: this session is in private mode. Nothing from it is recorded and no stored "
                  "intent is shown; `intent: on` ends private mode.")
OFF_NOTICE = "intent-loop is off for this session's task; `intent: on` turns it back on."
SUBAGENT_HEADER = ("intent-loop: you run as a subagent of the user's session; what follows is the user's recorded "
                   "intent for that session's task. Only the user changes it, by typing `intent:` commands.")
# Codex 0.169.0 moves a hook's context above 2,500 "tokens" counted as UTF-8 bytes / 4 (10,000
# bytes) into a file the model may never read (openai/codex PR #21069, measured in
# tests/fixtures/codex-0.169.0/continuity/README.md). The 2,000-character view is 6,000 bytes of CJK
# and 8,000 of emoji; this bound keeps it inline with room for a notice line whatever the script.
VIEW_BYTES = 8800


def _view(state, task_id, budget=HOOK_BUDGET, guard=None):
    """hook_view within `budget` characters and VIEW_BYTES bytes (fewer claims where text is wide)."""
    text = hook_view(state, task_id, budget=budget, guard=guard)
    while len(text.encode("utf-8", "surrogatepass")) > VIEW_BYTES and budget > 200:
        budget = budget * VIEW_BYTES // len(text.encode("utf-8", "surrogatepass")) - 20
        text = hook_view(state, task_id, budget=budget, guard=guard)
    return text


def private_notice(place, guard=None):
    """What a private session is told: nothing of it is recorded, and what Guard still enforces there
    (Guard reads one contract per workspace: the current task's, which private mode leaves in place)."""
    if place.current is None or place.current_standing != "on":
        return PRIVATE_NOTICE
    return (f"{PRIVATE_NOTICE} Guard still applies the contract of the workspace's current task "
            f"{place.current[:8]} here." + (f" {guard}" if guard else ""))


def session_context(state, paths, session_hash, *, place=None, now=None, guard=None):
    """(task_id, text) that hooks may show for a session: a hook view or a fixed notice, or
    (task_id, None) when there is nothing to show. A session linked to an older task is shown the
    current task's view (what Guard enforces is what the agent is told); the notice that the current
    task moved is the caller's (continuity.moved_notice), since it depends on what the session knew.
    `guard`: the view header's sentence on what Guard blocks in this session."""
    place = place if place is not None else continuity.Place(state, paths, session_hash)
    if place.own_control:
        return place.linked, private_notice(place, guard)
    if place.kind == "empty":
        return None, None
    if place.kind == "unlinked":
        if place.current_standing in ("private", "off"):
            return None, continuity.not_followed_notice(state, paths, place)
        task = state["tasks"][place.current]
        if not has_active(task):
            return place.current, None
        header = continuity.follow_header(task, time.time() if now is None else now)
        return place.current, header + "\n" + _view(state, place.current, budget=HOOK_BUDGET - len(header) - 1,
                                             guard=guard)
    if place.kind == "older":
        if place.current_standing != "on" or not has_active(state["tasks"][place.current]):
            return place.current, None
        return place.current, _view(state, place.current, guard=guard)
    task_id = place.linked
    task = state["tasks"][task_id]
    standing = continuity.standing(state, paths, session_hash, task_id)
    if standing == "private":
        return task_id, PRIVATE_NOTICE
    if standing == "off":
        return task_id, OFF_NOTICE
    if not has_active(task):
        return task_id, None
    return task_id, _view(state, task_id, guard=guard)


def subagent_context(state, paths, session_hash, *, place, guard=None):
    """What a subagent's prompt is given, or None. Codex 0.169.0 sends a subagent's prompts through
    UserPromptSubmit with `agent_id` and the PARENT's session_id
    (tests/fixtures/codex-0.169.0/continuity/README.md), so the subagent is given what its parent
    session sees. Read-only: the parent's seen record is not the subagent's context, so nothing is
    remembered, and the (capped) view comes with each of its prompts."""
    if place.kind == "unlinked" and not place.follows:  # the user's choice to make, not the subagent's
        return None
    _task_id, text = session_context(state, paths, session_hash, place=place, guard=guard)
    if text is None or text.startswith(PRIVATE_NOTICE):
        return text
    return SUBAGENT_HEADER + "\n" + text

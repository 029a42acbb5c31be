"""Which task a session works on: its own link, else the workspace's current task (docs/hooks.md,
"Which task a session sees"), and the words that tell a session the current task moved."""
import time

from intent_loop.intent import private_mode
from intent_loop.intent.claim_records import shown_active
from intent_loop.intent.claims import split_prefix


def current_task_id(state):
    """The task of the newest user event that changes claims or mode: the one Guard publishes."""
    task_id = state["last_change"]["task_id"]
    return task_id if task_id is not None and task_id in state["tasks"] else None


def standing(state, paths, session_hash, task_id):
    """"on", "private" (its mode, or any session's private control names it) or "off"; None for no task."""
    task = state["tasks"].get(task_id) if task_id is not None else None
    if task is None:
        return None
    if task["mode"] == "private" or private_mode.controls_for_task(paths, task_id):
        return "private"
    return task["mode"]


class Place:
    """Where one session stands: its linked task, the current task, and what it may follow.

    `kind`: "empty" (no current task and no link), "unlinked", "current" (linked to the current
    task, or linked with no current task) or "older" (linked to another task than the current).
    `task_id`: what this session reads and writes: its link, else the current task when that is on
    and private nowhere (`followed`), else None.
    """

    __slots__ = ("linked", "current", "current_standing", "kind", "task_id", "own_control")

    def __init__(self, state, paths, session_hash):
        linked = state["sessions"].get(session_hash)
        self.linked = linked if linked is not None and linked in state["tasks"] else None
        self.current = current_task_id(state)
        self.current_standing = standing(state, paths, session_hash, self.current)
        self.own_control = private_mode.read_control(paths, session_hash) is not None
        if self.linked is None:
            self.kind = "empty" if self.current is None else "unlinked"
        elif self.current is None or self.current == self.linked:
            self.kind = "current"
        else:
            self.kind = "older"
        followed = self.current if self.kind == "unlinked" and self.current_standing == "on" else None
        self.task_id = self.linked if self.linked is not None else followed

    @property
    def follows(self):
        """An unlinked session reading the current task (its first writing command joins it)."""
        return self.kind == "unlinked" and self.task_id is not None


def newest_on_task(state, paths, *, besides):
    """The most recently changed task that is on and private nowhere (the `intent: resume <id>`
    a notice suggests), other than `besides`; None when there is none."""
    best = None
    for task_id in state["tasks"]:
        if task_id == besides:
            continue
        task = state["tasks"][task_id]
        if task["mode"] != "on" or (best is not None and task["changed_seq"] <= best["changed_seq"]):
            continue
        if not private_mode.controls_for_task(paths, task_id):
            best = task
    return best["task_id"] if best is not None else None


def has_goal(task):
    """True when the task holds an active goal of the user's (what Guard's objective needs)."""
    return bool(goals(task))


def goals(task):
    """The task's active goals the user typed (or confirmed), oldest first: the Guard objective."""
    return [r for r in shown_active(task) if "outcome" in r["claim"]["facets"]
            and split_prefix(r["claim"]["statement"])[0] is None]


def age(stamp, now):
    """"3 weeks", "2 days", "5 hours", "4 minutes", "a moment": how long ago `stamp` was."""
    from intent_loop.base.timestamps import duration_words, parse_epoch

    then = parse_epoch(stamp) if isinstance(stamp, str) else None
    if then is None:
        return "a while"
    return duration_words(now - then)


def task_ages(task, now):
    """`started 3 weeks ago, last changed 2 days ago` (one phrase when both are the same)."""
    started, changed = age(task.get("created_at"), now), age(task.get("changed_at"), now)
    if started == changed:
        return f"started {started} ago"
    return f"started {started} ago, last changed {changed} ago"


def follow_header(task, now):
    """The one line above the current task's view in a session that has not typed a command yet."""
    from intent_loop.intent.views import task_label

    return (f"intent-loop: this session follows the workspace's current task {task['task_id'][:8]}"
            f"{task_label(task)} ({task_ages(task, now)}), the one Guard's contract holds; the user's typed "
            "`intent:` commands join it, and `intent: new` starts a fresh task.")


def not_followed_notice(state, paths, place):
    """The one line an unlinked session gets when the current task is private or off: nothing is
    recorded or shown until the user chooses (never a word of that task)."""
    short = place.current[:8]
    earlier = newest_on_task(state, paths, besides=place.current)
    resume = f"`intent: resume {earlier[:8]}` continues the earlier task {earlier[:8]}" if earlier else None
    if place.current_standing == "private":
        choices = ["`intent: private` goes on privately in this session"]
        head = "the newest task in this workspace is private"
    else:
        choices = [f"`intent: on` turns task {short} back on"]
        head = f"intent-loop is off for this workspace's current task {short}"
    choices += [c for c in (resume, "`intent: new` starts a fresh task") if c]
    return f"intent-loop: {head}: nothing is recorded or shown until the user chooses: {'; '.join(choices)}."


def not_followed_reason(state, paths, place):
    """Why a claim typed in such a session is not recorded, and what to type (the receipt's words)."""
    short = place.current[:8]
    earlier = newest_on_task(state, paths, besides=place.current)
    first = "`intent: private` to go on privately" if place.current_standing == "private" else \
        f"`intent: on` to turn task {short} back on"
    resume = f", `intent: resume {earlier[:8]}` for the earlier task" if earlier else ""
    head = "the newest task here is private" if place.current_standing == "private" else f"task {short} is off"
    return f"not recorded: {head}; type {first}{resume}, or `intent: new`, then the line again"


GOAL_CHARS = 60  # a moved-task notice names the new task's goal, clipped to this


def moved_notice(state, paths, place, *, known, now=None):
    """What a session is told when the current task is no longer the one it last knew (`known`),
    moved by another session: what Guard enforces now, and how to switch back."""
    back = known if known is not None and known in state["tasks"] else place.linked
    switch = f"; `intent: resume {back[:8]}` switches back to task {back[:8]}" if back and back != place.current else ""
    if place.current is None:
        return f"Guard enforces nothing: no task is current{switch}"
    short = place.current[:8]
    task = state["tasks"][place.current]
    # when, and what the task is about (issue 35 item 5): hex ids alone tell a person nothing
    when = f"in another session {age(task.get('changed_at'), time.time() if now is None else now)} ago"
    if place.current_standing == "private":
        return f"Guard enforces nothing: the current task was made private {when}{switch}"
    if place.current_standing == "off":
        return f"Guard enforces nothing: task {short} was turned off {when}{switch}"
    first = goals(task)
    if not first:
        return f"Guard enforces nothing: task {short}, changed {when}, has no goal yet{switch}"
    goal = first[0]["claim"]["statement"]
    goal = goal if len(goal) <= GOAL_CHARS else goal[:GOAL_CHARS - 1] + "…"
    return f"Guard's contract now holds task {short} (goal: {goal}), changed {when}{switch}"

"""Issue 35 items 4 and 5: a session linked to an older task is shown the current task by
`intent: show` (what Guard reads and the model is given) with the way back to its own; the notice
that the current task moved says what the new task is about and when it moved; a claim id typed in
the wrong task names the task that holds it."""
import pytest

from helpers.inproc_hook import InProcessHooks, context


@pytest.fixture
def hooks(tmp_path):
    return InProcessHooks(tmp_path)


def _two_tasks(hooks):
    """Session A on task A; session B then starts task B, which becomes the current task."""
    hooks.prompt("sess-A", "intent: goal ship the parser\nintent: forbid action:network", "1")
    hooks.prompt("sess-A", "go on", "2")
    hooks.prompt("sess-B", "intent: new\nintent: goal write the docs", "3")
    from intent_loop.intent.state import REDUCER
    from intent_loop.storage import reading

    state = reading.load_verified(hooks.paths(), REDUCER).state
    by_goal = {}
    for task_id, task in state["tasks"].items():
        for record in task["claims"].values():
            by_goal[record["claim"]["statement"]] = (task_id, record["claim"]["claim_id"])
    return by_goal


def test_show_in_a_session_linked_to_an_older_task_shows_the_current_task_and_the_way_back(hooks):
    ids = _two_tasks(hooks)
    task_a, task_b = ids["ship the parser"][0], ids["write the docs"][0]
    shown = hooks.prompt("sess-A", "intent: show", "4")["reason"]
    assert "write the docs" in shown and "ship the parser" not in shown
    assert f"`intent: resume {task_a[:8]}`" in shown
    # and the model, at the next prompt that reaches it, is given the same task
    assert "write the docs" in context(hooks.prompt("sess-A", "go on", "5")) and task_b[:8] in shown


def test_the_moved_notice_names_the_new_tasks_goal_and_when_it_moved(hooks):
    _two_tasks(hooks)
    told = hooks.prompt("sess-A", "go on", "4")
    notice = next(part for part in told["systemMessage"].split("\n") if "now holds task" in part)
    assert "(goal: write the docs)" in notice and "in another session a moment ago" in notice


def test_a_claim_of_another_task_is_named_with_its_task_and_the_resume_command(hooks):
    ids = _two_tasks(hooks)
    task_a, network = ids["ship the parser"][0], ids["forbid: action:network"][1]
    answer = hooks.prompt("sess-B", f"intent: drop {network[:8]}", "4")
    assert "(CLAIM_NOT_FOUND)" in answer["reason"]
    assert f"task {task_a[:8]}" in answer["reason"] and f"`intent: resume {task_a[:8]}`" in answer["reason"]


def _ledger_lines(hooks):
    with open(hooks.paths().ledger, "rb") as ledger:
        return ledger.read().count(b"\n")


@pytest.mark.parametrize("private", [False, True])
def test_a_private_sessions_stop_records_no_signal(hooks, private):
    """Issue 35 item 8: nothing of a private session is recorded, its turn's end included (the
    control case, a session that is not private, shows the Stop does record its hash-only signal)."""
    import time

    hooks.prompt("sess-A", "intent: goal ship the parser", "1")
    if private:
        hooks.prompt("sess-A", "intent: private", "2")
    before = _ledger_lines(hooks)
    hooks("Stop", "sess-A", turn_id="3", stop_hook_active=False, last_assistant_message="Done.")
    deadline = time.monotonic() + 10
    while not private and _ledger_lines(hooks) == before and time.monotonic() < deadline:
        time.sleep(0.05)  # the Stop records after its answer, in its child
    time.sleep(0.3 if private else 0)
    assert (_ledger_lines(hooks) > before) is (not private)

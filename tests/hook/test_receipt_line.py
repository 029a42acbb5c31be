"""hook/prompt_answer.receipt_line packs a receipt into at most two lines of about 160 characters:
what does not fit is clipped or counted, and a count never says "+0 more"."""
from intent_loop.hook.prompt_answer import MAX_ROWS, WIDTH, Pinned, receipt_line


def test_the_last_item_that_does_not_fit_is_clipped_without_a_count():
    """Found by Claude Code's longer Guard line: the last item of a full second line was clipped and
    followed by "+0 more: intent: show"."""
    guard = Pinned("Guard contract v2, not enforced on this host (Guard runs only under Codex)")
    joined = "joined the current task 1234abcd (started a moment ago); `intent: new` starts a fresh one"
    last = "recorded forbid [abcd1234] (Guard can block it in Codex sessions, not here)"
    line = receipt_line([guard, joined, last])
    rows = line.splitlines()
    assert len(rows) <= MAX_ROWS and all(len(row) <= WIDTH for row in rows), rows
    assert "more: intent: show" not in line and "recorded forbid [abcd1234]" in line


def test_items_left_over_are_counted_and_the_count_is_never_zero():
    items = [f"recorded must [{n:08x}] keep rule number {n} of this long task intact" for n in range(12)]
    rows = receipt_line(items).splitlines()
    assert len(rows) == MAX_ROWS and all(len(row) <= WIDTH for row in rows)
    count = int(rows[-1].rsplit("+", 1)[1].split(" ", 1)[0])
    shown = sum(row.count("recorded must") for row in rows)
    assert count > 0 and shown + count == len(items)  # a clipped item is shown, the rest counted

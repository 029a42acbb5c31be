"""has_command and injected_by read the line before each match by walking back over the marker and
its spaces only (prompt_scan._marker_head, _starts_line): the same answers as reading the whole line
head, which made a long line of matches quadratic (300 KB: seconds, past a hook's deadline)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from intent_loop.intent.prompt_scan import MARKER, _starts_line, has_command, injected_by, near_command_kind

PIECES = [" ", "\t", "\n", "\r", "-", "*", "+", "`", "1", "9", ".", ")", "a", "intent:", "INTENT:", "<channel",
          "<task-notification>", ">", "x"]


def _whole_head(text, at):
    start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
    return text[start:at]


def _has_command_by_whole_heads(prompt):
    lowered = prompt.lower()
    at = lowered.find(MARKER)
    while at != -1:
        if _starts_line(lowered, at) or near_command_kind(_whole_head(lowered, at)) is not None:
            return True
        at = lowered.find(MARKER, at + len(MARKER))
    return False


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join))
def test_the_short_walk_answers_as_the_whole_line_head_does(prompt):
    assert has_command(prompt) == _has_command_by_whole_heads(prompt)
    tagged = injected_by({}, prompt)
    if tagged is not None and tagged.startswith("<"):
        tag = tagged.rstrip(">")
        assert any(not _whole_head(prompt, at).strip(" \t")
                   for at in range(len(prompt)) if prompt.startswith(tag, at))


def test_a_long_line_of_matches_is_read_once():
    """Deterministic: each match's walk stops at the word before it."""
    line = "x " + "a intent: " * 30000
    assert has_command(line) is False
    assert injected_by({}, "x " + "<channel " * 30000) is None
    assert has_command("1.  intent: goal x") and has_command("\t- intent: goal x") and not has_command("a - intent: x")

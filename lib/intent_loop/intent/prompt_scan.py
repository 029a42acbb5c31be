"""Does a prompt hold an `intent:` command line? Split from the parser: every prompt asks this,
few need the parser, and its import is a tenth of a hook's start-up budget."""

MARKER = "intent:"


def has_command(prompt):
    """True when some line starts (after spaces/tabs) with `intent:`, case-insensitively, or looks
    like one inside a list or backticks (near_command_kind: the parser then tells the user)."""
    if ":" not in prompt:  # most prompts: one C-speed scan, no allocation
        return False
    # Only ASCII letters lower onto `intent:` (U+0130 lowers to two characters), and nothing lowers
    # onto a space, tab, CR or LF, so the lowered copy matches exactly the lines parse_prompt accepts.
    lowered = prompt.lower()
    at = lowered.find(MARKER)
    while at != -1:
        if _starts_line(lowered, at):
            return True
        head = _marker_head(lowered, at)
        if head is not None and near_command_kind(head) is not None:
            return True
        at = lowered.find(MARKER, at + len(MARKER))
    return False


def _marker_head(text, at):
    """What stands on the line before position `at`, less its indentation, when it is short enough to
    be one of near_command_kind's markers (at most 5 characters, then spaces), else None. Found by
    walking back from `at` over at most the marker and the spaces around it: asked once for every
    `intent:` in a prompt, reading back to the line's start each time made a long line of them
    quadratic (300 KB took seconds, past a hook's deadline)."""
    end = at - 1
    while end >= 0 and text[end] == " ":  # the spaces after a marker
        end -= 1
    start = end
    while start >= 0 and end - start < 5 and text[start] not in " \t\r\n":  # the marker itself
        start -= 1
    before = start
    while before >= 0 and text[before] in " \t":  # the line's indentation
        before -= 1
    if before >= 0 and text[before] not in "\r\n":
        return None  # more words, or a longer one: no marker stands alone there
    return text[start + 1:at]


LIST_MARKERS = ("- ", "* ", "+ ")


def near_command_kind(head):
    """"list" when `head` (the line before `intent:`) is a list marker (`- `, `* `, `+ `, `1. `,
    `1) `), "backticks" when it is a backtick, else None. Such a line is never run: pasted text
    must not become commands. A quoted line (`> intent: ...`) is prose and is not told."""
    head = head.lstrip(" \t")
    if head == "`":
        return "backticks"
    if head in LIST_MARKERS:
        return "list"
    number = head.rstrip(" ")
    if number[:-1].isdigit() and number[-1:] in ".)" and head.endswith(" ") and len(number) <= 4:
        return "list"
    return None


def _starts_line(text, at):
    before = at - 1
    while before >= 0 and text[before] in " \t":
        before -= 1
    return before < 0 or text[before] in "\r\n"


# -- prompts the user never typed --------------------------------------------------------------
# Claude Code runs UserPromptSubmit for prompts it writes itself, with exactly a typed prompt's fields
# (docs/hosts.md, "Prompts the user never typed", read in 2.1.332's code and observed): at hook time
# only their text marks them, and some carry no mark at all. The text inside may be the model's own
# (a background task's description), so an `intent:` line there is never the user's.
# A tag Claude Code wraps such a prompt in, at the start of a line (followed by `>` or a space):
INJECTED_TAGS = ("<task-notification", "<cross-session-message", "<teammate-message", "<channel", "<agent-message")
# The words a scheduled prompt starts with when Claude Code wrote them (a /loop tick, a missed one-shot
# task, the auto-resume after a usage limit): the prompt's first line only.
INJECTED_OPENINGS = ("# Autonomous loop tick", "# /loop tick", "The following one-shot scheduled task was missed",
                     "Your claude.ai usage limit has reset")


def injected_by(payload, prompt):
    """The mark that says the host, not the user, wrote this prompt (one of INJECTED_TAGS or
    INJECTED_OPENINGS, or "source: <value>" when a Claude Code payload (one without Codex's turn_id)
    names a source other than "user"), or None: only then is it the user's. A prompt a user types
    with such a mark is treated the same: it loses its commands, and the receipt says why."""
    source = payload.get("source") if "turn_id" not in payload else None  # Codex's prompts carry a turn_id
    if source is not None and source != "user":
        return f"source: {str(source)[:40]}"
    opening = prompt.lstrip()
    for words in INJECTED_OPENINGS:
        if opening.startswith(words):
            return words
    if "<" not in prompt:  # most prompts: one C-speed scan
        return None
    for tag in INJECTED_TAGS:
        at = prompt.find(tag)
        while at != -1:
            after = prompt[at + len(tag):at + len(tag) + 1]
            if (after == ">" or after.isspace()) and _starts_line(prompt, at):
                return tag + ">" if after == ">" else tag
            at = prompt.find(tag, at + len(tag))
    return None

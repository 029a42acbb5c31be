"""Does a prompt hold an `intent:` command line? Split from the parser: every prompt asks this,
few need the parser, and its import is a tenth of a hook's start-up budget."""

MARKER = "intent:"


def has_command(prompt):
    """True when some line starts (after spaces/tabs) with `intent:`, case-insensitively."""
    if ":" not in prompt:  # most prompts: one C-speed scan, no allocation
        return False
    # Only ASCII letters lower onto `intent:` (U+0130 lowers to two characters), and nothing lowers
    # onto a space, tab, CR or LF, so the lowered copy matches exactly the lines parse_prompt accepts.
    lowered = prompt.lower()
    at = lowered.find(MARKER)
    while at != -1:
        if _starts_line(lowered, at):
            return True
        at = lowered.find(MARKER, at + len(MARKER))
    return False


def _starts_line(text, at):
    before = at - 1
    while before >= 0 and text[before] in " \t":
        before -= 1
    return before < 0 or text[before] in "\r\n"

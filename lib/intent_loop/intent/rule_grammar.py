"""The structured-rule grammar Guard enforces on must_not and the three authorization lists."""

EVIDENCE_SOURCES = ("file", "command", "test", "api", "database", "real_page", "release", "user")
ACTIONS = (
    "read", "write", "write_workspace", "delete", "destructive", "install_local",
    "network", "publish", "external", "external_side_effect", "unknown",
)

# The union of what JS String.prototype.trim and Python str.strip remove: JS alone trims U+FEFF,
# Python alone strips U+001C-U+001F and U+0085. Guard trims with JS, we write from Python.
GUARD_WHITESPACE = (
    " \t\n\v\f\r\x1c\x1d\x1e\x1f\x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
# What JavaScript's String.prototype.trim() alone removes (ECMA-262 WhiteSpace and LineTerminator):
# where Guard compares a trimmed value exactly (EFG_CONTRACT_PATH, its placeholder sentences).
JS_TRIM = ("\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
           "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff")


# Written by `efg init`; Guard refuses a contract value equal to one of them (see guard/acceptance).
INIT_PLACEHOLDERS = (
    "Replace with the exact user-requested outcome.",
    "Replace with the primary object being changed or delivered.",
    "Replace with non-negotiable requirements.",
)


def js_trim(text):
    return text.strip(JS_TRIM)

# Rule name -> what to write instead. Keys are names folded by _squeeze (case, spaces, - and _
# removed), so `Tools :`, `command prefix:` and `command_prefix:` all land here.
_NAME_TEMPLATES = {
    "action": "action:<action>",
    "actions": "action:<action>",
    "tool": "tool:<name>",
    "tools": "tool:<name>",
    "commandprefix": "command-prefix:<prefix>",
    "commandprefixes": "command-prefix:<prefix>",
}
_VALID_NAMES = ("action", "tool", "command-prefix")


def strip_guard_space(text):
    """`text` without leading and trailing whitespace of either JS trim() or Python strip()."""
    return text.strip(GUARD_WHITESPACE)


def is_blank(text):
    return not strip_guard_space(text)


def _squeeze(head):
    """Fold a would-be rule name: casefold (so `ſ` and `K` fold too), drop spaces, `-` and `_`."""
    if not head[:1].isalpha():  # "- tool: x" is a bullet, not a rule name
        return ""
    folded = head.casefold()
    return "".join(char for char in folded if char not in GUARD_WHITESPACE and char not in "-_")


_LINE_TERMINATORS = ("\n", "\r", "\u2028", "\u2029")  # what JavaScript's `.` does not match


def rule_error(text, *, typed=True):
    """None when `text` is a valid structured rule or plain prose, else what to write instead.

    `typed` (the user typing a rule) is stricter than Guard 0.2.2, to catch mistakes early: an
    action name must be written exactly (`action:read`). `typed=False` is Guard's own rule, for
    validating a document: it trims and lowercases the value (`action: Read` is valid), and a
    structured value holding a line terminator is a near miss (Guard's pattern cannot match it)."""
    stripped = strip_guard_space(text)
    if not stripped:
        return "empty rule; write a sentence or an action:, tool: or command-prefix: rule"
    head, colon, value = stripped.partition(":")
    if not colon:
        return None
    squeezed = _squeeze(head)
    if squeezed not in _NAME_TEMPLATES:
        return None
    name = head.casefold()
    if name not in _VALID_NAMES:
        return f"near-miss rule prefix '{head}:'; write '{_NAME_TEMPLATES[squeezed]}' or rephrase"
    if is_blank(value):
        return f"rule '{head}:' has an empty value; write '{_NAME_TEMPLATES[squeezed]}'"
    if any(mark in value for mark in _LINE_TERMINATORS):
        return f"rule '{head}:' holds a line break, which Guard cannot read; write it on one line"
    if name == "action":
        return _action_error(value, typed=typed)
    return None


def rule_kind(text):
    """("action" | "tool" | "command-prefix", value) for a structured rule Guard checks, else
    (None, text): natural language, which Guard only reminds of."""
    stripped = strip_guard_space(text)
    head, colon, value = stripped.partition(":")
    name = head.casefold()
    if colon and name in _VALID_NAMES and not is_blank(value):
        return name, strip_guard_space(value)
    return None, text


def _action_error(value, *, typed):
    """Guard 0.2.2 trims and lowercases the action name; typing asks for the exact name anyway."""
    if value in ACTIONS or (not typed and js_trim(value).lower() in ACTIONS):
        return None
    cleaned = strip_guard_space(value).lower()
    if cleaned in ACTIONS:
        return f"write 'action:{cleaned}' exactly (lowercase, no space after the colon)"
    return f"unknown action '{strip_guard_space(value)}'; use one of: {', '.join(ACTIONS)}"

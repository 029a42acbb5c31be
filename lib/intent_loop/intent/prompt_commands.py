"""The `intent:` prompt-command grammar: find the command lines of a prompt and parse each into a
Command or a Rejection (claim text is built by claim_text, verbs live in claim_verbs)."""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claim_text import MAX_RAW_CHARS, build_claim, redacted, trimmed
from intent_loop.intent.claim_verbs import CLAIM_SPECS, MANAGE_VERBS, TWO_WORD_VERBS, unknown_verb_reason
from intent_loop.intent.claims import MAX_LABEL, check_characters, has_line_break
from intent_loop.intent.prompt_scan import MARKER, has_command, near_command_kind

# No re, json, typing, enum, dataclasses or difflib here: this module runs inside a hook on every
# prompt that holds a command, and each of those imports costs more than the hook's budget
# (startup-performance.md).

_ID_CHARS = frozenset("0123456789abcdef-")
_HEX_DIGITS = frozenset("0123456789abcdef")


class _Record:
    """Equality and repr over __slots__, so tests and receipts can compare and show parse results."""

    __slots__ = ()
    __hash__ = None

    def _fields(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and self._fields() == other._fields()

    def __repr__(self):
        pairs = zip(self.__slots__, self._fields(), strict=False)
        shown = ", ".join(f"{name}={value!r}" for name, value in pairs if value is not None)
        return f"{type(self).__name__}({shown})"


class Command(_Record):
    """One accepted `intent:` line; attributes that do not apply to its verb are None."""

    __slots__ = ("line", "verb", "kind", "facet", "scope", "statement", "arg", "text")

    def __init__(self, line, verb, kind, *, facet=None, scope=None, statement=None, arg=None, text=None):
        self.line = line
        self.verb = verb
        self.kind = kind  # "claim" or "manage"
        self.facet = facet
        self.scope = scope
        self.statement = statement
        self.arg = arg
        self.text = text


class Rejection(_Record):
    """An `intent:` line that records nothing; `reason` tells the user what to type instead."""

    __slots__ = ("line", "verb", "code", "reason")
    kind = "rejection"  # read-only class constant, so callers can branch on `kind` for every entry

    def __init__(self, line, verb, code, reason):
        self.line = line
        self.verb = verb
        self.code = code
        self.reason = reason


class NearCommand(Rejection):
    """A line that looks like an `intent:` command inside a list or backticks: never run, always
    told (with how to type it), and prose for everything else (the prompt still reaches the model)."""

    __slots__ = ()
    kind = "near"


_NEAR_REASONS = {
    "list": "looks like an `intent:` command inside a list, so it was not run; type it at the start of its own line",
    "backticks": "is an `intent:` command wrapped in backticks, so it was not run; type it without them",
}


def parse_prompt(prompt):
    """One Command or Rejection per `intent:` line, in prompt order; prose lines yield nothing."""
    if not has_command(prompt):
        return []
    results = []
    lines = prompt.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    for number, line in enumerate(lines, 1):
        head = line.lstrip(" \t")
        if head[: len(MARKER)].lower() == MARKER:
            results.append(_parse_line(head[len(MARKER):], number))
            continue
        at = line.lower().find(MARKER)
        near = near_command_kind(line[:at]) if at > 0 else None
        if near is not None and (near != "backticks" or line.rstrip(" \t").endswith("`")):
            results.append(NearCommand(number, None, ErrorCode.NEAR_COMMAND, _NEAR_REASONS[near]))
    return results


def _parse_line(body, line):
    verb, rest = _split_verb(body)
    if not verb:
        reason = "no verb after `intent:`; write e.g. `intent: goal <text>`, or `intent: help` for the list"
        return Rejection(line, None, ErrorCode.UNKNOWN_VERB, reason)
    if verb in CLAIM_SPECS:
        return _claim_command(line, verb, rest)
    if verb in MANAGE_VERBS:
        return _manage_command(line, verb, rest)
    return Rejection(line, None, ErrorCode.UNKNOWN_VERB, unknown_verb_reason(verb))


def _split_verb(body):
    """(lowercased verb, rest of the line); `must not` and `done when` read as their hyphenated verbs."""
    parts = body.split(None, 1)
    if not parts:
        return "", ""
    verb, rest = parts[0].lower(), (parts[1] if len(parts) > 1 else "")
    if verb in TWO_WORD_VERBS:
        second, joined = TWO_WORD_VERBS[verb]
        more = rest.split(None, 1)
        if more and more[0].lower() == second:
            return joined, (more[1] if len(more) > 1 else "")
        if more and more[0].lower() == second + ":":
            return f"{verb} {more[0].lower()}", ""  # `must not:` is unknown; the reason suggests must-not
    return verb, rest


def _claim_command(line, verb, text):
    try:
        facet, scope, statement = build_claim(verb, text)
    except IntentLoopError as exc:
        return Rejection(line, verb, exc.code, exc.message)
    return Command(line, verb, "claim", facet=facet, scope=scope, statement=statement)


def _manage_command(line, verb, rest):
    rest = rest.strip()
    try:
        if verb == "new":
            return Command(line, verb, "manage", arg=_label(rest))
        if verb in ("drop", "approve"):
            return Command(line, verb, "manage", arg=_drop_target(rest, verb))
        if verb in ("confirm", "dismiss"):
            return Command(line, verb, "manage", arg=_candidate_targets(verb, rest))
        if verb == "resume":
            return Command(line, verb, "manage", arg=_task_target(rest))
        if verb == "replace":
            target, text = _replace_parts(rest)
            return Command(line, verb, "manage", arg=target, text=text)
    except IntentLoopError as exc:
        return Rejection(line, verb, exc.code, exc.message)
    if rest:
        reason = f"`intent: {verb}` takes no argument; write it alone on its line"
        return Rejection(line, verb, ErrorCode.INVALID_ARGUMENT, reason)
    return Command(line, verb, "manage")


def _label(text):
    """None without a label; otherwise the redacted label, which must fit 1-80 characters."""
    if not text:
        return None
    text = text.replace("\t", " ")
    label = trimmed(redacted(text)) if len(text) <= MAX_RAW_CHARS else text  # too long either way
    if len(label) > MAX_LABEL or has_line_break(label):
        reason = f"a task label is one line of at most {MAX_LABEL} characters after redaction (got {len(label)})"
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, reason)
    check_characters(label, "a task label")
    return label


def _drop_target(rest, verb="drop"):
    """The one claim id `intent: drop` and `intent: approve` take."""
    if not rest:
        reason = f"`intent: {verb}` needs a claim id, e.g. `intent: {verb} 1a2b3c4d` (see `intent: show`)"
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, reason)
    parts = rest.split(None, 1)
    if len(parts) > 1:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"`intent: {verb}` takes one claim id and nothing else")
    return _id_prefix(parts[0], verb)


def _candidate_targets(verb, rest):
    """One or more proposal/candidate id prefixes, space-separated (`intent: confirm 1a2b3c4d 5e6f7a8b`)."""
    tokens = rest.split()
    if not tokens:
        reason = f"`intent: {verb}` needs a proposal id, e.g. `intent: {verb} 1a2b3c4d` (the receipt names it)"
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, reason)
    if len(tokens) > 12:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"`intent: {verb}` takes at most 12 ids on one line")
    return " ".join(dict.fromkeys(_id_prefix(token, verb) for token in tokens))


def _task_target(rest):
    """`intent: resume` alone (the current task) or with one task id prefix."""
    if not rest:
        return None
    parts = rest.split()
    candidate = parts[0].lower()
    if len(parts) == 1 and 4 <= len(candidate) <= 36 and candidate[0] in _HEX_DIGITS and set(candidate) <= _ID_CHARS:
        return candidate
    reason = ("`intent: resume` takes nothing (the current task) or one task id: 4-36 hex digits, as the "
              "receipts and `intent-loop status` show it")
    raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, reason)


def _replace_parts(rest):
    parts = rest.split(None, 1)
    if not parts:
        reason = "`intent: replace` needs a claim id and the new text: `intent: replace <id> <text>`"
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, reason)
    target = _id_prefix(parts[0], "replace")
    text = parts[1].strip() if len(parts) > 1 else ""
    if not text:
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, f"`intent: replace {target}` needs the new text after the id")
    return target, text


def _id_prefix(token, verb):
    """A lowercased claim-id prefix: 4-36 hex digits and dashes, starting with a digit (no secret is echoed)."""
    candidate = token.lower()
    if 4 <= len(candidate) <= 36 and candidate[0] in _HEX_DIGITS and set(candidate) <= _ID_CHARS:
        return candidate
    reason = f"`intent: {verb}` needs a claim id: 4-36 hex digits and dashes, as `intent: show` lists them"
    raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, reason)

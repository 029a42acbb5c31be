"""The `intent:` prompt-command grammar: find command lines, parse them and build claim statements."""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.prompt_scan import MARKER, has_command  # noqa: F401 (has_command is part of this API)

# No re, json, typing, enum, dataclasses or difflib here: this module runs inside a hook on every
# prompt and each of those imports costs more than the hook's budget (startup-performance.md).

MAX_STATEMENT_CHARS = 500
MAX_LABEL_CHARS = 80
# Longer raw text is rejected before redaction: no real secret shrinks 20,000 characters to 500
# (a collapsed 4096-bit PEM key is ~3,300), and a hostile multi-megabyte line stays within the
# hook's deadline.
MAX_RAW_CHARS = 20_000

# verb, facet, scope, stored field prefix (None: the statement is the bare text); the order
_CLAIM_TABLE = (
    ("goal", "outcome", "task", None),
    ("object", "outcome", "task", "object"),
    ("surface", "outcome", "task", "surface"),
    ("include", "hard_constraint", "task", "scope include"),
    ("exclude", "hard_constraint", "task", "scope exclude"),
    ("must", "hard_constraint", "task", "must"),
    ("must-not", "hard_constraint", "task", "must not"),
    ("allow", "soft_constraint", "task", "allow"),
    ("ask", "hard_constraint", "task", "ask"),
    ("forbid", "hard_constraint", "task", "forbid"),
    ("done-when", "success_signal", "task", "done when"),
    ("prefer", "soft_constraint", "task", None),
    ("tradeoff", "tradeoff", "task", None),
    ("always", "soft_constraint", "long_term", None),
)
CLAIM_VERBS = tuple(row[0] for row in _CLAIM_TABLE)
MANAGE_VERBS = ("show", "help", "new", "resume", "drop", "replace", "private", "off", "on")
RESERVED_PREFIXES = tuple(row[3] for row in _CLAIM_TABLE if row[3])
_CLAIMS = {verb: (facet, scope, prefix) for verb, facet, scope, prefix in _CLAIM_TABLE}
_PREFIX_VERBS = {prefix: verb for verb, _facet, _scope, prefix in _CLAIM_TABLE if prefix}
_RULE_VERBS = ("allow", "ask", "forbid", "must-not")  # Guard checks the rule grammar on these lists
# How an unprefixed stored claim maps back to a verb, most specific facet first.
_UNPREFIXED_FACET_VERBS = (
    ("outcome", "goal"), ("success_signal", "done-when"), ("tradeoff", "tradeoff"),
    ("soft_constraint", "prefer"), ("hard_constraint", "must"),
)
# People type the stored prefix's spelling; `must not x` must never become the claim `must: not x`.
_TWO_WORD_VERBS = {"must": ("not", "must-not"), "done": ("when", "done-when")}
# str.splitlines() boundaries: any of them would make a stored statement render as several lines.
_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"
_ID_CHARS = frozenset("0123456789abcdef-")
_HEX_DIGITS = frozenset("0123456789abcdef")
_ECHO_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_:")

HELP_TEXT = """\
Write `intent: <verb> ...` alone on a prompt line to record what you ask for:
  goal <text>          the outcome you want
  object <text>        the main thing changed or delivered
  surface <text>       where the result is delivered
  include <text>       in scope
  exclude <text>       out of scope
  must <text>          a requirement
  must-not <text>      a prohibition (text or rule)
  allow <rule>         allowed without asking
  ask <rule>           needs your approval first
  forbid <rule>        never allowed
  done-when <text> [(sources: test, file)]  how completion is shown;
      sources: file command test api database real_page release user
  prefer <text>        a soft preference
  tradeoff <text>      an accepted tradeoff
  always <text>        a durable rule for all future tasks
Rules: action:<read|write|delete|network|publish|...>, tool:<name>, command-prefix:<cmd>, or prose.
  show                 this task's claims with short ids
  help                 this list
  new [label]          start a fresh task
  resume               continue the project's latest task
  drop <id>            invalidate a claim
  replace <id> <text>  supersede a claim, same verb
  private              record nothing for this session
  off / on             stop / restart recording this task
One line per claim, at most 500 characters including its field prefix; secrets are redacted."""


class _Record:
    """Equality and repr over __slots__, so tests and receipts can compare and show parse results."""

    __slots__ = ()
    __hash__ = None

    def _fields(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other):
        return type(other) is type(self) and self._fields() == other._fields()

    def __repr__(self):
        pairs = zip(self.__slots__, self._fields())
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
    return results


def _parse_line(body, line):
    verb, rest = _split_verb(body)
    if not verb:
        reason = "no verb after `intent:`; write e.g. `intent: goal <text>`, or `intent: help` for the list"
        return Rejection(line, None, ErrorCode.UNKNOWN_VERB, reason)
    if verb in _CLAIMS:
        return _claim_command(line, verb, rest)
    if verb in MANAGE_VERBS:
        return _manage_command(line, verb, rest)
    return Rejection(line, None, ErrorCode.UNKNOWN_VERB, _unknown_verb_reason(verb))


def _split_verb(body):
    """(lowercased verb, rest of the line); `must not` and `done when` read as their hyphenated verbs."""
    parts = body.split(None, 1)
    if not parts:
        return "", ""
    verb, rest = parts[0].lower(), (parts[1] if len(parts) > 1 else "")
    if verb in _TWO_WORD_VERBS:
        second, joined = _TWO_WORD_VERBS[verb]
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
        if verb == "drop":
            return Command(line, verb, "manage", arg=_drop_target(rest))
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
    label = _trimmed(_redact(text)) if len(text) <= MAX_RAW_CHARS else text  # too long either way
    if len(label) > MAX_LABEL_CHARS or _has_line_break(label):
        reason = f"a task label is one line of at most {MAX_LABEL_CHARS} characters after redaction (got {len(label)})"
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, reason)
    return label


def _drop_target(rest):
    if not rest:
        reason = "`intent: drop` needs a claim id, e.g. `intent: drop 1a2b3c4d` (see `intent: show`)"
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, reason)
    parts = rest.split(None, 1)
    if len(parts) > 1:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "`intent: drop` takes one claim id and nothing else")
    return _id_prefix(parts[0], "drop")


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


def build_claim(verb, text):
    """(facet, scope, statement) for a claim verb and its text, or IntentLoopError with the exact code."""
    claim = _CLAIMS.get(verb.lower()) if isinstance(verb, str) else None
    if claim is None:
        typed = verb if isinstance(verb, str) else ""
        raise IntentLoopError(ErrorCode.UNKNOWN_VERB, _unknown_verb_reason(typed, claim_only=True))
    verb = verb.lower()
    facet, scope, prefix = claim
    body = _claim_body(verb, text)
    if prefix is None:
        _check_not_reserved(verb, body)
    elif verb == "done-when":
        body = _with_normalized_sources(body)
    elif verb in _RULE_VERBS:
        _check_rule(body)
    statement = body if prefix is None else f"{prefix}: {body}"
    if len(statement) > MAX_STATEMENT_CHARS:
        reason = (f"the claim is {len(statement)} characters after redaction, including its field prefix; "
                  f"the limit is {MAX_STATEMENT_CHARS}: split it into shorter claims")
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, reason)
    return facet, scope, statement


def _claim_body(verb, text):
    """The trimmed, redacted, single-line text of a claim (trimmed before and after redaction)."""
    if not isinstance(text, str):
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, "claim text must be a string")
    body = _trimmed(text)
    if len(body) > MAX_RAW_CHARS:
        reason = f"the claim text has {len(body)} characters; the limit is {MAX_STATEMENT_CHARS}"
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, reason)
    if body:
        body = _trimmed(_redact(body))
    if not body:
        reason = f"`intent: {verb}` needs text after the verb: `intent: {verb} <text>`"
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, reason)
    if _has_line_break(body):
        reason = "a claim is one line; put each statement on its own `intent:` line"
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, reason)
    return body


def _trimmed(text):
    from intent_loop.intent.rule_grammar import strip_guard_space  # Guard's whitespace: Python's plus U+FEFF

    return strip_guard_space(text)


def _redact(text):
    from intent_loop.redact import redact  # lazy: only prompts that hold a command pay for it

    return redact(text)


def _has_line_break(text):
    return any(mark in text for mark in _LINE_BREAKS)


def _check_not_reserved(verb, body):
    """Unprefixed text must not look like a field, or the projection would misfile it."""
    head = " ".join(body[:64].lower().split()).replace(" :", ":")
    for prefix in RESERVED_PREFIXES:
        if head.startswith(prefix + ":"):
            reason = (f"`{prefix}:` is a reserved field prefix; use `intent: {_PREFIX_VERBS[prefix]} <text>` "
                      f"or reword the {verb} text")
            raise IntentLoopError(ErrorCode.RESERVED_PREFIX, reason)


def _check_rule(body):
    from intent_loop.intent.rule_grammar import rule_error  # lazy: only rule-bearing verbs need the grammar

    reason = rule_error(body)
    if reason is not None:
        raise IntentLoopError(ErrorCode.RULE_SYNTAX, reason)


def _with_normalized_sources(body):
    requirement, sources, error = _parse_sources_ending(body)
    if error is not None:
        raise IntentLoopError(ErrorCode.INVALID_SOURCE, error)
    if sources is None:
        return body
    if not requirement:
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, "`intent: done-when` needs a requirement before `(sources: ...)`")
    return f"{requirement} (sources: {', '.join(sources)})"


def _parse_sources_ending(text):
    """(requirement, sources or None, error or None) for text that may end with `(sources: a, b)`."""
    open_at = text.rfind("(")
    has_ending = open_at != -1 and text.endswith(")") and _sources_keyword(text[open_at + 1:]) is not None
    search_end = open_at if has_ending else len(text)
    paren = text.find("(")
    while -1 < paren < search_end:
        if _sources_keyword(text[paren + 1:]) is not None:
            return text, None, "`(sources: a, b)` must come last on the line, closed by `)`"
        paren = text.find("(", paren + 1)
    if not has_ending:
        return text, None, None
    inner = text[open_at + 1:-1]
    if _sources_keyword(inner) == "source":
        return text, None, "write `(sources: a, b)` with the plural `sources`"
    sources, error = _parse_source_list(inner[inner.index(":") + 1:])
    return text[:open_at].rstrip(), sources, error


def _sources_keyword(after_paren):
    """"sources" or "source" when the text after `(` starts with that word and a colon, else None."""
    head = after_paren[:40].lstrip().lower()  # a bounded window: a line of 20,000 `(` stays linear
    for word in ("sources", "source"):
        if head.startswith(word) and head[len(word):].lstrip().startswith(":"):
            return word
    return None


def _parse_source_list(listed):
    from intent_loop.intent.rule_grammar import EVIDENCE_SOURCES  # lazy: only a sources ending needs them

    sources = []
    for item in listed.split(","):
        name = item.strip()
        if name not in EVIDENCE_SOURCES:
            shown = f"`{name}` is not" if name and len(name) <= 24 else "an empty or overlong name is not"
            return None, f"{shown} an evidence source; list lowercase names from: {', '.join(EVIDENCE_SOURCES)}"
        if name not in sources:
            sources.append(name)
    return sources, None


def split_prefix(statement):
    """(field prefix name such as "must not", or None; the value without the prefix and one space)."""
    for prefix in RESERVED_PREFIXES:
        if statement.startswith(prefix + ":"):
            value = statement[len(prefix) + 1:]
            return prefix, (value[1:] if value.startswith(" ") else value)
    return None, statement


def split_sources(value):
    """(requirement, sources) of a done-when value; sources is None when it has no valid ending."""
    requirement, sources, error = _parse_sources_ending(value)
    if error is not None or sources is None:
        return value, None
    return requirement, sources


def verb_for_claim(statement, facets, scope):
    """The claim verb whose build_claim produces a claim like this one (its prefix decides first)."""
    prefix, _value = split_prefix(statement)
    if prefix is not None:
        return _PREFIX_VERBS[prefix]
    if scope == "long_term":
        return "always"
    for facet, verb in _UNPREFIXED_FACET_VERBS:
        if facet in facets:
            return verb
    reason = f"no intent: verb records a claim with facets {', '.join(facets) or '(none)'}; drop it and add a new claim"
    raise IntentLoopError(ErrorCode.INVALID_CLAIM, reason)


def _unknown_verb_reason(typed, *, claim_only=False):
    """What to type instead; the typed word is echoed only when it cannot be a secret."""
    shown = f"`{typed}`" if 0 < len(typed) <= 20 and set(typed.replace(" ", "")) <= _ECHO_CHARS else "that word"
    if claim_only and typed.lower() in MANAGE_VERBS:
        return f"{shown} is not a claim verb; claim verbs: {', '.join(CLAIM_VERBS)}"
    suggestion = _closest_verb(typed, CLAIM_VERBS if claim_only else CLAIM_VERBS + MANAGE_VERBS)
    if suggestion is None:
        return f"{shown} is not an intent: verb; `intent: help` lists the verbs"
    colon = " (no colon after the verb)" if typed.endswith(":") else ""
    return f"{shown} is not an intent: verb; did you mean `{suggestion}`{colon}? `intent: help` lists the verbs"


def _closest_verb(typed, verbs):
    """Same letters ignoring `-`, `_`, spaces and colons; else a verb it abbreviates; else a 1-2 edit typo."""
    key = _verb_key(typed[:40])
    if not key or len(key) > 12:  # no verb is within two edits of a longer word; keeps garbage cheap
        return None
    for verb in verbs:
        if _verb_key(verb) == key:
            return verb
    if len(key) >= 3:
        for verb in verbs:
            if _verb_key(verb).startswith(key):
                return verb
    limit = 1 if len(key) <= 4 else 2
    distance, best = min((_edit_distance(key, _verb_key(verb)), index) for index, verb in enumerate(verbs))
    return verbs[best] if distance <= limit else None  # ties go to the earlier verb in table order


def _verb_key(word):
    return "".join(char for char in word.lower() if char not in "-_: ")


def _edit_distance(left, right):
    """Optimal string alignment distance: insertions, deletions, substitutions, adjacent swaps."""
    previous, current = None, list(range(len(right) + 1))
    for i in range(1, len(left) + 1):
        before, previous, current = previous, current, [i] + [0] * len(right)
        for j in range(1, len(right) + 1):
            cost = left[i - 1] != right[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and left[i - 1] == right[j - 2] and left[i - 2] == right[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
    return current[len(right)]

"""The text of a claim from a claim verb: trimmed, redacted, checked by the one statement rule, its
field prefix added; rule-bearing verbs checked against Guard's grammar, `done-when` sources parsed."""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claim_verbs import CLAIM_SPECS, PREFIX_VERBS, RULE_VERBS, unknown_verb_reason
from intent_loop.intent.claims import FIELD_PREFIXES, MAX_STATEMENT, check_statement

# Longer raw text is rejected before redaction: no real secret shrinks 20,000 characters to 500
# (a collapsed 4096-bit PEM key is ~3,300), and a hostile multi-megabyte line stays within the
# hook's deadline.
MAX_RAW_CHARS = 20_000


def build_claim(verb, text):
    """(facet, scope, statement) for a claim verb and its text, or IntentLoopError with the exact code."""
    claim = CLAIM_SPECS.get(verb.lower()) if isinstance(verb, str) else None
    if claim is None:
        typed = verb if isinstance(verb, str) else ""
        raise IntentLoopError(ErrorCode.UNKNOWN_VERB, unknown_verb_reason(typed, claim_only=True))
    verb = verb.lower()
    facet, scope, prefix = claim
    body = _claim_body(verb, text)
    if prefix is None:
        _check_not_reserved(verb, body)
    elif verb == "done-when":
        body = _with_normalized_sources(body)
    elif verb in RULE_VERBS:
        _check_rule(body)
    statement = body if prefix is None else f"{prefix}: {body}"
    check_statement(statement)
    _check_not_a_placeholder(body)
    return facet, scope, statement


def _check_not_a_placeholder(body):
    """A claim that IS one of efg init's placeholder sentences would make the whole projection
    invalid to Guard (it would keep enforcing the previous version): refuse it when typed."""
    from intent_loop.intent.rule_grammar import INIT_PLACEHOLDERS, js_trim

    if js_trim(body) in INIT_PLACEHOLDERS:
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT,
                              "that is Guard's `efg init` placeholder sentence; write the real requirement")


def _claim_body(verb, text):
    """The trimmed, redacted, single-line text of a claim (trimmed before and after redaction)."""
    if not isinstance(text, str):
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, "claim text must be a string")
    body = trimmed(text.replace("\t", " "))  # a TAB typed in a claim is a space (UNSAFE_CHARACTERS)
    if len(body) > MAX_RAW_CHARS:
        reason = f"the claim text has {len(body)} characters; the limit is {MAX_STATEMENT}"
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, reason)
    if body:
        body = trimmed(redacted(body))
    if not body:
        reason = f"`intent: {verb}` needs text after the verb: `intent: {verb} <text>`"
        raise IntentLoopError(ErrorCode.EMPTY_TEXT, reason)
    check_statement(body)  # one line, not too long: the same rule as every other entry path
    return body


def trimmed(text):
    from intent_loop.intent.rule_grammar import strip_guard_space  # Guard's whitespace: Python's plus U+FEFF

    return strip_guard_space(text)


def redacted(text):
    from intent_loop.redaction.redact import redact  # lazy: only prompts that hold a command pay for it

    return redact(text)


def _check_not_reserved(verb, body):
    """Unprefixed text must not look like a field, or the projection would misfile it."""
    head = " ".join(body[:64].lower().split()).replace(" :", ":")
    for prefix in FIELD_PREFIXES:
        if head.startswith(prefix + ":"):
            reason = (f"`{prefix}:` is a reserved field prefix; use `intent: {PREFIX_VERBS[prefix]} <text>` "
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


def split_sources(value):
    """(requirement, sources) of a done-when value; sources is None when it has no valid ending."""
    requirement, sources, error = _parse_sources_ending(value)
    if error is not None or sources is None:
        return value, None
    return requirement, sources

"""Atomic claims: their fields, the legal role/status pairs, confidence and statement limits."""
from intent_loop.errors import ErrorCode, IntentLoopError

ROLES = ("user", "agent", "evidence", "system")
STATUSES = ("explicit", "inferred", "evidence", "unknown", "disputed")
SCOPES = ("task", "project", "long_term")
FACETS = ("outcome", "success_signal", "failure_signal", "hard_constraint", "soft_constraint",
          "tradeoff", "unknown", "result_feedback", "disagreement")
SOURCE_KINDS = ("user_event", "agent_turn", "tool_result", "external_evidence", "explicit_import")
# The only legal (epistemic_status -> role) pairs; explicit also demands a direct user event.
ROLE_FOR_STATUS = {"explicit": "user", "inferred": "agent", "evidence": "evidence",
                   "unknown": "agent", "disputed": "system"}
MAX_STATEMENT = 500
# The field prefixes a stored statement may start with (`must not: ...`): the grammar writes them,
# views show them, the Guard projection files a claim by them. Unprefixed text must not mimic one.
FIELD_PREFIXES = ("object", "surface", "scope include", "scope exclude", "must", "must not",
                  "allow", "ask", "forbid", "done when")
MAX_EXCERPT = 160
MAX_OPAQUE_ID = 200
CLAIM_KEYS = frozenset(("claim_id", "statement", "role", "epistemic_status", "source_ref", "scope",
                        "confidence", "valid_from", "last_confirmed", "supersedes", "facets"))


def _invalid(message):
    return IntentLoopError(ErrorCode.INVALID_CLAIM, message)


# str.splitlines() boundaries: any of them would make a stored statement render as several lines.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def has_line_break(text):
    return any(mark in text for mark in LINE_BREAKS)


# Characters a statement or label may not hold on any entry path (typing, CLI, import, MCP): C0
# controls but TAB (the typing paths turn a TAB into a space), DEL, C1 controls and the bidi
# marks and overrides that reorder what a terminal, the model or a reviewer of the Guard file
# would read. Line breaks are the one-line rule's (INVALID_STATEMENT), checked first.
UNSAFE_CHARACTERS = frozenset([chr(c) for c in range(0x20) if c != 0x09] + ["\x7f"]
                              + [chr(c) for c in range(0x80, 0xA0)]
                              + ["\u061c", "\u200e", "\u200f"] + [chr(c) for c in range(0x202A, 0x202F)]
                              + [chr(c) for c in range(0x2066, 0x206A)] + ["\u2028", "\u2029"])


TAG_BLOCK = range(0xE0000, 0xE0080)  # Unicode TAG characters: invisible letters that can spell an instruction

# The invisible parts of emoji, accepted only where they build one, in terms the standard library
# can check (it has no emoji property): a ZWJ between two symbols (So), each optionally followed by
# VS16 or a skin tone; tags only inside a subdivision flag; VS16 only after a symbol or punctuation
# mark (So, Sm, Po, Pd: ❤️ ↔️ ‼️ 〰️), after ℹ, or in a keycap. Anything looser lets invisible
# characters carry text the model reads and the user does not see.
ZWJ, VS16, KEYCAP = "\u200d", "\ufe0f", "\u20e3"
SKIN_TONES = range(0x1F3FB, 0x1F400)  # the Fitzpatrick modifiers (category Sk)
BLACK_FLAG, CANCEL_TAG = "\U0001f3f4", "\U000e007f"
FLAG_TAGS = frozenset(chr(c) for c in (*range(0xE0030, 0xE003A), *range(0xE0061, 0xE007B)))  # tag 0-9, a-z
MAX_FLAG_TAGS = 6
KEYCAP_BASES = "0123456789#*"
VS16_BASE_CATEGORIES = ("So", "Sm", "Po", "Pd")
INFORMATION_SOURCE = "\u2139"  # ℹ️: the one letter (Ll) with an emoji presentation


def unsafe_characters(text):
    """The characters of `text` that THE text rule refuses, sorted: UNSAFE_CHARACTERS, every
    format character (Unicode category Cf: zero-width spaces and joiners, U+FEFF, the soft hyphen,
    U+2060-2064, ...) and the TAG block, which render as nothing while the model reads them, but
    for the ZWJs, tags and VS16s of an emoji sequence (above); a character refused in one place is
    refused for the whole text."""
    bad = {ch for ch in text if ch in UNSAFE_CHARACTERS}
    if not text.isascii():  # ASCII text, nearly all of it, never loads unicodedata
        import unicodedata

        present = set(text)
        hidden = {ch for ch in present if ord(ch) >= 0xA0 and (ord(ch) in TAG_BLOCK
                                                                 or unicodedata.category(ch) == "Cf")}
        if hidden or VS16 in text:
            hidden = _outside_emoji(text, hidden, unicodedata.category)
        bad.update(hidden)
        selectors = {ch for ch in present if ord(ch) in TEXT_SELECTORS or ord(ch) in IDEOGRAPHIC_SELECTORS}
        if selectors:
            bad.update(_misplaced_selectors(text, selectors, unicodedata.category))
    return sorted(bad)


# The other variation selectors are invisible too, and a run of them after one visible character
# can carry any bytes ("emoji smuggling"). Each chooses a glyph for the one character before it, so
# one may follow a base it can vary: VS1-VS15 a letter of another script (Lo: CJK, Mongolian,
# Myanmar), a math symbol (Sm) or an emoji base (So; VS15 asks for its text glyph), and VS17-VS256 a
# CJK ideograph (an ideographic variation sequence). Never two in a row, never first.
TEXT_SELECTORS = range(0xFE00, 0xFE0F)  # VS1-VS15 (VS16 is the emoji rule's, above)
IDEOGRAPHIC_SELECTORS = range(0xE0100, 0xE01F0)  # VS17-VS256
SELECTOR_BASE_CATEGORIES = ("Lo", "Sm", "So")
CJK_IDEOGRAPHS = (range(0x3400, 0xA000), range(0xF900, 0xFB00), range(0x20000, 0x40000))


def _misplaced_selectors(text, selectors, category):
    """The variation selectors of `text` (VS1-VS15, VS17-VS256) that follow no base they can vary."""
    misplaced = set()
    for selector in selectors:
        ideographic = ord(selector) in IDEOGRAPHIC_SELECTORS
        for base in {text[at - 1] if at else "" for at in _positions(text, selector)}:
            if not base or ord(base) in TEXT_SELECTORS or ord(base) in IDEOGRAPHIC_SELECTORS or base == VS16:
                misplaced.add(selector)
            elif ideographic and not any(ord(base) in block for block in CJK_IDEOGRAPHS):
                misplaced.add(selector)
            elif not ideographic and category(base) not in SELECTOR_BASE_CATEGORIES:
                misplaced.add(selector)
    if VS16 in text and any(text[at - 1:at] and ord(text[at - 1]) in TEXT_SELECTORS
                            for at in _positions(text, VS16)):
        misplaced.add(VS16)  # a VS16 after another selector: a run
    return misplaced


def _positions(text, ch):
    at = text.find(ch)
    while at >= 0:
        yield at
        at = text.find(ch, at + 1)


def _outside_emoji(text, hidden, category):
    """`hidden` (the format and TAG characters of `text`) without the ones every occurrence of
    which builds an emoji, and VS16 when one occurrence does not. Each distinct neighbourhood of a
    ZWJ or VS16 is checked once: emoji repeat, and a line may hold 20,000 characters."""
    tags = {ch for ch in hidden if ord(ch) in TAG_BLOCK}
    refused = hidden - tags - {ZWJ}
    if tags:
        rest = _without_flags(text)
        refused.update(ch for ch in tags if ch in rest)
    if ZWJ in hidden:
        parts = text.split(ZWJ)
        joins = {(before[-2:], after[:1]) for before, after in zip(parts[:-1], parts[1:], strict=True)}
        if not all(_joins_emoji(before, after, category) for before, after in joins):
            refused.add(ZWJ)
    if VS16 in text:
        parts = text.split(VS16)
        bases = {(before[-1:], after[:1]) for before, after in zip(parts[:-1], parts[1:], strict=True)}
        if not all(_presents_emoji(base, after, category) for base, after in bases):
            refused.add(VS16)
    return refused


def _without_flags(text):
    """`text` without the tags of its subdivision flags: U+1F3F4, 1-6 tags of a-z and 0-9, CANCEL TAG."""
    kept, start = [], 0
    at = text.find(BLACK_FLAG)
    while at >= 0:
        end = at + 1
        while end < len(text) and text[end] in FLAG_TAGS:
            end += 1
        if 1 <= end - at - 1 <= MAX_FLAG_TAGS and text[end:end + 1] == CANCEL_TAG:
            kept.append(text[start:at + 1])
            start = end + 1
        at = text.find(BLACK_FLAG, at + 1)
    return "".join(kept) + text[start:]


def _joins_emoji(before, after, category):
    """A ZWJ between `before` (the two characters before it) and `after` (the one after it) joins
    two symbols (So), the first optionally followed by VS16 or a skin tone."""
    if len(before) == 2 and (before[1] == VS16 or ord(before[1]) in SKIN_TONES):
        before = before[0]
    else:
        before = before[-1:]
    return bool(before and after) and category(before) == "So" == category(after)


def _presents_emoji(base, after, category):
    """A VS16 after `base` (and before `after`) follows a symbol or punctuation mark, ℹ, or the base
    of a keycap (then U+20E3)."""
    if not base:
        return False
    if base in KEYCAP_BASES:
        return after == KEYCAP
    return base == INFORMATION_SOURCE or category(base) in VS16_BASE_CATEGORIES


# An agent's proposal is shown whole (verb, scope and every word) in the receipt line before the
# user confirms it, so it is short enough for that line, and holds nothing that could pass for a
# command the user should type (a fake "`intent: confirm <other id>` makes it yours").
MAX_PROPOSAL_CHARS = 240
MAX_LABEL = 80  # a task label: one line of at most this many characters, after redaction where typed


def check_proposal_text(statement):
    """INVALID_STATEMENT or INVALID_TEXT for a proposed statement the user could not read whole, or
    that holds a backtick or `intent:` (the words of a command); every proposal path calls it."""
    if len(statement) > MAX_PROPOSAL_CHARS:
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, (
            f"a proposal is at most {MAX_PROPOSAL_CHARS} characters, so the user reads all of it before confirming "
            f"(got {len(statement)}); propose shorter, atomic statements"))
    if "`" in statement or "intent:" in statement.casefold().replace(" ", ""):
        raise IntentLoopError(ErrorCode.INVALID_TEXT, "a proposal may not hold backticks or `intent:`: the user "
                                                      "confirms only what intent-loop words as a command")


def check_characters(text, what="a claim statement"):
    """INVALID_TEXT when `text` holds a control, bidi or invisible format character (the one text
    rule of every entry path: typing, CLI, import, MCP statements, labels and excerpts)."""
    bad = unsafe_characters(text)
    if bad:
        shown = ", ".join(f"U+{ord(ch):04X}" for ch in bad[:4])
        raise IntentLoopError(ErrorCode.INVALID_TEXT, f"{what} may not hold control, bidi or invisible format "
                                                      f"characters outside an emoji ({shown}); retype it without them")


def _has_lone_surrogate(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_statement(statement):
    """THE statement rule, for every way a claim enters (typed `intent:` lines, `claim add`,
    import): a string that is not blank in Guard's sense, on one line by every line boundary
    `str.splitlines` knows, of at most 500 characters. Statements arrive redacted."""
    from intent_loop.intent.rule_grammar import is_blank  # Guard's whitespace, U+FEFF included

    if not isinstance(statement, str) or is_blank(statement):
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, "a claim statement must not be empty")
    if has_line_break(statement):
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, (
            "a claim is one line (no line or paragraph separators); "
            "put each statement on its own `intent:` line or `claim add`"))
    check_characters(statement)
    if _has_lone_surrogate(statement):
        raise IntentLoopError(ErrorCode.INVALID_TEXT,
                              "this line holds text that is not valid Unicode (a lone surrogate); retype it")
    if len(statement) > MAX_STATEMENT:
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, (
            f"a claim statement is at most {MAX_STATEMENT} characters after redaction, including its field "
            f"prefix (this one has {len(statement)}); split it into shorter claims, one atomic fact each"))


def normalize_confidence(value):
    """A number in [0, 1] with at most two decimals, in its shortest form (0, 1, 0.5, 0.75)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise IntentLoopError(ErrorCode.INVALID_CLAIM, "confidence must be a number between 0 and 1")
    if not 0 <= value <= 1:
        raise IntentLoopError(ErrorCode.INVALID_CLAIM, "confidence must be between 0 and 1")
    hundredths = round(value * 100)
    if abs(value * 100 - hundredths) > 1e-9:
        raise IntentLoopError(ErrorCode.INVALID_CLAIM, "confidence has at most two decimals (e.g. 0.75)")
    if hundredths % 100 == 0:
        return hundredths // 100
    return hundredths / 100


def check_source_ref(source_ref):
    if not isinstance(source_ref, dict) or source_ref.get("kind") not in SOURCE_KINDS:
        raise _invalid(f"source_ref.kind must be one of {', '.join(SOURCE_KINDS)}")
    if set(source_ref) - {"kind", "event_id", "sha256", "excerpt"}:
        raise _invalid("source_ref has only kind, event_id, sha256 and excerpt")
    event_id, digest = source_ref.get("event_id"), source_ref.get("sha256")
    if event_id is None and digest is None:
        raise _invalid("source_ref needs an event_id or a sha256")
    if event_id is not None and not is_opaque_id(event_id):
        raise _invalid("source_ref.event_id must be an opaque id of 1-200 printable characters")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64
                                   and all(c in "0123456789abcdef" for c in digest)):
        raise _invalid("source_ref.sha256 must be 64 lowercase hex digits")
    excerpt = source_ref.get("excerpt")
    if excerpt is not None and (not isinstance(excerpt, str) or len(excerpt) > MAX_EXCERPT):
        raise _invalid(f"source_ref.excerpt is at most {MAX_EXCERPT} characters")


def is_opaque_id(value):
    return (isinstance(value, str) and 1 <= len(value) <= MAX_OPAQUE_ID
            and value.isprintable() and not any(c.isspace() for c in value))


def check_claim(claim):
    """Validate a complete claim dict against the schema-1 table; raises INVALID_* codes."""
    if not isinstance(claim, dict) or set(claim) - CLAIM_KEYS or not {"claim_id", "statement", "role",
                                                                      "epistemic_status", "source_ref",
                                                                      "scope", "facets"} <= set(claim):
        raise _invalid("a claim has exactly the schema-1 fields")
    check_statement(claim["statement"])
    status, role = claim["epistemic_status"], claim["role"]
    if status not in STATUSES or role not in ROLES:
        raise _invalid(f"unknown role {role!r} or epistemic_status {status!r}")
    if ROLE_FOR_STATUS[status] != role:
        raise _invalid(f"epistemic_status {status} goes with role {ROLE_FOR_STATUS[status]}, not {role}")
    check_source_ref(claim["source_ref"])
    if status == "explicit" and claim["source_ref"]["kind"] != "user_event":
        raise _invalid("an explicit claim needs a direct user event as its source")
    if status == "inferred":
        if "confidence" not in claim:
            raise _invalid("an inferred claim needs a confidence between 0 and 1")
        if normalize_confidence(claim["confidence"]) != claim["confidence"]:
            raise _invalid("confidence must be written in its shortest form (0, 1, 0.5, 0.75)")
    elif claim.get("confidence") is not None:
        raise _invalid("only inferred claims carry a confidence")
    if claim["scope"] not in SCOPES:
        raise _invalid(f"scope must be one of {', '.join(SCOPES)}")
    facets = claim["facets"]
    if not isinstance(facets, list) or not facets or any(f not in FACETS for f in facets) \
            or len(set(facets)) != len(facets):
        raise _invalid(f"facets: one or more distinct values of {', '.join(FACETS)}")
    if not isinstance(claim.get("supersedes", []), list):
        raise _invalid("supersedes is a list of claim ids")


def new_claim(*, claim_id, statement, facets, scope, source_ref, valid_from, role="user",
              epistemic_status="explicit", confidence=None, supersedes=()):
    """Build and validate a claim dict (confidence normalized to its shortest form)."""
    claim = {
        "claim_id": claim_id,
        "statement": statement,
        "role": role,
        "epistemic_status": epistemic_status,
        "source_ref": source_ref,
        "scope": scope,
        "valid_from": valid_from,
        "last_confirmed": None,
        "supersedes": list(supersedes),
        "facets": list(facets),
    }
    if confidence is not None:
        claim["confidence"] = normalize_confidence(confidence)
    check_claim(claim)
    return claim


def is_direct_user_explicit(claim):
    return (claim["role"] == "user" and claim["epistemic_status"] == "explicit"
            and claim["source_ref"]["kind"] == "user_event")


def short_id(claim_id):
    return claim_id[:8]


def split_prefix(statement):
    """(field prefix name such as "must not", or None; the value without the prefix and one space)."""
    for prefix in FIELD_PREFIXES:
        if statement.startswith(prefix + ":"):
            value = statement[len(prefix) + 1:]
            return prefix, (value[1:] if value.startswith(" ") else value)
    return None, statement

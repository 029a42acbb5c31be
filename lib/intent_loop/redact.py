"""Credential redaction: replace every recognized secret with a typed marker before text is hashed or stored."""

# `re` is imported lazily, on the first text the pre-filter cannot clear: `import re` costs about
# one whole interpreter start and this runs inside a hook on every prompt (startup-performance.md).

# The order the patterns apply in; where two kinds could match the same characters the earlier wins.
KINDS = (
    "private_key", "url_credentials", "anthropic_key", "openai_key", "github_token", "aws_access_key",
    "google_api_key", "slack_token", "stripe_key", "npm_token", "huggingface_token", "jwt",
    "bearer_token", "assignment", "high_entropy",
)

# (kind, literal prefixes, pattern). Every match starts with one of its prefixes and holds at least
# 16 consecutive token characters: the pre-filter relies on both.
_PREFIXED_FAMILIES = (
    ("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{20,}+"),
    ("openai_key", ("sk-",), r"sk-(?=[A-Za-z0-9_-]*?[0-9])[A-Za-z0-9_-]{20,}+"),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+"),
    ("aws_access_key", ("AKIA", "ASIA"), r"A[KS]IA[A-Z0-9]{16}"),
    ("google_api_key", ("AIza",), r"AIza[A-Za-z0-9_-]{35}"),
    ("slack_token", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-"), r"(?:xox[abprs]|xapp)-[A-Za-z0-9-]{12,}+"),
    ("stripe_key", ("sk_", "rk_", "pk_"), r"[srp]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
    ("npm_token", ("npm_",), r"npm_[A-Za-z0-9]{36,}+"),
    ("huggingface_token", ("hf_",), r"hf_[A-Za-z0-9]{30,}+"),
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_-]{13,}+\.[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]*+"),
)
_PREFIXES = tuple(prefix for _kind, prefixes, _pattern in _PREFIXED_FAMILIES for prefix in prefixes)

# An assignment's key must END with one of these, in any case: `DB_PASSWORD`, `apiKey`, `x-auth`.
_ASSIGNMENT_KEYWORDS = (
    "password", "passwd", "passphrase", "secret", "token", "auth", "authorization", "credential",
    "credentials", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
    "privatekey", "private_key", "private-key", "secretkey", "secret_key", "secret-key",
)
_TRIGGERS = ("-----begin", "://", "bearer") + _ASSIGNMENT_KEYWORDS
_LONGEST_KEY_AND_SEPARATOR = max(map(len, _ASSIGNMENT_KEYWORDS)) + len(":=")

# A leading one-character lookahead lets the regex engine skip ahead by first character, which an
# alternation otherwise prevents (measured 3-10x faster on 3 MB).
_PEM_PATTERN = (r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----|\Z)")  # lazy: one scan per BEGIN
# The authority stops before a `:` that starts another `://`, which belongs to the next URL.
_URL_AUTHORITY_PATTERN = r"://(?<=[A-Za-z0-9]://)(?:[^\s/?#\[\]:]|:(?!//))++"
_BEARER_PATTERN = r"(?=[BbAa])\b(?i:bearer|authorization:[ \t]*+basic)[ \t]++(?P<token>[A-Za-z0-9._~+/-]{16,}+=*+)"
# Matched against ASCII-lowercased text, so the keyword alternation needs no (slow) IGNORECASE.
_ASSIGNMENT_TAIL = (r"(?:[\"']?[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+)"
                    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*+)\"|'(?P<sq>(?:[^'\\\n]|\\.)*+)'"
                    r"|(?P<bare>[^\s\"'`,;&()\[\]{}<>]++))")
# A possessive run is always tried first at its own start, so no lookbehind is needed; `=` only
# as trailing padding, so `name=value` is judged as `value` alone.
_HIGH_ENTROPY_PATTERN = r"[A-Za-z0-9+/_-]{24,}+=*+"
# What ids, paths and identifiers are made of: words, hex or UPPER pieces, digit runs, separators.
# A token >= 60% covered by these is structure, not randomness; random 24-character tokens reach
# that 0.2% of the time, Codex transcript paths and `Header2/index`-style names almost always.
_STRUCTURE_PATTERN = (r"[A-Z]?[a-z]{4,}|(?<![A-Za-z0-9])(?:[0-9a-f]{4,}|[0-9A-F]{4,}|[A-Z]{3,})(?![A-Za-z0-9])"
                      r"|[0-9]{3,}|[/_+=-]")
_STRUCTURED_SHARE = 0.6

_UPPER_CHARS, _LOWER_CHARS, _DIGIT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789"
_TOKEN_CHARS = _UPPER_CHARS + _LOWER_CHARS + _DIGIT_CHARS + "+/=_-"
# Every other ASCII character separates runs; non-ASCII characters stay and only lengthen runs.
_RUN_SEPARATORS = {code: " " for code in range(128) if chr(code) not in _TOKEN_CHARS}
_PREFIXED_MIN_RUN = 16
_HIGH_ENTROPY_MIN_RUN = 24
_MIN_ENTROPY_BITS = 3.5
_UPPER, _LOWER, _DIGITS = frozenset(_UPPER_CHARS), frozenset(_LOWER_CHARS), frozenset(_DIGIT_CHARS)
_DIGITS_AND_SYMBOLS = _DIGITS | frozenset("!@#%^&*+=~?")
_HEX_AND_DASH = _DIGIT_CHARS + "abcdefABCDEF-"
_DIGEST_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-")  # Subresource Integrity
_PLACEHOLDER_WORDS = frozenset(("none", "null", "nil", "true", "false", "undefined"))

_passes = None


def redact(text):
    """`text` with every recognized secret replaced by `[REDACTED:<kind>]`; idempotent."""
    if not _may_contain_secret(text):
        return text
    return _apply_patterns(text)


def has_secret(text):
    """True when `redact` would change `text` (used to reject ids that hold a credential)."""
    return redact(text) != text


def _marker(kind):
    return f"[REDACTED:{kind}]"


def _may_contain_secret(text):
    """Cheap and conservative: False only when no pattern can match (checked by a property test)."""
    folded = _fold_case(text)
    if any(trigger in folded for trigger in _TRIGGERS):
        return True
    for run in text.translate(_RUN_SEPARATORS).split():
        if len(run) < _PREFIXED_MIN_RUN:
            continue
        if any(prefix in run for prefix in _PREFIXES):
            return True
        if len(run) >= _HIGH_ENTROPY_MIN_RUN and not (run.islower() or run.isupper() or run.isalpha()):
            return True
    return False


def _fold_case(text):
    """text.lower() with every offset kept: U+0130 is the one character that lowers to two."""
    return text.replace("\u0130", "I").lower()


def _apply_patterns(text):
    global _passes
    if _passes is None:
        _passes = _compile_passes()
    for redact_pass in _passes:
        text = redact_pass(text)
    return text


def _compile_passes():
    """One text -> text function per pass, in KINDS order."""
    import re  # deferred: see the note at the top of the module
    from functools import partial

    flags = re.ASCII  # ASCII classes and case folding keep the str.lower() pre-filter exact
    structure = re.compile(_STRUCTURE_PATTERN, flags)
    prefixed = "|".join(f"(?P<{kind}>{pattern})" for kind, _prefixes, pattern in _PREFIXED_FAMILIES)
    keywords = "|".join(re.escape(word) for word in sorted(_ASSIGNMENT_KEYWORDS, key=len, reverse=True))
    # Only at the start of a run of body characters: one attempt per run keeps failing matches linear.
    prefixed_pattern = rf"(?={_first_chars(_PREFIXES)})(?<![A-Za-z0-9_-])(?:{prefixed})(?![A-Za-z0-9_-])"
    assignment_pattern = rf"(?={_first_chars(_ASSIGNMENT_KEYWORDS)})(?:{keywords}){_ASSIGNMENT_TAIL}"
    return (
        partial(re.compile(_PEM_PATTERN, flags).sub, _marker("private_key")),
        partial(re.compile(_URL_AUTHORITY_PATTERN, flags).sub, _redact_url_userinfo),
        partial(re.compile(prefixed_pattern, flags).sub, _redact_prefixed),
        partial(re.compile(_BEARER_PATTERN, flags).sub, partial(_redact_bearer, structure=structure)),
        partial(_redact_assignments, pattern=re.compile(assignment_pattern, flags)),
        partial(re.compile(_HIGH_ENTROPY_PATTERN, flags).sub, partial(_redact_high_entropy, structure=structure)),
    )


def _first_chars(words):
    return "[" + "".join(sorted({word[0] for word in words})) + "]"


def _redact_url_userinfo(match):
    authority = match.group()[len("://"):]
    userinfo, at, host = authority.rpartition("@")
    _user, colon, password = userinfo.partition(":")
    if not (at and colon and password):
        return match.group()
    return f"://{_marker('url_credentials')}@{host}"


def _redact_prefixed(match):
    return _marker(match.lastgroup)


def _redact_bearer(match, *, structure):
    token = match.group("token")
    if _DIGITS.isdisjoint(token) and _is_structured(token, structure):
        return match.group()  # prose: "Bearer AuthenticationScheme"
    return match.group()[: match.start("token") - match.start()] + _marker("bearer_token")


def _redact_assignments(text, *, pattern):
    """Keys match case-insensitively: the pattern runs on a lowercased copy with the same offsets."""
    folded = _fold_case(text)
    pieces, done, position = [], 0, 0
    while (match := pattern.search(folded, position)) is not None:
        value_start, value_end = match.span(match.lastgroup)
        if _is_secret_value(text, match, value_start, value_end):
            pieces += (text[done:value_start], _marker("assignment"))
            done = position = value_end
        else:
            position = _resume_after_declined_value(match, value_start, value_end)
    return "".join(pieces) + text[done:] if pieces else text


def _resume_after_declined_value(match, value_start, value_end):
    """Where to search next, so a declined value never hides an assignment that starts inside it.

    Were one hidden, a later pass that rewrote the outer key would expose it on the next call and
    break idempotence (`xQ7..Credential =token: s3cret`). A declined unquoted value can only hide
    one whose key and separator end the value (spaces end it), so rescanning its tail keeps the
    scan linear; a declined quoted value is a short placeholder and is rescanned whole.
    """
    if match.lastgroup != "bare":
        return value_start
    return max(value_start, value_end - _LONGEST_KEY_AND_SEPARATOR)


def _is_secret_value(text, match, value_start, value_end):
    value = text[value_start:value_end]
    if match.lastgroup == "bare" and not _is_unquoted_secret(text, match, value):
        return False
    return not _is_placeholder(value)


def _is_unquoted_secret(text, match, value):
    """A digit or symbol is needed (`token: str` is a type), except env style: `API_KEY=value`."""
    value_start, value_end = match.span("bare")
    if text[value_end:value_end + 1] in ("(", "["):
        return False  # a call or a subscript: code, not a literal
    if len(value) >= 4 and not _DIGITS_AND_SYMBOLS.isdisjoint(value):
        return True
    key_and_separator = text[match.start():value_start]
    key = key_and_separator[:-1].replace("-", "_")
    return key_and_separator.endswith("=") and key.isupper() and key.isidentifier()


def _is_placeholder(value):
    """Shorter than 3, `<...>`, `{...}`, `${VAR}`/`$VAR`/`$(cmd)`, None/null/true/false, masks, markers."""
    if "[REDACTED:" in value:
        for kind in KINDS:
            value = value.replace(_marker(kind), "")
    value = value.strip()
    if len(value) < 3 or value.lower() in _PLACEHOLDER_WORDS:
        return True
    if (value[0], value[-1]) in (("<", ">"), ("{", "}")) or value.startswith(("${", "$(")):
        return True
    if value[0] == "$" and value[1:].replace("_", "a").isalnum():
        return True
    return not value.strip("*xX.")


def _redact_high_entropy(match, *, structure):
    token = match.group()
    if _UPPER.isdisjoint(token) or _LOWER.isdisjoint(token) or _DIGITS.isdisjoint(token):
        return token
    if not token.strip(_HEX_AND_DASH) or token.startswith(_DIGEST_PREFIXES):
        return token  # hex digests, UUIDs and integrity hashes are ids, not secrets
    if _shannon_entropy(token) < _MIN_ENTROPY_BITS or _is_structured(token, structure):
        return token
    return _marker("high_entropy")


def _is_structured(token, structure):
    return sum(map(len, structure.findall(token))) >= _STRUCTURED_SHARE * len(token)


def _shannon_entropy(text):
    from math import log2  # deferred with `re`: only texts that reach the patterns need it

    length = len(text)
    return -sum(count / length * log2(count / length) for count in map(text.count, set(text)))

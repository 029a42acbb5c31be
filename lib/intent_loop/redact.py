"""Credential redaction: replace every recognized secret with a typed marker before text is hashed or stored."""

# `re` is imported lazily, on the first text the pre-filter cannot clear: `import re` costs about
# one whole interpreter start and this runs inside a hook on every prompt (startup-performance.md).

# Application order; an earlier kind wins where two would match the same characters.
KINDS = (
    "private_key", "url_credentials", "anthropic_key", "openai_key", "github_token", "aws_access_key",
    "google_api_key", "slack_token", "stripe_key", "npm_token", "huggingface_token", "jwt",
    "bearer_token", "assignment", "high_entropy",
)

# (kind, literal prefixes, pattern). Each pattern needs >= 16 consecutive token characters and
# starts with one of its prefixes: the pre-filter relies on both.
_PREFIXED_FAMILIES = (
    ("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{20,}+"),
    ("openai_key", ("sk-",), r"sk-(?=[A-Za-z0-9_-]*?[0-9])[A-Za-z0-9_-]{20,}+"),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+"),
    ("aws_access_key", ("AKIA", "ASIA"), r"A[KS]IA[A-Z0-9]{16}"),
    ("google_api_key", ("AIza",), r"AIza[A-Za-z0-9_-]{35}"),
    ("slack_token", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-"),
     r"(?:xox[abprs]|xapp)-[A-Za-z0-9-]{12,}+"),
    ("stripe_key", ("sk_", "rk_", "pk_"), r"[srp]k_(?:live|test)_[A-Za-z0-9]{16,}+"),
    ("npm_token", ("npm_",), r"npm_[A-Za-z0-9]{36,}+"),
    ("huggingface_token", ("hf_",), r"hf_[A-Za-z0-9]{30,}+"),
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_-]{13,}+\.[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]*+"),
)
_PREFIXES = tuple(prefix for _kind, prefixes, _pattern in _PREFIXED_FAMILIES for prefix in prefixes)

# An assignment's key must END with one of these (case-insensitive): `DB_PASSWORD`, `apiKey`.
_ASSIGNMENT_KEYWORDS = (
    "password", "passwd", "passphrase", "secret", "token", "auth", "authorization", "credential",
    "credentials", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
    "privatekey", "private_key", "private-key", "secretkey", "secret_key", "secret-key",
)
_TRIGGERS = ("-----begin", "://", "bearer") + _ASSIGNMENT_KEYWORDS

_TOKEN_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-"
# Every other ASCII character becomes a separator; non-ASCII characters stay and only lengthen runs.
_RUN_SEPARATORS = {code: " " for code in range(128) if chr(code) not in _TOKEN_CHARS}
_PREFIXED_MIN_RUN = 16
_HIGH_ENTROPY_MIN_RUN = 24
_MIN_ENTROPY_BITS = 3.5
_PLACEHOLDER_WORDS = frozenset(("none", "null", "nil", "true", "false", "undefined"))
_DIGITS = frozenset("0123456789")
_DIGITS_AND_SYMBOLS = _DIGITS | frozenset("!@#%^&*+=~?")

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
    lowered = text.lower()
    if any(trigger in lowered for trigger in _TRIGGERS):
        return True
    for run in text.translate(_RUN_SEPARATORS).split():
        if len(run) < _PREFIXED_MIN_RUN:
            continue
        if any(prefix in run for prefix in _PREFIXES):
            return True
        if len(run) >= _HIGH_ENTROPY_MIN_RUN and not (run.islower() or run.isupper() or run.isalpha()):
            return True
    return False


def _apply_patterns(text):
    global _passes
    if _passes is None:
        _passes = _compile_passes()
    for pattern, replacement in _passes:
        text = pattern.sub(replacement, text)
    return text


def _compile_passes():
    import re  # deferred: see the note at the top of the module
    from functools import partial

    prefixed = "|".join(f"(?P<{kind}>{pattern})" for kind, _prefixes, pattern in _PREFIXED_FAMILIES)
    keywords = "|".join(re.escape(word) for word in sorted(_ASSIGNMENT_KEYWORDS, key=len, reverse=True))
    body = "[A-Za-z0-9+/_-]"
    flags = re.ASCII  # ASCII-only classes and case folding keep the str.lower() pre-filter exact
    # A leading one-character lookahead lets the regex engine skip ahead by first character,
    # which an alternation (especially a case-insensitive one) otherwise prevents: ~10x faster.
    prefixed_starts = _first_chars(prefix for _kind, prefixes, _pattern in _PREFIXED_FAMILIES for prefix in prefixes)
    keyword_starts = _first_chars(_ASSIGNMENT_KEYWORDS, any_case=True)
    return (
        # Lazy body with END-or-end-of-text: one linear scan per BEGIN line, never a backtrack.
        (re.compile(r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                    r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----|\Z)", flags),
         _marker("private_key")),
        (re.compile(r"://(?<=[A-Za-z0-9]://)[^\s/?#\[\]]++", flags), _redact_url_userinfo),
        (re.compile(rf"(?={prefixed_starts})(?<![A-Za-z0-9_-])(?:{prefixed})(?![A-Za-z0-9_-])", flags), _redact_prefixed),
        (re.compile(r"(?=[BbAa])\b(?i:bearer|authorization:[ \t]*basic)[ \t]+(?P<token>[A-Za-z0-9._~+/-]{16,}+=*+)",
                    flags), _redact_bearer),
        (re.compile(rf"(?={keyword_starts})(?i:{keywords})(?:[\"']?[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+(?i:is)[ \t]+)"
                    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.)*+)\"|'(?P<sq>(?:[^'\\\n]|\\.)*+)'"
                    r"|(?P<bare>[^\s\"'`,;&()\[\]{}<>]++))", flags), _redact_assignment),
        # `=` only as trailing padding, so `name=value` is judged as `value` alone.
        (re.compile(rf"(?<!{body})(?={body}*?[A-Z])(?={body}*?[a-z])(?={body}*?[0-9]){body}{{24,}}+=*+", flags),
         partial(_redact_high_entropy, word_run=re.compile("[A-Z]?[a-z]{4,}", flags))),
    )


def _first_chars(words, *, any_case=False):
    """A character class of the words' first characters (both cases when `any_case`)."""
    firsts = {word[0] for word in words}
    if any_case:
        firsts |= {char.upper() for char in firsts} | {char.lower() for char in firsts}
    return "[" + "".join(sorted(firsts)) + "]"


def _redact_url_userinfo(match):
    authority = match.group()[len("://"):]
    userinfo, at, host = authority.rpartition("@")
    user, colon, password = userinfo.partition(":")
    if not (at and colon and password):
        return match.group()
    return f"://{_marker('url_credentials')}@{host}"


def _redact_prefixed(match):
    return _marker(match.lastgroup)


def _redact_bearer(match):
    token = match.group("token")
    looks_random = not _DIGITS.isdisjoint(token) or (len(token) >= 20 and not token.islower() and not token.isupper())
    if not looks_random:
        return match.group()  # `Bearer AuthenticationScheme` in prose
    return match.group()[: match.start("token") - match.start()] + _marker("bearer_token")


def _redact_assignment(match):
    group = match.lastgroup
    value = match.group(group)
    if _is_placeholder(value) or (group == "bare" and not _looks_like_bare_secret(match, value)):
        return match.group()
    offset = match.start()
    whole = match.group()
    return whole[: match.start(group) - offset] + _marker("assignment") + whole[match.end(group) - offset:]


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


def _looks_like_bare_secret(match, value):
    """Unquoted values need a digit or symbol (`token: str` is a type), unless env-style `API_KEY=value`."""
    if match.string[match.end():match.end() + 1] in ("(", "["):
        return False  # a call or subscript: code, not a literal value
    head = match.group()[: match.start("bare") - match.start()]
    key = head[:-1].replace("-", "_")
    if head.endswith("=") and key.isupper() and key.isidentifier():
        return True
    return len(value) >= 4 and not _DIGITS_AND_SYMBOLS.isdisjoint(value)


def _redact_high_entropy(match, *, word_run):
    token = match.group()
    if not token.strip("0123456789abcdefABCDEF-") or token.startswith(("sha1-", "sha256-", "sha384-", "sha512-")):
        return token  # hex digests, UUIDs and Subresource-Integrity hashes are ids, not secrets
    if _shannon_entropy(token) < _MIN_ENTROPY_BITS:
        return token
    # Identifiers and paths are mostly words (`Header2/index`); a random token rarely is.
    if 2 * sum(map(len, word_run.findall(token))) >= len(token):
        return token
    return _marker("high_entropy")


def _shannon_entropy(text):
    from math import log2  # deferred with `re`: only texts that reach the patterns need it

    length = len(text)
    return -sum(count / length * log2(count / length) for count in map(text.count, set(text)))

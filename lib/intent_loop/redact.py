"""Credential redaction: replace every recognized secret with a typed marker before text is hashed or stored."""

# `re` is imported lazily, on the first text the pre-filter cannot clear: `import re` costs about
# one whole interpreter start and this runs inside a hook on every prompt (startup-performance.md).

# The rules' version. A new rule changes the redacted text of a prompt it matches, and with it the
# hash that prompt request ids are made of: `redact(text, version=VERSION - 1)` reproduces the
# previous rules, so a retry that spans an upgrade finds the id it was first recorded under
# (hook.handlers, docs/upgrading.md). Rules marked `since` below are absent from earlier versions.
VERSION = 3

# The order the patterns apply in; where two kinds could match the same characters the earlier wins.
KINDS = (
    "private_key", "url_credentials", "anthropic_key", "openai_key", "github_token", "aws_access_key",
    "google_api_key", "slack_token", "stripe_key", "npm_token", "huggingface_token", "shopify_token",
    "digitalocean_token", "age_secret_key", "sendgrid_key", "jwt", "bearer_token", "command_password",
    "assignment", "high_entropy", "basic_credentials",
)

# (kind, literal prefixes, pattern, since). Every match starts with one of its prefixes and holds at
# least 16 consecutive token characters (SendGrid's `SG.`, split by its dots, has its own trigger):
# the pre-filter relies on both.
_PREFIXED_FAMILIES = (
    ("anthropic_key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_-]{20,}+", 1),
    ("openai_key", ("sk-",), r"sk-(?=[A-Za-z0-9_-]*?[0-9])[A-Za-z0-9_-]{20,}+", 1),
    ("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{22,}+", 1),
    ("aws_access_key", ("AKIA", "ASIA"), r"A[KS]IA[A-Z0-9]{16}", 1),
    ("google_api_key", ("AIza",), r"AIza[A-Za-z0-9_-]{35}", 1),
    ("slack_token", ("xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-", "xapp-"),
     r"(?:xox[abprs]|xapp)-[A-Za-z0-9-]{12,}+", 1),
    ("stripe_key", ("sk_", "rk_", "pk_"), r"[srp]k_(?:live|test)_[A-Za-z0-9]{16,}+", 1),
    ("npm_token", ("npm_",), r"npm_[A-Za-z0-9]{36,}+", 1),
    ("huggingface_token", ("hf_",), r"hf_[A-Za-z0-9]{30,}+", 1),
    ("shopify_token", ("shpat_", "shpca_", "shppa_", "shpss_"), r"shp(?:at|ca|pa|ss)_[A-Fa-f0-9]{32}", 2),
    ("digitalocean_token", ("dop_v1_", "doo_v1_", "dor_v1_"), r"do[opr]_v1_[a-f0-9]{64}", 2),
    # age's Bech32 alphabet; the whole key, its HRP included, is the secret
    ("age_secret_key", ("AGE-SECRET-KEY-1",), r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", 2),
    # `SG.<22-character id>.<43-character secret>`: the id goes too, it names the key
    ("sendgrid_key", ("SG.",), r"SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", 2),
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_-]{13,}+\.[A-Za-z0-9_-]{10,}+\.[A-Za-z0-9_-]*+", 1),
)
_PREFIXES = tuple(prefix for _kind, prefixes, _pattern, _since in _PREFIXED_FAMILIES for prefix in prefixes)

# An assignment's key must END with one of these, in any case: `DB_PASSWORD`, `apiKey`, `x-auth`.
_ASSIGNMENT_KEYWORDS = (
    "password", "passwd", "passphrase", "secret", "token", "auth", "authorization", "credential",
    "credentials", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
    "privatekey", "private_key", "private-key", "secretkey", "secret_key", "secret-key",
)
# since 2: a GCP service account's `private_key_id` (40 hex, which the high-entropy rule keeps as a
# digest), and any other key ending in `key` (`DD_APP_KEY`, `heroku api key`), whose value must
# look like a generated key (see _is_generated_key): `key = name` is everyday code.
_KEYWORDS_V2 = ("private_key_id", "privatekeyid", "private-key-id", "key")
_GENERIC_KEYWORD = "key"
# since 3: after a key name ending in `key` and spaces alone (`datadog api key 0a1b…`, `heroku api key
# <uuid>`), only a hex key of 32 or more or a UUID (holding a letter and a digit, _is_generated_key),
# unless the word before `key` names a key that is no secret (`primary key <uuid>`, `cache_key <sha>`).
_SPACED_KEY = (r"(?P<spaced>(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32,}+)"
               r"(?![A-Za-z0-9+/=_-]))")
_HEX_FIRST = frozenset("0123456789abcdef")
_NON_SECRET_KEY_WORDS = ("primary", "foreign", "unique", "composite", "compound", "candidate", "surrogate", "natural",
                         "partition", "sort", "shard", "routing", "index", "lookup", "hash", "cache", "dict", "object",
                         "public", "gpg", "pgp", "recv", "idempotency", "dedup", "dedupe", "deduplication",
                         "correlation")
_TRIGGERS = ("-----begin", "://", "bearer") + _ASSIGNMENT_KEYWORDS + ("basic", "mysql", "mariadb", "sshpass", "--pass")
_LONGEST_KEY_AND_SEPARATOR = max(map(len, _ASSIGNMENT_KEYWORDS + _KEYWORDS_V2)) + len(":=")

# A leading one-character lookahead lets the regex engine skip ahead by first character, which an
# alternation otherwise prevents (measured 3-10x faster on 3 MB).
_PEM_PATTERN = (r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----|\Z)")  # lazy: one scan per BEGIN
# The authority stops before a `:` that starts another `://`, which belongs to the next URL.
_URL_AUTHORITY_PATTERN = r"://(?<=[A-Za-z0-9]://)(?:[^\s/?#\[\]:]|:(?!//))++"
_BEARER_PATTERN = r"(?=[BbAa])\b(?i:bearer|authorization:[ \t]*+basic)[ \t]++(?P<token>[A-Za-z0-9._~+/-]{16,}+=*+)"
# since 2: base64 of `user:password`, however short (`Basic dXNlcjpwYXNz`), after `Basic` or alone.
# Each 4-character group starts with what encodes a printable byte's top six bits (I-Z a-f), which
# keeps ordinary words from reaching the decoder.
_BASE64_GROUPS = r"(?:[I-Za-f][A-Za-z0-9+/]{3})*+(?:[I-Za-f][A-Za-z0-9+/](?:[A-Za-z0-9+/]=|==))?+"
_BASE64_RUN_PATTERN = rf"(?<![A-Za-z0-9+/=_-])(?=[I-Za-f]){_BASE64_GROUPS}(?![A-Za-z0-9+/=_-])"
# since 2: a command line from its first command word to the end of the line or of the shell
# command, taken possessively so that each line starts one scan (_redact_command_line splits it at
# every command word and reads each one's options), or a long password option anywhere, which takes
# its value after a space (`--password=` is an assignment).
_VALUE = r"'[^'\n]*+'?|\"[^\"\n]*+\"?|[^\s'\"]++"
_LONG_PASSWORD_OPTION = r"--pass(?:word|wd)?+[ \t]++(?!-)"
_COMMAND_WORD = (r"(?<![A-Za-z0-9_.-])(?:mysql(?:dump|admin|import|sh|check)?+|mariadb(?:-dump|-admin)?+|sshpass|curl)"
                 r"(?![A-Za-z0-9_.-])")
_COMMAND_PATTERN = (rf"(?=[msc-])(?:(?P<command>{_COMMAND_WORD})[^\n|;&]*+"
                    rf"|(?<![A-Za-z0-9_.-])(?P<option>{_LONG_PASSWORD_OPTION})(?P<value>{_VALUE}))")
# Matched against ASCII-lowercased text, so the keyword alternation needs no (slow) IGNORECASE.
_SEPARATOR = r"(?:[\"']?[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+)"
# since 3: the key's closing quote may be escaped, as in JSON inside a JSON string (`{\"password\": …}`).
_SEPARATOR_V3 = r"(?:(?:\\?[\"'])?[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+)"
_QUOTED = r"\"(?P<dq>(?:[^\"\\\n]|\\.)*+)\"|'(?P<sq>(?:[^'\\\n]|\\.)*+)'"
# since 3: a value between escaped quotes (`\"hunter2\"`), read as the inner string: an outer escape
# (`\n`, `\/`), or an inner one (`\\` and the escaped character: `\\\"` is a quote inside the value).
# Every character picks one branch, so the possessive body is one scan, and `\"` always ends it.
_ESCAPED_BODY = r"(?:[^{q}\\\n]|\\[^{q}\\\n]|\\\\(?:[^{q}\\\n]|\\[^\n]))*+"
_ESCAPED_QUOTED = (r"\\\"(?P<edq>" + _ESCAPED_BODY.format(q='"') + r")\\\""
                   r"|\\'(?P<esq>" + _ESCAPED_BODY.format(q="'") + r")\\'")
_BARE_V1 = r"(?P<bare>[^\s\"'`,;&()\[\]{}<>]++)"
# since 2: `&`, `,` and `;` inside a value belong to it (`tr0ub4dor&3`) unless a space, a quote, the
# end or another `name=` / `name:` follows (`?token=a1&page=2`, `token=a1;Path=/`).
# since 2: the value after a generic `key`. Unquoted, only what a generated key is made of, `=` only
# as final padding: holding no `:` or `=`, it hides no other assignment (_resume_after_declined_value).
_GENERIC_QUOTED = _QUOTED.replace("?P<dq>", "?P<gdq>").replace("?P<sq>", "?P<gsq>")
_GENERIC_ESCAPED_QUOTED = _ESCAPED_QUOTED.replace("?P<edq>", "?P<gedq>").replace("?P<esq>", "?P<gesq>")
_GENERIC_BARE = r"(?P<gen>[A-Za-z0-9+_-]++(?:=++(?![A-Za-z0-9+_-]))?+)"
_GENERIC_GROUPS = ("gdq", "gsq", "gen", "gedq", "gesq", "spaced")
_BARE_V2 = (r"(?P<bare>(?:[^\s\"'`,;&()\[\]{}<>]|[&,;](?![\s\"'`]|\Z|[A-Za-z_][A-Za-z0-9_.-]*+[=:]))++)")
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
_BASE64_CREDENTIAL_MIN_RUN = 8
_MIN_ENTROPY_BITS = 3.5
_UPPER, _LOWER, _DIGITS = frozenset(_UPPER_CHARS), frozenset(_LOWER_CHARS), frozenset(_DIGIT_CHARS)
_DIGITS_AND_SYMBOLS = _DIGITS | frozenset("!@#%^&*+=~?")
_HEX_AND_DASH = _DIGIT_CHARS + "abcdefABCDEF-"
_BASE64_ALPHABET = _UPPER_CHARS + _LOWER_CHARS + _DIGIT_CHARS + "+/"
_BASE64_VALUES = {char: value for value, char in enumerate(_BASE64_ALPHABET)}
_GROUP_LEADS = frozenset(_BASE64_ALPHABET[8:32])  # the top six bits of a byte in 0x21-0x7E
_GENERATED_KEY_CHARS = frozenset(_UPPER_CHARS + _LOWER_CHARS + _DIGIT_CHARS + "+=_-")
_USER_CHARS = frozenset(_UPPER_CHARS + _LOWER_CHARS + _DIGIT_CHARS + "._@+-")
_DIGEST_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-")  # Subresource Integrity
_PLACEHOLDER_WORDS = frozenset(("none", "null", "nil", "true", "false", "undefined"))
# since 2: a lower-case word after `token:` is a secret (`token: qwertyuiop`) unless it is one of
# these type, keyword or status words (`token: str`), names a key itself (`"token": token`), or is
# Python spacing (`auth = handler`).
_CODE_WORDS = frozenset("""str string bytes int integer float bool boolean list dict tuple set frozenset object any
    optional union callable type number array self cls lambda yield await return not and or none null nil true
    false undefined required optional unknown empty default hidden masked redacted unset missing invalid expired
    revoked valid enabled disabled yes off basic bearer digest negotiate""".split())
_KEY_ROOTS = ("pass", "secret", "token", "auth", "key", "cred")

_passes = {}


def redact(text, *, version=VERSION):
    """`text` with every recognized secret replaced by `[REDACTED:<kind>]`; idempotent.

    `version` selects an earlier set of rules, only to recompute an id recorded before an upgrade."""
    if not _may_contain_secret(text, version):
        return text
    return _apply_patterns(text, version=version)


def has_secret(text):
    """True when `redact` would change `text` (used to reject ids that hold a credential)."""
    return redact(text) != text


def _marker(kind):
    return f"[REDACTED:{kind}]"


def _may_contain_secret(text, version=VERSION):
    """Cheap and conservative: False only when no pattern can match (checked by a property test).

    For versions 1 and 2 it is the released pre-filter, gap included (`_has_key_assignment`), so
    that `redact(text, version=2)` gives the id the released build gave."""
    folded = _fold_case(text)
    key_separator = _has_key_separator(folded) if version >= 3 else _has_key_assignment(folded)
    if any(trigger in folded for trigger in _TRIGGERS) or "SG." in text or key_separator:
        return True
    if "curl" in folded and "-u" in folded:
        return True
    for run in text.translate(_RUN_SEPARATORS).split():
        if len(run) < _BASE64_CREDENTIAL_MIN_RUN:
            continue
        if (not run.isascii() or _GROUP_LEADS.issuperset(run[::4])) and _may_be_base64_credential(run):
            return True
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


def _has_key_assignment(folded):
    """Versions 1 and 2: `key` followed by an assignment separator (`key:`, `KEY=`, `key" :`, `key is`)
    within 8 characters, so `key` + 9 spaces + `: <value>` was cleared (fixed in _has_key_separator)."""
    position = folded.find(_GENERIC_KEYWORD)
    while position >= 0:
        rest = folded[position + len(_GENERIC_KEYWORD):position + len(_GENERIC_KEYWORD) + 8].lstrip("\"'").lstrip(" \t")
        if rest[:1] in (":", "=") or rest.startswith("is"):
            return True
        position = folded.find(_GENERIC_KEYWORD, position + 1)
    return False


def _has_key_separator(folded):
    """Since 3: `key`, an optional quote (`"`, `'`, `\\"`, `\\'`), any run of spaces or tabs, then `:`,
    `=` or `is`; or spaces or tabs right after `key` and a hex digit. Every way the generic rule can
    start, however many spaces; linear, since a space is skipped only for the `key` it follows."""
    length = len(folded)
    position = folded.find(_GENERIC_KEYWORD)
    while position >= 0:
        after = position + len(_GENERIC_KEYWORD)
        if folded.startswith(("\\\"", "\\'"), after):
            after += 2
        elif folded[after:after + 1] in ("\"", "'"):
            after += 1
        end = after
        while end < length and folded[end] in " \t":
            end += 1
        following = folded[end:end + 1]
        if following in (":", "=") or folded.startswith("is", end):
            return True
        if end > after == position + len(_GENERIC_KEYWORD) and following in _HEX_FIRST:
            return True
        position = folded.find(_GENERIC_KEYWORD, max(end, position + len(_GENERIC_KEYWORD)))
    return False


def _may_be_base64_credential(run):
    """Exact: the base64 pattern matches whole runs, and non-ASCII characters (which runs keep) bound
    a match too, so a run holding one is judged by its ASCII pieces."""
    if not run.isascii():
        pieces = "".join(char if char.isascii() else " " for char in run).split()
        return any(_decoded_credential(piece) is not None for piece in pieces)
    return _decoded_credential(run) is not None


def _apply_patterns(text, *, version=VERSION):
    passes = _passes.get(version)
    if passes is None:
        passes = _passes[version] = _compile_passes(version)
    for redact_pass in passes:
        text = redact_pass(text)
    return text


def _compile_passes(version):
    """One text -> text function per pass, in KINDS order, for the rules of `version`."""
    import re  # deferred: see the note at the top of the module
    from functools import partial

    flags = re.ASCII  # ASCII classes and case folding keep the str.lower() pre-filter exact
    structure = re.compile(_STRUCTURE_PATTERN, flags)
    families = [family for family in _PREFIXED_FAMILIES if family[3] <= version]
    prefixes = [prefix for _kind, family_prefixes, _pattern, _since in families for prefix in family_prefixes]
    prefixed = "|".join(f"(?P<{kind}>{pattern})" for kind, _prefixes, pattern, _since in families)
    words = _ASSIGNMENT_KEYWORDS + (_KEYWORDS_V2 if version >= 2 else ())
    keywords = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True) if word != _GENERIC_KEYWORD)
    # Only at the start of a run of body characters: one attempt per run keeps failing matches linear.
    prefixed_pattern = rf"(?={_first_chars(prefixes)})(?<![A-Za-z0-9_-])(?:{prefixed})(?![A-Za-z0-9_-])"
    separator = _SEPARATOR_V3 if version >= 3 else _SEPARATOR
    quoted, generic_quoted = (_QUOTED, _GENERIC_QUOTED) if version < 3 else (
        f"{_QUOTED}|{_ESCAPED_QUOTED}", f"{_GENERIC_QUOTED}|{_GENERIC_ESCAPED_QUOTED}")
    strong = f"(?P<key>{keywords}){separator}(?:{quoted}|{_BARE_V2 if version >= 2 else _BARE_V1})"
    generic = f"|{_GENERIC_KEYWORD}{separator}(?:{generic_quoted}|{_GENERIC_BARE})" if version >= 2 else ""
    if version >= 3:  # spaces alone, and only before a hex key or a UUID
        generic += rf"|{_GENERIC_KEYWORD}[ \t]++{_SPACED_KEY}"
    assignment_pattern = rf"(?={_first_chars(words)})(?:{strong}{generic})"
    passes = [
        partial(re.compile(_PEM_PATTERN, flags).sub, _marker("private_key")),
        partial(re.compile(_URL_AUTHORITY_PATTERN, flags).sub, _redact_url_userinfo),
        partial(re.compile(prefixed_pattern, flags).sub, _redact_prefixed),
        partial(re.compile(_BEARER_PATTERN, flags).sub, partial(_redact_bearer, structure=structure)),
    ]
    if version >= 2:
        command_word = re.compile(_COMMAND_WORD, flags)
        passes.append(partial(re.compile(_COMMAND_PATTERN, flags).sub,
                              partial(_redact_command_line, re=re, command_word=command_word)))
    passes += [
        partial(_redact_assignments, pattern=re.compile(assignment_pattern, flags), version=version),
        partial(re.compile(_HIGH_ENTROPY_PATTERN, flags).sub, partial(_redact_high_entropy, structure=structure)),
    ]
    if version >= 2:  # last: a marker written before it can free a run glued to a secret (`…==dTpw`)
        passes.append(partial(re.compile(_BASE64_RUN_PATTERN, flags).sub, _redact_base64_credential))
    return passes


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


def _redact_base64_credential(match):
    run = match.group()
    if len(run) < _BASE64_CREDENTIAL_MIN_RUN and not _follows_basic(match.string, match.start()):
        return run
    return _marker("basic_credentials") if _decoded_credential(run) is not None else run


def _follows_basic(text, start):
    """`Basic ` (any case, spaces or tabs) right before `start`: the base64 after it is a credential."""
    before = text[max(0, start - 24):start].rstrip(" \t")
    return before != text[max(0, start - 24):start] and before[-5:].lower() == "basic"


def _decoded_credential(run):
    """The `user:password` a strict base64 run decodes to (printable ASCII, a user of name
    characters, a non-empty password), or None. Pure Python: no import on the hook's fast path."""
    body = run.rstrip("=")
    if len(run) % 4 or not _GROUP_LEADS.issuperset(run[::4]) or len(run) - len(body) > 2 or len(body) < 4 \
            or body.strip(_BASE64_ALPHABET):
        return None
    bits, count, decoded = 0, 0, []
    for char in body:
        bits, count = (bits << 6) | _BASE64_VALUES[char], count + 6
        if count >= 8:
            count -= 8
            byte = (bits >> count) & 0xFF
            if not 0x20 < byte < 0x7F:
                return None
            decoded.append(chr(byte))
    user, colon, password = "".join(decoded).partition(":")
    if not (user and colon and password) or not _USER_CHARS.issuperset(user):
        return None
    return user, password


def _redact_command_line(match, *, re, command_word):
    """Passwords given as options: `mysql -pS3cret` (attached only: `-p db` asks for one), `sshpass
    -p pw` (its own options, not the wrapped command's `-p 22`), `curl -u user:pw`, `--password pw`.
    Each command's options run to the next command word (`sshpass -p pw ssh h mysql -pX`)."""
    if match.group("command") is None:
        return _redacted_option(match)
    line = match.group()
    starts = [word.start() for word in command_word.finditer(line)]
    pieces = []
    for start, end in zip(starts, starts[1:] + [len(line)], strict=True):
        command = command_word.match(line, start).group()
        pieces += (command, _redact_arguments(command, line[start + len(command):end], re=re))
    return "".join(pieces)


def _redact_arguments(command, args, *, re):
    args = _redact_options(args, re=re, pattern=_LONG_PASSWORD_OPTION)
    if command == "curl":
        return _redact_options(args, re=re, pattern=r"(?<!\S)(?:-[uU][ \t]*+|--(?:proxy-)?user[ \t=]++)(?!-)",
                               user_and_password=True)
    if command == "sshpass":
        return _redact_sshpass(args, re=re)
    return _redact_options(args, re=re, pattern=r"(?<!\S)-p(?=[^\s-])")


def _redact_options(text, *, re, pattern, user_and_password=False):
    def replace(option):
        return _redacted_option(option, user_and_password=user_and_password)

    return re.sub(rf"(?P<option>{pattern})(?P<value>{_VALUE})", replace, text, flags=re.ASCII)


def _redacted_option(option, *, user_and_password=False):
    value = option.group("value").strip("'\"")
    if _is_placeholder(value):
        return option.group()
    if user_and_password:
        _user, colon, password = _without_markers(value).partition(":")
        if not colon or _is_placeholder(password):
            return option.group()  # `curl -u alice` asks for the password
    return option.group("option") + _marker("command_password")


def _redact_sshpass(args, *, re):
    words = list(re.finditer(_VALUE, args))
    for index, word in enumerate(words):
        text = word.group()
        if not text.startswith("-") or text == "-":
            return args  # the wrapped command starts: a later `-p` is its own
        value = words[index + 1] if text == "-p" and index + 1 < len(words) else None
        if value is None and text.startswith("-p") and text != "-p":
            value_start, value_end = word.start() + 2, word.end()
        elif value is not None:
            value_start, value_end = value.span()
        else:
            continue
        if _is_placeholder(args[value_start:value_end].strip("'\"")):
            return args
        return args[:value_start] + _marker("command_password") + args[value_end:]
    return args


def _redact_assignments(text, *, pattern, version):
    """Keys match case-insensitively: the pattern runs on a lowercased copy with the same offsets."""
    folded = _fold_case(text)
    pieces, done, position = [], 0, 0
    while (match := pattern.search(folded, position)) is not None:
        value_start, value_end = match.span(match.lastgroup)
        if _is_secret_value(text, match, value_start, value_end, version=version):
            pieces += (text[done:value_start], _marker("assignment"))
            done = position = value_end
        else:
            position = _resume_after_declined_value(text, match, value_start, value_end, version=version)
    return "".join(pieces) + text[done:] if pieces else text


def _resume_after_declined_value(text, match, value_start, value_end, *, version):
    """Where to search next, so a declined value never hides an assignment that starts inside it.

    Were one hidden, a later pass that rewrote the outer key would expose it on the next call and
    break idempotence (`xQ7..Credential =token: s3cret`). A declined unquoted value can only hide
    one whose key and separator end the value (spaces end it), so rescanning its tail keeps the
    scan linear; a declined quoted value is a short placeholder and is rescanned whole. Since
    version 2 a lower-case word may pass where the whole value did not (`a.xtoken:qwertyuiop`):
    having no `:`, it follows the value's last `:`, which is rescanned from its key on.
    """
    if match.lastgroup not in ("bare", "gen", "spaced"):
        return value_start
    resume = value_end - _LONGEST_KEY_AND_SEPARATOR
    if match.lastgroup == "bare" and version >= 2:
        last_colon = text.rfind(":", value_start, value_end)
        if last_colon >= 0:
            resume = min(resume, last_colon - _LONGEST_KEY_AND_SEPARATOR)
    return max(value_start, resume)


def _is_secret_value(text, match, value_start, value_end, *, version):
    value = text[value_start:value_end]
    if match.lastgroup == "spaced" and _names_a_non_secret_key(text, match.start()):
        return False
    if match.lastgroup in _GENERIC_GROUPS:
        return _is_generated_key(value) and not _is_placeholder(value)
    if match.lastgroup == "bare" and not _is_unquoted_secret(text, match, value, version=version):
        return False
    return not _is_placeholder(value)


def _names_a_non_secret_key(text, key_start):
    """The word right before a spaced `key` (after spaces, `_` or `-`, or glued: `cacheKey`) ends
    with one that names a key that is no secret: `primary key <uuid>`, `cache_key <sha>`, `gpg key`."""
    before = _fold_case(text[max(0, key_start - 40):key_start]).rstrip(" \t_-")
    start = len(before)
    while start and before[start - 1].isascii() and before[start - 1].isalnum():
        start -= 1
    return before[start:].endswith(_NON_SECRET_KEY_WORDS)


def _is_generated_key(value):
    """A key-named value that looks generated: 16+ characters of letters, digits and `+=_-` holding
    both a letter and a digit (Datadog's 32 hex, Heroku's UUID); names and paths have other shapes."""
    return (len(value) >= 16 and _GENERATED_KEY_CHARS.issuperset(value)
            and not _DIGITS.isdisjoint(value) and not (_UPPER | _LOWER).isdisjoint(value))


def _is_unquoted_secret(text, match, value, *, version):
    """A digit or symbol is needed (`token: str` is a type), except env style (`API_KEY=value`) and,
    since 2, a lower-case word written as a setting (`token: qwertyuiop`, `token=abcdefgh`)."""
    value_start, value_end = match.span("bare")
    if text[value_end:value_end + 1] in ("(", "["):
        return False  # a call or a subscript: code, not a literal
    if len(value) >= 4 and not _DIGITS_AND_SYMBOLS.isdisjoint(value):
        return True
    key_and_separator = text[match.start():value_start]
    key = key_and_separator[:-1].replace("-", "_")
    if key_and_separator.endswith("=") and key.isupper() and key.isidentifier():
        return True
    return version >= 2 and _is_lowercase_setting(text, key_and_separator, value, value_end)


def _is_lowercase_setting(text, key_and_separator, value, value_end):
    separator = key_and_separator.rstrip(" \t")[-1:]
    if separator not in (":", "=") or key_and_separator.endswith((" = ", "\t=\t", " =\t", "\t= ")):
        return False  # ` is ` is prose; `token = word` is Python spacing: code
    if len(value) < 4 or not (value.isascii() and value.isalpha() and value.islower()):
        return False
    if value in _CODE_WORDS or any(root in value for root in _KEY_ROOTS):
        return False
    return True


def _is_placeholder(value):
    """Shorter than 3, `<...>`, `{...}`, `${VAR}`/`$VAR`/`$(cmd)`, None/null/true/false, masks, markers."""
    value = _without_markers(value).strip()
    if len(value) < 3 or value.lower() in _PLACEHOLDER_WORDS:
        return True
    if (value[0], value[-1]) in (("<", ">"), ("{", "}")) or value.startswith(("${", "$(")):
        return True
    if value[0] == "$" and value[1:].replace("_", "a").isalnum():
        return True
    return not value.strip("*xX.")


def _without_markers(value):
    if "[REDACTED:" in value:
        for kind in KINDS:
            value = value.replace(_marker(kind), "")
    return value


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

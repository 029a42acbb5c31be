"""The credential rules redaction applies: the kinds it knows and the order they apply in, each
kind's literal prefixes and pattern, the keywords of assignments, the character classes, and the two
value tests both the pre-filter (redact.py) and the patterns (passes.py) need. Data and pure
functions only: no import, nothing compiled here."""

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
PREFIXED_FAMILIES = (
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

PREFIXES = tuple(prefix for _kind, prefixes, _pattern, _since in PREFIXED_FAMILIES for prefix in prefixes)

# An assignment's key must END with one of these, in any case: `DB_PASSWORD`, `apiKey`, `x-auth`.
ASSIGNMENT_KEYWORDS = (
    "password", "passwd", "passphrase", "secret", "token", "auth", "authorization", "credential",
    "credentials", "apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
    "privatekey", "private_key", "private-key", "secretkey", "secret_key", "secret-key",
)

# since 2: a GCP service account's `private_key_id` (40 hex, which the high-entropy rule keeps as a
# digest), and any other key ending in `key` (`DD_APP_KEY`, `heroku api key`), whose value must
# look like a generated key (see _is_generated_key): `key = name` is everyday code.
KEYWORDS_V2 = ("private_key_id", "privatekeyid", "private-key-id", "key")

GENERIC_KEYWORD = "key"

# since 3: after a key name ending in `key` and spaces alone (`datadog api key 0a1b…`, `heroku api key
# <uuid>`), only a hex key of 32 or more or a UUID (holding a letter and a digit, _is_generated_key),
# unless the word before `key` names a key that is no secret (`primary key <uuid>`, `cache_key <sha>`).
SPACED_KEY = (r"(?P<spaced>(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32,}+)"
               r"(?![A-Za-z0-9+/=_-]))")

HEX_FIRST = frozenset("0123456789abcdef")

NON_SECRET_KEY_WORDS = ("primary", "foreign", "unique", "composite", "compound", "candidate", "surrogate", "natural",
                         "partition", "sort", "shard", "routing", "index", "lookup", "hash", "cache", "dict", "object",
                         "public", "gpg", "pgp", "recv", "idempotency", "dedup", "dedupe", "deduplication",
                         "correlation")

TRIGGERS = ("-----begin", "://", "bearer") + ASSIGNMENT_KEYWORDS + ("basic", "mysql", "mariadb", "sshpass", "--pass")

LONGEST_KEY_AND_SEPARATOR = max(map(len, ASSIGNMENT_KEYWORDS + KEYWORDS_V2)) + len(":=")

# A leading one-character lookahead lets the regex engine skip ahead by first character, which an
# alternation otherwise prevents (measured 3-10x faster on 3 MB).
PEM_PATTERN = (r"-----BEGIN [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
                r"(?:-----END [A-Z0-9 ]{0,40}?PRIVATE KEY(?: BLOCK)?-----|\Z)")  # lazy: one scan per BEGIN

# The authority stops before a `:` that starts another `://`, which belongs to the next URL.
URL_AUTHORITY_PATTERN = r"://(?<=[A-Za-z0-9]://)(?:[^\s/?#\[\]:]|:(?!//))++"

BEARER_PATTERN = r"(?=[BbAa])\b(?i:bearer|authorization:[ \t]*+basic)[ \t]++(?P<token>[A-Za-z0-9._~+/-]{16,}+=*+)"

# since 2: base64 of `user:password`, however short (`Basic dXNlcjpwYXNz`), after `Basic` or alone.
# Each 4-character group starts with what encodes a printable byte's top six bits (I-Z a-f), which
# keeps ordinary words from reaching the decoder.
BASE64_GROUPS = r"(?:[I-Za-f][A-Za-z0-9+/]{3})*+(?:[I-Za-f][A-Za-z0-9+/](?:[A-Za-z0-9+/]=|==))?+"

BASE64_RUN_PATTERN = rf"(?<![A-Za-z0-9+/=_-])(?=[I-Za-f]){BASE64_GROUPS}(?![A-Za-z0-9+/=_-])"

# since 2: a command line from its first command word to the end of the line or of the shell
# command, taken possessively so that each line starts one scan (_redact_command_line splits it at
# every command word and reads each one's options), or a long password option anywhere, which takes
# its value after a space (`--password=` is an assignment).
VALUE = r"'[^'\n]*+'?|\"[^\"\n]*+\"?|[^\s'\"]++"

LONG_PASSWORD_OPTION = r"--pass(?:word|wd)?+[ \t]++(?!-)"

COMMAND_WORD = (r"(?<![A-Za-z0-9_.-])(?:mysql(?:dump|admin|import|sh|check)?+|mariadb(?:-dump|-admin)?+|sshpass|curl)"
                 r"(?![A-Za-z0-9_.-])")

COMMAND_PATTERN = (rf"(?=[msc-])(?:(?P<command>{COMMAND_WORD})[^\n|;&]*+"
                    rf"|(?<![A-Za-z0-9_.-])(?P<option>{LONG_PASSWORD_OPTION})(?P<value>{VALUE}))")

# Matched against ASCII-lowercased text, so the keyword alternation needs no (slow) IGNORECASE.
SEPARATOR = r"(?:[\"']?[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+)"

# since 3: the key's closing quote may be escaped, as in JSON inside a JSON string (`{\"password\": …}`).
SEPARATOR_V3 = r"(?:(?:\\?[\"'])?[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+)"

QUOTED = r"\"(?P<dq>(?:[^\"\\\n]|\\.)*+)\"|'(?P<sq>(?:[^'\\\n]|\\.)*+)'"

# since 3: a value between escaped quotes (`\"hunter2\"`), read as the inner string: an outer escape
# (`\n`, `\/`), or an inner one (`\\` and the escaped character: `\\\"` is a quote inside the value).
# Every character picks one branch, so the possessive body is one scan, and `\"` always ends it.
ESCAPED_BODY = r"(?:[^{q}\\\n]|\\[^{q}\\\n]|\\\\(?:[^{q}\\\n]|\\[^\n]))*+"

ESCAPED_QUOTED = (r"\\\"(?P<edq>" + ESCAPED_BODY.format(q='"') + r")\\\""
                   r"|\\'(?P<esq>" + ESCAPED_BODY.format(q="'") + r")\\'")

BARE_V1 = r"(?P<bare>[^\s\"'`,;&()\[\]{}<>]++)"

# since 2: `&`, `,` and `;` inside a value belong to it (`tr0ub4dor&3`) unless a space, a quote, the
# end or another `name=` / `name:` follows (`?token=a1&page=2`, `token=a1;Path=/`).
# since 2: the value after a generic `key`. Unquoted, only what a generated key is made of, `=` only
# as final padding: holding no `:` or `=`, it hides no other assignment (_resume_after_declined_value).
GENERIC_QUOTED = QUOTED.replace("?P<dq>", "?P<gdq>").replace("?P<sq>", "?P<gsq>")

GENERIC_ESCAPED_QUOTED = ESCAPED_QUOTED.replace("?P<edq>", "?P<gedq>").replace("?P<esq>", "?P<gesq>")

GENERIC_BARE = r"(?P<gen>[A-Za-z0-9+_-]++(?:=++(?![A-Za-z0-9+_-]))?+)"

GENERIC_GROUPS = ("gdq", "gsq", "gen", "gedq", "gesq", "spaced")

BARE_V2 = (r"(?P<bare>(?:[^\s\"'`,;&()\[\]{}<>]|[&,;](?![\s\"'`]|\Z|[A-Za-z_][A-Za-z0-9_.-]*+[=:]))++)")

# A possessive run is always tried first at its own start, so no lookbehind is needed; `=` only
# as trailing padding, so `name=value` is judged as `value` alone.
HIGH_ENTROPY_PATTERN = r"[A-Za-z0-9+/_-]{24,}+=*+"

# What ids, paths and identifiers are made of: words, hex or UPPER pieces, digit runs, separators.
# A token >= 60% covered by these is structure, not randomness; random 24-character tokens reach
# that 0.2% of the time, Codex transcript paths and `Header2/index`-style names almost always.
STRUCTURE_PATTERN = (r"[A-Z]?[a-z]{4,}|(?<![A-Za-z0-9])(?:[0-9a-f]{4,}|[0-9A-F]{4,}|[A-Z]{3,})(?![A-Za-z0-9])"
                      r"|[0-9]{3,}|[/_+=-]")

STRUCTURED_SHARE = 0.6

UPPER_CHARS, LOWER_CHARS, DIGIT_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz", "0123456789"

TOKEN_CHARS = UPPER_CHARS + LOWER_CHARS + DIGIT_CHARS + "+/=_-"

# Every other ASCII character separates runs; non-ASCII characters stay and only lengthen runs.
RUN_SEPARATORS = {code: " " for code in range(128) if chr(code) not in TOKEN_CHARS}

PREFIXED_MIN_RUN = 16

HIGH_ENTROPY_MIN_RUN = 24

BASE64_CREDENTIAL_MIN_RUN = 8

MIN_ENTROPY_BITS = 3.5

UPPER, LOWER, DIGITS = frozenset(UPPER_CHARS), frozenset(LOWER_CHARS), frozenset(DIGIT_CHARS)

DIGITS_AND_SYMBOLS = DIGITS | frozenset("!@#%^&*+=~?")

HEX_AND_DASH = DIGIT_CHARS + "abcdefABCDEF-"

BASE64_ALPHABET = UPPER_CHARS + LOWER_CHARS + DIGIT_CHARS + "+/"

BASE64_VALUES = {char: value for value, char in enumerate(BASE64_ALPHABET)}

GROUP_LEADS = frozenset(BASE64_ALPHABET[8:32])  # the top six bits of a byte in 0x21-0x7E

GENERATED_KEY_CHARS = frozenset(UPPER_CHARS + LOWER_CHARS + DIGIT_CHARS + "+=_-")

USER_CHARS = frozenset(UPPER_CHARS + LOWER_CHARS + DIGIT_CHARS + "._@+-")

DIGEST_PREFIXES = ("sha1-", "sha256-", "sha384-", "sha512-")  # Subresource Integrity

PLACEHOLDER_WORDS = frozenset(("none", "null", "nil", "true", "false", "undefined"))

# since 2: a lower-case word after `token:` is a secret (`token: qwertyuiop`) unless it is one of
# these type, keyword or status words (`token: str`), names a key itself (`"token": token`), or is
# Python spacing (`auth = handler`).
CODE_WORDS = frozenset("""str string bytes int integer float bool boolean list dict tuple set frozenset object any
    optional union callable type number array self cls lambda yield await return not and or none null nil true
    false undefined required optional unknown empty default hidden masked redacted unset missing invalid expired
    revoked valid enabled disabled yes off basic bearer digest negotiate""".split())

KEY_ROOTS = ("pass", "secret", "token", "auth", "key", "cred")


def marker(kind):
    return f"[REDACTED:{kind}]"


def decoded_credential(run):
    """The `user:password` a strict base64 run decodes to (printable ASCII, a user of name
    characters, a non-empty password), or None. Pure Python: no import on the hook's fast path."""
    body = run.rstrip("=")
    if len(run) % 4 or not GROUP_LEADS.issuperset(run[::4]) or len(run) - len(body) > 2 or len(body) < 4 \
            or body.strip(BASE64_ALPHABET):
        return None
    bits, count, decoded = 0, 0, []
    for char in body:
        bits, count = (bits << 6) | BASE64_VALUES[char], count + 6
        if count >= 8:
            count -= 8
            byte = (bits >> count) & 0xFF
            if not 0x20 < byte < 0x7F:
                return None
            decoded.append(chr(byte))
    user, colon, password = "".join(decoded).partition(":")
    if not (user and colon and password) or not USER_CHARS.issuperset(user):
        return None
    return user, password


def fold_case(text):
    """text.lower() with every offset kept: U+0130 is the one character that lowers to two."""
    return text.replace("\u0130", "I").lower()

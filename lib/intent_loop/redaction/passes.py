"""The patterns of redaction, compiled once per rules version and applied pass by pass: loaded
only for a text the pre-filter (redact.py) cannot clear, which ordinary prompts never are."""
from intent_loop.redaction.secret_rules import (
    ASSIGNMENT_KEYWORDS,
    BARE_V1,
    BARE_V2,
    BASE64_CREDENTIAL_MIN_RUN,
    BASE64_RUN_PATTERN,
    BEARER_PATTERN,
    CODE_WORDS,
    COMMAND_PATTERN,
    COMMAND_WORD,
    DIGEST_PREFIXES,
    DIGITS,
    DIGITS_AND_SYMBOLS,
    ESCAPED_QUOTED,
    GENERATED_KEY_CHARS,
    GENERIC_BARE,
    GENERIC_ESCAPED_QUOTED,
    GENERIC_GROUPS,
    GENERIC_KEYWORD,
    GENERIC_QUOTED,
    HEX_AND_DASH,
    HIGH_ENTROPY_PATTERN,
    KEY_ROOTS,
    KEYWORDS_V2,
    KINDS,
    LONG_PASSWORD_OPTION,
    LONGEST_KEY_AND_SEPARATOR,
    LOWER,
    MIN_ENTROPY_BITS,
    NON_SECRET_KEY_WORDS,
    PEM_PATTERN,
    PLACEHOLDER_WORDS,
    PREFIXED_FAMILIES,
    QUOTED,
    SEPARATOR,
    SEPARATOR_V3,
    SPACED_KEY,
    STRUCTURE_PATTERN,
    STRUCTURED_SHARE,
    UPPER,
    URL_AUTHORITY_PATTERN,
    VALUE,
    decoded_credential,
    fold_case,
    marker,
)

_compiled = {}  # {rules version: its passes}


def apply_patterns(text, *, version):
    """`text` through every pass of the rules of `version`, in KINDS order."""
    passes = _compiled.get(version)
    if passes is None:
        passes = _compiled[version] = _compile_passes(version)
    for redact_pass in passes:
        text = redact_pass(text)
    return text


def _compile_passes(version):
    """One text -> text function per pass, in KINDS order, for the rules of `version`."""
    import re  # deferred: see the note at the top of the module
    from functools import partial

    flags = re.ASCII  # ASCII classes and case folding keep the str.lower() pre-filter exact
    structure = re.compile(STRUCTURE_PATTERN, flags)
    families = [family for family in PREFIXED_FAMILIES if family[3] <= version]
    prefixes = [prefix for _kind, family_prefixes, _pattern, _since in families for prefix in family_prefixes]
    prefixed = "|".join(f"(?P<{kind}>{pattern})" for kind, _prefixes, pattern, _since in families)
    words = ASSIGNMENT_KEYWORDS + (KEYWORDS_V2 if version >= 2 else ())
    keywords = "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True) if word != GENERIC_KEYWORD)
    # Only at the start of a run of body characters: one attempt per run keeps failing matches linear.
    prefixed_pattern = rf"(?={_first_chars(prefixes)})(?<![A-Za-z0-9_-])(?:{prefixed})(?![A-Za-z0-9_-])"
    separator = SEPARATOR_V3 if version >= 3 else SEPARATOR
    quoted, generic_quoted = (QUOTED, GENERIC_QUOTED) if version < 3 else (
        f"{QUOTED}|{ESCAPED_QUOTED}", f"{GENERIC_QUOTED}|{GENERIC_ESCAPED_QUOTED}")
    strong = f"(?P<key>{keywords}){separator}(?:{quoted}|{BARE_V2 if version >= 2 else BARE_V1})"
    generic = f"|{GENERIC_KEYWORD}{separator}(?:{generic_quoted}|{GENERIC_BARE})" if version >= 2 else ""
    if version >= 3:  # spaces alone, and only before a hex key or a UUID
        generic += rf"|{GENERIC_KEYWORD}[ \t]++{SPACED_KEY}"
    assignment_pattern = rf"(?={_first_chars(words)})(?:{strong}{generic})"
    passes = [
        partial(re.compile(PEM_PATTERN, flags).sub, marker("private_key")),
        partial(re.compile(URL_AUTHORITY_PATTERN, flags).sub, _redact_url_userinfo),
        partial(re.compile(prefixed_pattern, flags).sub, _redact_prefixed),
        partial(re.compile(BEARER_PATTERN, flags).sub, partial(_redact_bearer, structure=structure)),
    ]
    if version >= 2:
        command_word = re.compile(COMMAND_WORD, flags)
        passes.append(partial(re.compile(COMMAND_PATTERN, flags).sub,
                              partial(_redact_command_line, re=re, command_word=command_word)))
    passes += [
        partial(_redact_assignments, pattern=re.compile(assignment_pattern, flags), version=version),
        partial(re.compile(HIGH_ENTROPY_PATTERN, flags).sub, partial(_redact_high_entropy, structure=structure)),
    ]
    if version >= 2:  # last: a marker written before it can free a run glued to a secret (`…==dTpw`)
        passes.append(partial(re.compile(BASE64_RUN_PATTERN, flags).sub, _redact_base64_credential))
    return passes


def _first_chars(words):
    return "[" + "".join(sorted({word[0] for word in words})) + "]"


def _redact_url_userinfo(match):
    authority = match.group()[len("://"):]
    userinfo, at, host = authority.rpartition("@")
    _user, colon, password = userinfo.partition(":")
    if not (at and colon and password):
        return match.group()
    return f"://{marker('url_credentials')}@{host}"


def _redact_prefixed(match):
    return marker(match.lastgroup)


def _redact_bearer(match, *, structure):
    token = match.group("token")
    if DIGITS.isdisjoint(token) and _is_structured(token, structure):
        return match.group()  # prose: "Bearer AuthenticationScheme"
    return match.group()[: match.start("token") - match.start()] + marker("bearer_token")


def _redact_base64_credential(match):
    run = match.group()
    if len(run) < BASE64_CREDENTIAL_MIN_RUN and not _follows_basic(match.string, match.start()):
        return run
    return marker("basic_credentials") if decoded_credential(run) is not None else run


def _follows_basic(text, start):
    """`Basic ` (any case, spaces or tabs) right before `start`: the base64 after it is a credential."""
    before = text[max(0, start - 24):start].rstrip(" \t")
    return before != text[max(0, start - 24):start] and before[-5:].lower() == "basic"


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
    args = _redact_options(args, re=re, pattern=LONG_PASSWORD_OPTION)
    if command == "curl":
        return _redact_options(args, re=re, pattern=r"(?<!\S)(?:-[uU][ \t]*+|--(?:proxy-)?user[ \t=]++)(?!-)",
                               user_and_password=True)
    if command == "sshpass":
        return _redact_sshpass(args, re=re)
    return _redact_options(args, re=re, pattern=r"(?<!\S)-p(?=[^\s-])")


def _redact_options(text, *, re, pattern, user_and_password=False):
    def replace(option):
        return _redacted_option(option, user_and_password=user_and_password)

    return re.sub(rf"(?P<option>{pattern})(?P<value>{VALUE})", replace, text, flags=re.ASCII)


def _redacted_option(option, *, user_and_password=False):
    value = option.group("value").strip("'\"")
    if _is_placeholder(value):
        return option.group()
    if user_and_password:
        _user, colon, password = _without_markers(value).partition(":")
        if not colon or _is_placeholder(password):
            return option.group()  # `curl -u alice` asks for the password
    return option.group("option") + marker("command_password")


def _redact_sshpass(args, *, re):
    words = list(re.finditer(VALUE, args))
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
        return args[:value_start] + marker("command_password") + args[value_end:]
    return args


def _redact_assignments(text, *, pattern, version):
    """Keys match case-insensitively: the pattern runs on a lowercased copy with the same offsets."""
    folded = fold_case(text)
    pieces, done, position = [], 0, 0
    while (match := pattern.search(folded, position)) is not None:
        value_start, value_end = match.span(match.lastgroup)
        if _is_secret_value(text, match, value_start, value_end, version=version):
            pieces += (text[done:value_start], marker("assignment"))
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
    resume = value_end - LONGEST_KEY_AND_SEPARATOR
    if match.lastgroup == "bare" and version >= 2:
        last_colon = text.rfind(":", value_start, value_end)
        if last_colon >= 0:
            resume = min(resume, last_colon - LONGEST_KEY_AND_SEPARATOR)
    return max(value_start, resume)


def _is_secret_value(text, match, value_start, value_end, *, version):
    value = text[value_start:value_end]
    if match.lastgroup == "spaced" and _names_a_non_secret_key(text, match.start()):
        return False
    if match.lastgroup in GENERIC_GROUPS:
        return _is_generated_key(value) and not _is_placeholder(value)
    if match.lastgroup == "bare" and not _is_unquoted_secret(text, match, value, version=version):
        return False
    return not _is_placeholder(value)


def _names_a_non_secret_key(text, key_start):
    """The word right before a spaced `key` (after spaces, `_` or `-`, or glued: `cacheKey`) ends
    with one that names a key that is no secret: `primary key <uuid>`, `cache_key <sha>`, `gpg key`."""
    before = fold_case(text[max(0, key_start - 40):key_start]).rstrip(" \t_-")
    start = len(before)
    while start and before[start - 1].isascii() and before[start - 1].isalnum():
        start -= 1
    return before[start:].endswith(NON_SECRET_KEY_WORDS)


def _is_generated_key(value):
    """A key-named value that looks generated: 16+ characters of letters, digits and `+=_-` holding
    both a letter and a digit (Datadog's 32 hex, Heroku's UUID); names and paths have other shapes."""
    return (len(value) >= 16 and GENERATED_KEY_CHARS.issuperset(value)
            and not DIGITS.isdisjoint(value) and not (UPPER | LOWER).isdisjoint(value))


def _is_unquoted_secret(text, match, value, *, version):
    """A digit or symbol is needed (`token: str` is a type), except env style (`API_KEY=value`) and,
    since 2, a lower-case word written as a setting (`token: qwertyuiop`, `token=abcdefgh`)."""
    value_start, value_end = match.span("bare")
    if text[value_end:value_end + 1] in ("(", "["):
        return False  # a call or a subscript: code, not a literal
    if len(value) >= 4 and not DIGITS_AND_SYMBOLS.isdisjoint(value):
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
    if value in CODE_WORDS or any(root in value for root in KEY_ROOTS):
        return False
    return True


def _is_placeholder(value):
    """Shorter than 3, `<...>`, `{...}`, `${VAR}`/`$VAR`/`$(cmd)`, None/null/true/false, masks, markers."""
    value = _without_markers(value).strip()
    if len(value) < 3 or value.lower() in PLACEHOLDER_WORDS:
        return True
    if (value[0], value[-1]) in (("<", ">"), ("{", "}")) or value.startswith(("${", "$(")):
        return True
    if value[0] == "$" and value[1:].replace("_", "a").isalnum():
        return True
    return not value.strip("*xX.")


def _without_markers(value):
    if "[REDACTED:" in value:
        for kind in KINDS:
            value = value.replace(marker(kind), "")
    return value


def _redact_high_entropy(match, *, structure):
    token = match.group()
    if UPPER.isdisjoint(token) or LOWER.isdisjoint(token) or DIGITS.isdisjoint(token):
        return token
    if not token.strip(HEX_AND_DASH) or token.startswith(DIGEST_PREFIXES):
        return token  # hex digests, UUIDs and integrity hashes are ids, not secrets
    if _shannon_entropy(token) < MIN_ENTROPY_BITS or _is_structured(token, structure):
        return token
    return marker("high_entropy")


def _is_structured(token, structure):
    return sum(map(len, structure.findall(token))) >= STRUCTURED_SHARE * len(token)


def _shannon_entropy(text):
    from math import log2  # deferred with `re`: only texts that reach the patterns need it

    length = len(text)
    return -sum(count / length * log2(count / length) for count in map(text.count, set(text)))

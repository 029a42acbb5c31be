"""Credential redaction: replace every recognized secret with a typed marker before text is hashed or stored.

The rules are secret_rules.py; a cheap, conservative pre-filter here clears ordinary text without a
pattern, and only a text it cannot clear loads the patterns (passes.py)."""
# The patterns (and `re`, which they need) load on the first text the pre-filter cannot clear:
# `import re` costs about one whole interpreter start, and this runs inside a hook on every prompt
# (startup-performance.md).
from intent_loop.redaction.secret_rules import (
    BASE64_CREDENTIAL_MIN_RUN,
    GENERIC_KEYWORD,
    GROUP_LEADS,
    HEX_FIRST,
    HIGH_ENTROPY_MIN_RUN,
    PREFIXED_MIN_RUN,
    PREFIXES,
    RUN_SEPARATORS,
    TRIGGERS,
    VERSION,
    decoded_credential,
    fold_case,
)


def redact(text, *, version=VERSION):
    """`text` with every recognized secret replaced by `[REDACTED:<kind>]`; idempotent.

    `version` selects an earlier set of rules, only to recompute an id recorded before an upgrade."""
    if not _may_contain_secret(text, version):
        return text
    return _apply_patterns(text, version=version)


def has_secret(text):
    """True when `redact` would change `text` (used to reject ids that hold a credential)."""
    return redact(text) != text


def _may_contain_secret(text, version=VERSION):
    """Cheap and conservative: False only when no pattern can match (checked by a property test).

    For versions 1 and 2 it is the released pre-filter, gap included (`_has_key_assignment`), so
    that `redact(text, version=2)` gives the id the released build gave."""
    folded = fold_case(text)
    key_separator = _has_key_separator(folded) if version >= 3 else _has_key_assignment(folded)
    if any(trigger in folded for trigger in TRIGGERS) or "SG." in text or key_separator:
        return True
    if "curl" in folded and "-u" in folded:
        return True
    for run in text.translate(RUN_SEPARATORS).split():
        if len(run) < BASE64_CREDENTIAL_MIN_RUN:
            continue
        if (not run.isascii() or GROUP_LEADS.issuperset(run[::4])) and _may_be_base64_credential(run):
            return True
        if len(run) < PREFIXED_MIN_RUN:
            continue
        if any(prefix in run for prefix in PREFIXES):
            return True
        if len(run) >= HIGH_ENTROPY_MIN_RUN and not (run.islower() or run.isupper() or run.isalpha()):
            return True
    return False



def _has_key_assignment(folded):
    """Versions 1 and 2: `key` followed by an assignment separator (`key:`, `KEY=`, `key" :`, `key is`)
    within 8 characters, so `key` + 9 spaces + `: <value>` was cleared (fixed in _has_key_separator)."""
    position = folded.find(GENERIC_KEYWORD)
    while position >= 0:
        rest = folded[position + len(GENERIC_KEYWORD):position + len(GENERIC_KEYWORD) + 8].lstrip("\"'").lstrip(" \t")
        if rest[:1] in (":", "=") or rest.startswith("is"):
            return True
        position = folded.find(GENERIC_KEYWORD, position + 1)
    return False


def _has_key_separator(folded):
    """Since 3: `key`, an optional quote (`"`, `'`, `\\"`, `\\'`), any run of spaces or tabs, then `:`,
    `=` or `is`; or spaces or tabs right after `key` and a hex digit. Every way the generic rule can
    start, however many spaces; linear, since a space is skipped only for the `key` it follows."""
    length = len(folded)
    position = folded.find(GENERIC_KEYWORD)
    while position >= 0:
        after = position + len(GENERIC_KEYWORD)
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
        if end > after == position + len(GENERIC_KEYWORD) and following in HEX_FIRST:
            return True
        position = folded.find(GENERIC_KEYWORD, max(end, position + len(GENERIC_KEYWORD)))
    return False


def _may_be_base64_credential(run):
    """Exact: the base64 pattern matches whole runs, and non-ASCII characters (which runs keep) bound
    a match too, so a run holding one is judged by its ASCII pieces."""
    if not run.isascii():
        pieces = "".join(char if char.isascii() else " " for char in run).split()
        return any(decoded_credential(piece) is not None for piece in pieces)
    return decoded_credential(run) is not None


def _apply_patterns(text, *, version=VERSION):
    from intent_loop.redaction.passes import apply_patterns  # only for text the pre-filter cannot clear

    return apply_patterns(text, version=version)

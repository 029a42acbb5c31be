"""Checking a tool's arguments: every bound the seed sets, enforced here because Codex strips
maxLength and maxItems from the schemas the model sees."""
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.intent.claim_text import MAX_RAW_CHARS, redacted, trimmed
from intent_loop.storage.sealing import check_request_id

SNAPSHOT_CHARS = (500, 8000)
DEFAULT_SNAPSHOT_CHARS = 6000
COMMON = ("project_root",)


def invalid(message):
    return IntentLoopError(ErrorCode.INVALID_ARGUMENT, message)


def check_names(arguments, allowed):
    unknown = sorted(set(arguments) - set(allowed) - set(COMMON))
    if unknown:
        takes = ", ".join(sorted(allowed)) or "none"
        raise invalid(f"unknown arguments: {', '.join(unknown)}; this tool takes {takes}")


def statement(value, *, what="statement"):
    """Trimmed, redacted, then THE statement rule (1-500 characters, one line)."""
    if not isinstance(value, str):
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, f"{what} must be a string")
    if len(value) > MAX_RAW_CHARS:
        raise IntentLoopError(ErrorCode.INVALID_STATEMENT, f"{what} is at most {claims_mod.MAX_STATEMENT} characters")
    text = trimmed(redacted(trimmed(value)))
    claims_mod.check_statement(text)
    return text


def facets(value, *, default):
    if value is None:
        return list(default)
    if not isinstance(value, list) or not value or len(value) > len(claims_mod.FACETS) \
            or any(f not in claims_mod.FACETS for f in value) or len(set(value)) != len(value):
        raise IntentLoopError(ErrorCode.INVALID_CLAIM,
                              f"facets: a list of distinct values of {', '.join(claims_mod.FACETS)}")
    return list(value)


def confidence(value):
    if value is None:
        raise IntentLoopError(ErrorCode.INVALID_CLAIM, "an inference needs a confidence between 0 and 1")
    return claims_mod.normalize_confidence(value)


def scope(value):
    if value is None:
        return "task"
    if value not in claims_mod.SCOPES:
        raise IntentLoopError(ErrorCode.INVALID_CLAIM, f"scope is one of {', '.join(claims_mod.SCOPES)}")
    return value


def excerpt(value):
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_RAW_CHARS:
        raise invalid(f"excerpt is a string of at most {claims_mod.MAX_EXCERPT} characters")
    text = redacted(value)
    if len(text) > claims_mod.MAX_EXCERPT:
        raise invalid(f"excerpt is at most {claims_mod.MAX_EXCERPT} characters after redaction (got {len(text)})")
    claims_mod.check_characters(text, "an excerpt")  # the same text rule as every statement
    return text


def label(value):
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_RAW_CHARS:
        raise invalid(f"label is one line of 1-{claims_mod.MAX_LABEL} characters")
    text = trimmed(redacted(value.replace("\t", " ")))
    if not text or len(text) > claims_mod.MAX_LABEL or claims_mod.has_line_break(text):
        raise invalid(f"label is one line of 1-{claims_mod.MAX_LABEL} characters after redaction")
    claims_mod.check_characters(text, "a task label")
    return text


def request_id(value):
    """The model's own idempotency key (namespaced later, so it never equals a hook's or the CLI's)."""
    if value is None:
        return None
    check_request_id(value)
    return value


def snapshot_chars(value):
    if value is None:
        return DEFAULT_SNAPSHOT_CHARS
    low, high = SNAPSHOT_CHARS
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise invalid(f"max_chars is an integer from {low} to {high}")
    return value


def claim_id(value):
    if not isinstance(value, str) or not claims_mod.is_opaque_id(value):
        raise invalid("claim_id is a claim id (or a unique prefix of at least 4 characters) from intent_get_snapshot")
    return value.lower()

"""What Guard makes of a contract file's bytes: its size limit, UTF-8 JSON without BOM, which kind of document."""

from intent_loop.base.canonical import loads
from intent_loop.guard.acceptance import (
    PROJECTION_KEYS,
    json_type_name,
    validate_provider_document,
    validate_task_contract_lite,
)

MAX_DOCUMENT_BYTES = 262_144  # Guard: "contract exceeds the 256 KiB safety limit"
_UTF8_BOM = b"\xef\xbb\xbf"


def _detect_kind(value):
    """Guard tells a provider document from a user's TaskContractLite by shape only."""
    if not isinstance(value, dict):
        return "unknown", f"$: the top level must be a JSON object, not {json_type_name(value)}"
    if "envelope" in value or "projection" in value:
        return "provider", None
    if "schema_version" in value and "contract_ref" in value:
        return "unknown", ("$: a standalone envelope is rejected by Guard; "
                           "write {\"envelope\": ..., \"projection\": ...}")
    if any(key in value for key in PROJECTION_KEYS):
        return "lite", None
    return "unknown", "$: neither a provider document nor a seven-field TaskContractLite"


def _parse(data):
    """(parsed value, None) or (None, the file-level reason Guard would call it invalid)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        return None, f"$: {len(data)} bytes exceeds Guard's {MAX_DOCUMENT_BYTES}-byte limit"
    if data.startswith(_UTF8_BOM):
        return None, "$: starts with a UTF-8 byte order mark, which Guard's JSON.parse rejects"
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"$: not valid UTF-8 at byte {exc.start}"
    try:
        return loads(text), None
    except ValueError as exc:
        return None, f"$: not JSON: {exc}"
    except RecursionError:
        return None, "$: not JSON this parser can read: nested too deeply"


def validate_document_bytes(data):
    """What Guard makes of a file's bytes: (kind, parsed value or None, every error)."""
    parsed, problem = _parse(data)
    if problem:
        return "unknown", None, [problem]
    kind, problem = _detect_kind(parsed)
    if kind == "provider":
        return kind, parsed, validate_provider_document(parsed)
    if kind == "lite":
        return kind, parsed, validate_task_contract_lite(parsed)
    return kind, parsed, [problem]

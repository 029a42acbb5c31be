"""The provider document we write: its envelope, the snapshot hash Guard recomputes, and its file bytes."""

from intent_loop.base.canonical import canonical_bytes, dumps, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError

SCHEMA_VERSION = "1.0"
SOURCE = "user-intent-plugin"


def projection_bytes(projection):
    """The exact bytes Guard hashes: keys sorted, no whitespace, raw UTF-8, no final newline."""
    return canonical_bytes(projection)


def projection_sha256(projection):
    return sha256_hex(projection_bytes(projection))


def build_document(projection, *, contract_ref, contract_version, source_message_refs, updated_at):
    """The provider document for `projection`, sealed with its canonical hash (not validated)."""
    envelope = {
        "schema_version": SCHEMA_VERSION,
        "contract_ref": contract_ref,
        "contract_version": contract_version,
        "source": SOURCE,
        "source_message_refs": list(source_message_refs),
        "snapshot_sha256": projection_sha256(projection),
        "updated_at": updated_at,
    }
    return {"envelope": envelope, "projection": projection}


def _pretty(value, indent):
    """Like json.dumps(indent=2, sort_keys=True, ensure_ascii=False), without importing json."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        members = [f"{inner}{dumps(key)}: {_pretty(value[key], inner)}" for key in sorted(value)]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    if isinstance(value, list) and value:
        items = [inner + _pretty(item, inner) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    return dumps(value)


def render_document(doc):
    """The file's bytes: UTF-8 without BOM, 2-space indent, sorted keys, final newline."""
    try:
        return (_pretty(doc, "") + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        message = "text contains a lone surrogate; send valid Unicode"
        raise IntentLoopError(ErrorCode.INVALID_TEXT, message) from exc

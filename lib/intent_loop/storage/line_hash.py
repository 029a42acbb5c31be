"""Where a sealed ledger line keeps its `event_hash`, and how a line is checked against it.

A line is canonical JSON, so `,"event_hash":"<64 hex>"` sits at one place (right after the
actor) and a string value can never contain it (its quotes would be escaped). The hash covers
the line without that field. The ledger's verifier, the checkpoint's last-line re-check and the
request index's end check all read a line this way.
"""
from intent_loop.base.canonical import sha256_hex

HASH_FIELD = b',"event_hash":"'
_FIELD_AND_VALUE = len(HASH_FIELD) + 64 + 1  # the field, 64 hex digits, the closing quote


def find_hash_field(line):
    """Offset of the event_hash field in a line (without its LF), or -1."""
    return line.find(HASH_FIELD)


def recorded_hash(line, field):
    """The 64 bytes the line records as its event_hash, for a field found at `field`."""
    start = field + len(HASH_FIELD)
    return line[start : start + 64]


def content_hash(line, field):
    """SHA-256 (hex) of the line without its event_hash field: what event_hash must equal."""
    return sha256_hex(line[:field] + line[field + _FIELD_AND_VALUE :])


def self_verified_hash(line):
    """The line's event_hash when the line hashes to it, else None (no JSON parsing)."""
    field = find_hash_field(line)
    if field < 0:
        return None
    recorded = recorded_hash(line, field).decode("ascii", "replace")
    return recorded if content_hash(line, field) == recorded else None

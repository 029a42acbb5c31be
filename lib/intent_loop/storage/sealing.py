"""Sealing a draft into a hash-chained ledger line, and the request id and fingerprint an append carries.

The envelope it fills (schema version, actors) is defined beside its verifier in `ledger`: the
read path loads that module alone, appends load this one too.
"""

from intent_loop.base.canonical import canonical_bytes, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage.ledger import ACTORS, REQUEST_EVENT_COUNT, SCHEMA_VERSION

_REQUEST_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:@-")


def check_request_id(request_id):
    if (not isinstance(request_id, str) or not 1 <= len(request_id) <= 200
            or not _REQUEST_ID_CHARS.issuperset(request_id)):
        raise IntentLoopError(
            ErrorCode.INVALID_REQUEST_ID,
            "a request id is 1-200 characters of A-Z a-z 0-9 _ . : @ -",
        )
    from intent_loop.redaction.redact import has_secret  # cheap: its pre-filter clears ordinary ids without `re`

    if has_secret(request_id):
        raise IntentLoopError(ErrorCode.CREDENTIAL_IN_ID,
                              "a request id must not contain a credential; use an opaque id")


def request_fingerprint(operation, params):
    """SHA-256 over the operation and its normalized parameters (never a raw body)."""
    return sha256_hex(canonical_bytes({"operation": operation, "params": params}))


def seal(draft, *, project_id, request_id, prev_hash, occurred_at):
    """Turn a draft into a sealed event dict and its ledger line (bytes with LF)."""
    if draft.actor not in ACTORS:
        raise IntentLoopError(ErrorCode.INVALID_EVENT, f"unknown actor {draft.actor!r}")
    event = {
        "schema_version": SCHEMA_VERSION,
        "event_id": draft.event_id,
        "event_type": draft.event_type,
        "project_id": project_id,
        "task_id": draft.task_id,
        "occurred_at": occurred_at,
        "actor": draft.actor,
        "request_id": request_id,
        "payload": draft.payload,
    }
    return chain(event, prev_hash=prev_hash)


def chain(event, *, prev_hash):
    """Link an envelope to `prev_hash` and seal it (any old event_hash is replaced): (event, line).

    Appends use it through seal(); deletion uses it to re-chain the events it keeps.
    """
    event = dict(event, prev_hash=prev_hash)
    event.pop("event_hash", None)
    event["event_hash"] = sha256_hex(canonical_bytes(event))
    return event, canonical_bytes(event) + b"\n"


def recount_requests(events):
    """Make every request's first event state its current length again, in place (deletion drops
    events of a request; migration and recovery keep whole requests).

    A request is a run of consecutive events with one request id. A run that carries the field
    anywhere gets it on its first event, with the run's length, and on no other; a run without it
    was written by the replace protocol and stays so (each such event is complete by itself).
    """
    start = 0
    while start < len(events):
        stop = start + 1
        while stop < len(events) and events[stop]["request_id"] == events[start]["request_id"]:
            stop += 1
        run = events[start:stop]
        if any(REQUEST_EVENT_COUNT in event["payload"] for event in run):
            for offset, event in enumerate(run):
                payload = {k: v for k, v in event["payload"].items() if k != REQUEST_EVENT_COUNT}
                if offset == 0:
                    payload[REQUEST_EVENT_COUNT] = len(run)
                events[start + offset] = dict(event, payload=payload)
        start = stop
    return events

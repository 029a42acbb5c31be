"""Schema migration of a project's ledger: verify the whole source chain, rewrite, keep a manifest.

Schema 1 is the only schema, so migrating to it is the identity: a verified schema-1 ledger is
left byte for byte as it is and the report says so. A future schema adds a step to STEPS; the
rewrite then goes through a verified temp file, fsync and atomic replace under the project lock,
with a manifest in quarantine/ naming both chains.
"""
import time

from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes, sha256_hex
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import quarantine
from intent_loop.storage.atomic import replace_atomically
from intent_loop.storage.ledger import SCHEMA_VERSION
from intent_loop.storage.reading import verify_all
from intent_loop.storage.replacement import replace_ledger
from intent_loop.storage.transaction import Transaction

# from_version -> function(event) -> event at from_version + 1; empty while schema 1 is current
STEPS = {}


def migrate(paths, reducer, *, deadline, target=SCHEMA_VERSION):
    """Bring the ledger to `target`; returns a report dict. Never invents or drops events."""
    if target != SCHEMA_VERSION:
        raise IntentLoopError(ErrorCode.FUTURE_SCHEMA, f"this intent-loop writes schema {SCHEMA_VERSION}, not {target}")
    source = verify_all(paths, reducer)  # the whole source chain, ignoring the cache
    if not STEPS:
        return {"action": "identity", "schema_version": SCHEMA_VERSION, "events": source.count,
                "last_hash": source.last_hash}
    with Transaction(paths, reducer, deadline=deadline) as tx:  # pragma: no cover - no step exists yet
        old = tx.data
        new = _rewrite(old)
        if new == old:
            return {"action": "identity", "schema_version": SCHEMA_VERSION, "events": source.count,
                    "last_hash": source.last_hash}
        manifest = {"kind": "migration", "to_schema": SCHEMA_VERSION, "events": source.count,
                    "source_sha256": sha256_hex(old), "result_sha256": sha256_hex(new),
                    "migrated_at": format_utc(time.time())}
        replace_atomically(fast_os.path.join(paths.quarantine_dir, quarantine.migration_manifest_name(time.time())),
                           canonical_bytes(manifest) + b"\n")
        replace_ledger(tx, new, expect_count=source.count)
        return dict(manifest, action="migrated")


def _rewrite(data):  # pragma: no cover - used once a second schema exists
    raise IntentLoopError(ErrorCode.FUTURE_SCHEMA, "no migration step is defined yet")

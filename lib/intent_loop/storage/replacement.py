"""Putting a whole new ledger in place of a locked project's old one, the seed's way (temp file,
fsync, rename, directory fsync: storage/atomic.py), then going on from it in the same transaction:
a torn tail cut off (its digest kept in quarantine/), and the rewrite a deletion or a recovery makes,
verified in full before it is renamed over the ledger.

Rare paths (a tail a killed writer left, the command line's delete, recover and migrate): a
transaction that only appends never loads this module.
"""
from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes, sha256_hex
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import quarantine
from intent_loop.storage.atomic import replace_atomically
from intent_loop.storage.ledger import empty_verified, fold_lines, read_range


def cut_torn_tail(tx, *, now):
    """Summarize what follows the verified prefix (a partial last line, or the lines of a request
    cut short) by length and digest only, then cut it off durably."""
    verified = tx.verified
    tail = read_range(tx.fd, verified.size, verified.size + verified.torn_tail)
    record = {
        "kind": "incomplete_request" if b"\n" in tail else "torn_tail",
        "byte_length": len(tail),
        "sha256": sha256_hex(tail),
        "offset": verified.size,
        "detected_at": format_utc(now()),
    }
    name = quarantine.torn_tail_name(now())
    replace_atomically(fast_os.path.join(tx.paths.quarantine_dir, name), canonical_bytes(record) + b"\n")
    replace_atomically(tx.paths.ledger, b"", prefix=(tx.fd, verified.size))
    verified.torn_tail = 0
    tx.continue_from(verified)


def replace_ledger(tx, new_data, *, expect_count):
    """Rewrite the whole ledger (deletion, recovery): verify `new_data` fully first."""
    fresh = empty_verified(tx.reducer)
    fold_lines(new_data, fresh, tx.reducer, project_id=tx.paths.project_id)
    if fresh.count != expect_count or fresh.torn_tail:
        raise IntentLoopError(ErrorCode.INVALID_EVENT, "the rewritten ledger did not verify; nothing was replaced")
    tx.check_deadline()
    replace_atomically(tx.paths.ledger, new_data)
    tx.continue_from(fresh)


def replace_ledger_streamed(tx, write, *, on_progress=None):
    """Rewrite the whole ledger without holding it in memory (deletion at any size).

    `write(out_fd)` writes the new ledger into a temp file beside it and returns the number of
    events written (or a tuple starting with it); `atomic.replace_atomically` syncs it, this
    verifies it in full with the streaming verifier, and only then is it renamed over the
    ledger (the seed's replace protocol). Returns what `write` returned."""
    from intent_loop.storage.cache.bulk_verify import fold_stream

    fresh = empty_verified(tx.reducer)

    def verified_in_full(out, result):
        fold_stream(out, fresh, tx.reducer, project_id=tx.paths.project_id,
                    end=fast_os.fstat(out).st_size, on_progress=on_progress)
        count = result[0] if isinstance(result, tuple) else result
        if fresh.count != count or fresh.torn_tail:
            raise IntentLoopError(ErrorCode.INVALID_EVENT,
                                  "the rewritten ledger did not verify; nothing was replaced")
        tx.check_deadline()

    result = replace_atomically(tx.paths.ledger, fill=write, check=verified_in_full)
    tx.continue_from(fresh)
    return result

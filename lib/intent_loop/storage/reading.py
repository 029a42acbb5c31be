"""The verified state of a project's ledger, from its cache's checkpoint onward: what every reader
and writer starts from. Above both the line protocol (ledger.py) and the derived cache
(cache/), which it joins: read the checkpoint, check the ledger still holds its last line, and
verify and fold only what follows (streamed through cache/bulk_verify.py when that is large).
"""
from intent_loop.base import fast_os
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.cache import chain_marker, checkpoint
from intent_loop.storage.ledger import empty_verified, fold_lines, is_project_present, open_ledger, read_range

# Above this many unverified bytes the orjson streaming verifier (storage/cache/bulk_verify.py) is cheaper
# than reading the suffix into memory and folding it with the stdlib; a hook never gets here with
# that much (load_verified's max_unverified), so it never imports orjson.
BULK_BYTES = 4 << 20


def resume_point(fd, size, cached):
    """The cached checkpoint's Verified if the open ledger still holds its last line, else None."""
    if cached is None:
        return None
    v = cached.verified
    if v.size == 0 or (v.size <= size and checkpoint.line_hash_at(
            read_range(fd, v.last_line_start, v.size), 0, v.size - v.last_line_start,
            missing_lf=v.missing_lf) == v.last_hash):
        return v
    return None


def verify_from_checkpoint(fd, size, cached, reducer, *, project_id, start=False):
    """The verified state of an open ledger, reading only what follows a still-valid checkpoint.

    `start`: `resume_point` was already asked (its answer is `cached`, a Verified or None)."""
    v = cached if start else resume_point(fd, size, cached)
    if v is None:
        v = empty_verified(reducer)
    if size - v.size > BULK_BYTES:
        from intent_loop.storage.cache.bulk_verify import fold_stream

        return fold_stream(fd, v, reducer, project_id=project_id, end=size)
    return fold_lines(read_range(fd, v.size, size), v, reducer, project_id=project_id, base=v.size)


def load_verified(paths, reducer, *, write_cache=True, max_unverified=None):
    """The verified state of the project's ledger (read path: creates nothing but the cache).

    `max_unverified` (a hook's budget): with more unverified bytes than that after the checkpoint,
    fail with CACHE_REBUILDING instead of verifying them; the caller has the cache rebuilt after its
    answer (storage/cache/cache_upkeep.py). A chain-broken marker left by the daily scrub fails every read
    with CHAIN_BROKEN_FOUND (storage/cache/chain_marker.py).
    """
    if not is_project_present(paths):
        return empty_verified(reducer)
    st = paths_mod.check_regular_file(paths.ledger)
    if st is None:
        return empty_verified(reducer)
    chain_marker.raise_if_marked(paths)
    cached = checkpoint.load(paths, reducer)
    if cached is not None and checkpoint.is_current(cached, st) and checkpoint.last_line_matches(paths, cached):
        return cached.verified
    fd, st = open_ledger(paths)
    if fd is None:
        return empty_verified(reducer)
    try:
        start = resume_point(fd, st.st_size, cached)
        if max_unverified is not None and st.st_size - (start.size if start else 0) > max_unverified:
            raise IntentLoopError(ErrorCode.CACHE_REBUILDING,
                                  f"{st.st_size - (start.size if start else 0)} bytes of the ledger follow the "
                                  "checkpoint; the cache is rebuilt after this answer, retry in a few seconds")
        verified = verify_from_checkpoint(fd, st.st_size, start, reducer, project_id=paths.project_id, start=True)
    finally:
        fast_os.close(fd)
    if write_cache:
        checkpoint.save(paths, reducer, verified, st)
    return verified


def verify_all(paths, reducer, *, on_progress=None, on_event=None, leave_checkpoint=False, report=None):
    """Full verification from the first byte, ignoring the cache. Returns Verified or raises.

    Streams the ledger through the orjson verifier (`bulk_verify`), so memory stays bounded at any
    size. `leave_checkpoint` publishes the result as the cache (read-only commands that verified
    everything leave a fresh checkpoint behind; see `storage/cache/cache_upkeep.py`); with `report` the
    old cache is first compared with the result and a difference reported (CACHE_MISMATCH).
    """
    from intent_loop.storage.cache import cache_upkeep  # the bulk paths only: never on a hook's read path

    return cache_upkeep.verify_everything(paths, reducer, on_progress=on_progress, on_event=on_event,
                                          leave_checkpoint=leave_checkpoint, report=report)

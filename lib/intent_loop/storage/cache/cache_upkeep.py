"""Keeping the derived cache healthy without the project lock: full verification that leaves a
checkpoint behind, the rebuild of a missing or far-behind checkpoint, and the daily scrub.

A hook's read path verifies only what follows the checkpoint, inside a 2 s deadline. When that
suffix is large (the cache was deleted, or an old-format cache was ignored) the hook answers
without context and the after-answer child calls `rebuild` with a longer budget; at most once a
day the child also calls `scrub`, which verifies the whole chain and re-derives the state to
compare it with the cache. Both read the ledger without the project lock (appends go on; a
rewrite by deletion or recovery replaces the file, and the open descriptor keeps reading the old
one consistently), publish the checkpoint atomically (temp file + rename), and run one at a time
per project through a non-blocking flock on `cache/rebuild.lock`: a second one finds it held and
leaves at once. Nothing here takes or waits for the project lock, so a mutation is never delayed.

A checkpoint published from a ledger that was replaced meanwhile would be ignored anyway (its last
line no longer matches), but it could hold the state of a just-deleted claim; so the ledger's
identity is compared before and after publishing, and a checkpoint of a replaced ledger is removed.
"""
import time

from intent_loop.base import fast_os
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.cache import chain_marker, checkpoint
from intent_loop.storage.ledger import empty_verified, is_project_present, open_ledger


def fold_stream(*args, **kwargs):
    """The streaming verifier, loaded on first use: it brings `re` and orjson, and every hook's
    after-answer child imports this module to ask scrub_due, which is false on all but one run a day."""
    from intent_loop.storage.cache.bulk_verify import fold_stream as fold

    return fold(*args, **kwargs)


REBUILD_LOCK = "rebuild.lock"
SCRUB_STAMP = "scrub.stamp"
SCRUB_INTERVAL = 24 * 3600  # seconds between two scrubs of one project
REBUILD_BUDGET = 30.0  # seconds the after-answer child may spend on a rebuild or a scrub
# Damage codes that mean the chain itself is broken (a future schema is not damage).
_BROKEN = frozenset((ErrorCode.LEDGER_MALFORMED, ErrorCode.LEDGER_HASH_MISMATCH, ErrorCode.LEDGER_CHAIN_BROKEN,
                     ErrorCode.FOREIGN_PROJECT))


def same_state(cached, fresh, reducer=None):
    """Does the cached checkpoint hold what the ledger folds to? The one place the scrub compares.

    A sharded cache (a reducer with `cache_plain`) is compared strictly: every shard loaded and
    every pointer resolved, and a check that fails is a difference, where a normal read would
    quietly re-fold and repair (so the scrub still reports the damage)."""
    if reducer is not None and hasattr(reducer, "cache_plain"):
        from intent_loop.storage.cache.cache_store import Untrusted

        # the fast proof first: the cache's files say exactly what a save of the fold would write
        # (no pointer resolved; at 100,000 events resolving them all took most of the comparison)
        if hasattr(reducer, "cache_same_encoding") and reducer.cache_same_encoding(cached.verified.state,
                                                                                   fresh.state):
            return True
        try:
            return reducer.cache_plain(cached.verified.state, strict=True) == reducer.cache_plain(fresh.state)
        except (Untrusted, IntentLoopError, KeyError, TypeError, ValueError):
            return False
    return cached.verified.state == fresh.state


def verify_everything(paths, reducer, *, on_progress=None, on_event=None, leave_checkpoint=False, report=None):
    """Full verification from the first byte, streamed; raises on damage (see reading.verify_all).

    `report` (with `leave_checkpoint`): also compare the cache with what the ledger folds to, as
    the scrub does (`_fold_comparing`), and call `report(IntentLoopError(CACHE_MISMATCH))` when
    they differ; the checkpoint left behind replaces it. Skipped while another upkeep runs."""
    verified = empty_verified(reducer)
    if not is_project_present(paths):
        return verified
    with _UpkeepLock(paths) if report is not None else _NO_LOCK as lock:
        fd, st = open_ledger(paths)
        if fd is None:
            return verified
        try:
            if report is not None and lock.held:
                cached, matches = _fold_comparing(paths, reducer, fd, st, verified, on_event=on_event,
                                                  on_progress=on_progress)
            else:
                cached = matches = None
                fold_stream(fd, verified, reducer, project_id=paths.project_id, end=st.st_size,
                            on_event=on_event, on_progress=on_progress)
        finally:
            fast_os.close(fd)
        if leave_checkpoint:
            publish(paths, reducer, verified, st, full=True, save=not _holds_all(cached, matches, verified, st))
    if matches is False:
        report(_mismatch(cached))
    return verified


def _fold_comparing(paths, reducer, fd, st, fresh, *, on_event=None, on_progress=None):
    """Fold the whole ledger into `fresh`, stopping at the cached checkpoint on the way to compare
    (the one comparison the scrub, `doctor` and `verify` share): (cached, True/False, or None
    when there is no usable checkpoint). Raises the ledger's error on damage."""
    cached = checkpoint.load(paths, reducer)
    matches = None
    if cached is not None and 0 < cached.verified.size <= st.st_size:
        fold_stream(fd, fresh, reducer, project_id=paths.project_id, end=st.st_size,
                    stop_at=cached.verified.size, on_event=on_event, on_progress=on_progress)
        # the count and last line's offset too, not only size and hash: a wrong count passed, and
        # made each later recovery from that cache fail LEDGER_CHAIN_BROKEN over a sound ledger
        # (missing_lf is left out: a fold that stops at a checkpoint may see the LF an append added)
        matches = (all(getattr(fresh, name) == getattr(cached.verified, name)
                       for name in ("size", "count", "last_hash", "last_line_start"))
                   and same_state(cached, fresh, reducer))
    fold_stream(fd, fresh, reducer, project_id=paths.project_id, end=st.st_size, on_event=on_event,
                on_progress=on_progress)
    return cached, matches


def _holds_all(cached, matches, fresh, st):
    """The cache was proven equal (`matches`) at the very end of the ledger `st` describes, so it
    already is the checkpoint a save would leave: rewriting its ~800 files was a fifth of `verify`
    at 100,000 events, and the daily scrub did the same each day."""
    return matches is True and fresh.size == cached.verified.size and checkpoint.is_current(cached, st)


def _mismatch(cached):
    return IntentLoopError(ErrorCode.CACHE_MISMATCH, f"the cache did not match the ledger's first "
                                                     f"{cached.verified.count} events; it was rebuilt from the ledger")


class _NoLock:
    held = True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        pass


_NO_LOCK = _NoLock()


def publish(paths, reducer, verified, st, *, full=False, save=True):
    """Save `verified` (of the ledger whose fstat is `st`) as the checkpoint; best effort.

    `full`: it was verified from the first byte, so a chain-broken marker is stale and the scrub
    is not due for another day. `save=False`: the cache already holds exactly `verified` (the
    caller proved it), so only the markers change.
    """
    try:
        paths_mod.ensure_directory(paths.cache_dir)
    except IntentLoopError:
        return
    if not _same_file(paths, st):
        return
    if save:
        checkpoint.save(paths, reducer, verified, st)
    if not _same_file(paths, st):  # replaced while saving: never leave the old ledger's state behind
        try:
            fast_os.unlink(fast_os.path.join(paths.cache_dir, checkpoint.STATE_FILE))
        except OSError:
            pass
        return
    if full:
        chain_marker.clear(paths)
        _touch(fast_os.path.join(paths.cache_dir, SCRUB_STAMP))


def _same_file(paths, st):
    try:
        now = fast_os.lstat(paths.ledger)
    except OSError:
        return False
    return (now.st_ino, now.st_dev) == (st.st_ino, st.st_dev)


def _touch(path):
    try:
        fd = fast_os.open(path, fast_os.O_WRONLY | fast_os.O_CREAT | fast_os.O_NOFOLLOW, 0o600)
        fast_os.close(fd)
        fast_os.utime(path)
    except OSError:
        pass


class _UpkeepLock:
    """A non-blocking exclusive flock on `cache/rebuild.lock`; `held` is False when another
    rebuild or scrub of this project runs (then this one does nothing)."""

    def __init__(self, paths):
        self.fd = None
        self.held = False
        try:
            paths_mod.ensure_directory(paths.cache_dir)
            self.fd = fast_os.open(fast_os.path.join(paths.cache_dir, REBUILD_LOCK),
                                   fast_os.O_RDONLY | fast_os.O_CREAT | fast_os.O_NOFOLLOW, 0o600)
        except (OSError, IntentLoopError):
            return
        from intent_loop.base import platform

        try:
            self.held = platform.wait_for_lock(self.fd, until=0, pause=0)
        except OSError:  # no flock on this filesystem: run anyway, publication is atomic
            self.held = True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self.fd is not None:
            fast_os.close(self.fd)  # closing the last descriptor releases the flock


def _open_for_upkeep(paths, lock, *, unless_marked=False):
    """(None, fd, fstat) of the ledger opened for a rebuild or scrub under `lock`, or why there is
    nothing to do and (None, None): "busy" (another upkeep holds the lock), "marked" (with
    `unless_marked`: the chain is broken, recover first) or "absent"."""
    if not lock.held:
        return "busy", None, None
    if unless_marked and fast_os.path.exists(chain_marker.marker_path(paths)):
        return "marked", None, None
    if not is_project_present(paths):
        return "absent", None, None
    fd, st = open_ledger(paths)
    return (None, fd, st) if fd is not None else ("absent", None, None)


def _resume_point(fd, size, cached):
    """The cached checkpoint if the ledger still holds its last line where it says, else None."""
    if cached is None:
        return None
    v = cached.verified
    if v.size == 0:
        return v
    if v.size > size:
        return None
    line = fast_os.pread(fd, v.size - v.last_line_start, v.last_line_start)
    return v if checkpoint.line_hash_at(line, 0, len(line)) == v.last_hash else None


def rebuild(paths, reducer):
    """Bring the checkpoint up to the end of the ledger (from the old one when it still matches).

    Returns "busy" (another upkeep runs), "marked" (the chain is broken: recover first), "absent"
    or "rebuilt". Raises the ledger's error on damage (the caller logs it)."""
    with _UpkeepLock(paths) as lock:
        refusal, fd, st = _open_for_upkeep(paths, lock, unless_marked=True)
        if refusal is not None:
            return refusal
        try:
            start = _resume_point(fd, st.st_size, checkpoint.load(paths, reducer))
            verified = start if start is not None else empty_verified(reducer)
            fold_stream(fd, verified, reducer, project_id=paths.project_id, end=st.st_size)
        finally:
            fast_os.close(fd)
        publish(paths, reducer, verified, st, full=start is None)
        return "rebuilt"


def scrub_due(paths, *, now=None):
    """True when this project's whole chain was not verified in the last SCRUB_INTERVAL seconds."""
    try:
        stamp = fast_os.stat(fast_os.path.join(paths.cache_dir, SCRUB_STAMP))
    except OSError:
        return True
    return (time.time() if now is None else now) - stamp.st_mtime >= SCRUB_INTERVAL


def scrub(paths, reducer, *, report):
    """Verify the whole chain, re-derive the state and compare it with the cache.

    A difference rebuilds the checkpoint and calls `report(IntentLoopError(CACHE_MISMATCH))`; a
    broken chain replaces the checkpoint with the chain-broken marker and reports
    CHAIN_BROKEN_FOUND. Returns "busy", "absent", "ok", "rebuilt" or "broken"."""
    with _UpkeepLock(paths) as lock:
        refusal, fd, st = _open_for_upkeep(paths, lock)
        if refusal is not None:
            return refusal
        try:
            fresh = empty_verified(reducer)
            try:
                cached, matches = _fold_comparing(paths, reducer, fd, st, fresh)
            except IntentLoopError as exc:
                if exc.code not in _BROKEN:
                    raise
                chain_marker.write(paths, exc)
                _touch(fast_os.path.join(paths.cache_dir, SCRUB_STAMP))
                report(IntentLoopError(ErrorCode.CHAIN_BROKEN_FOUND,
                                       f"the daily check found the chain broken at line {exc.line} ({exc.code})",
                                       line=exc.line))
                return "broken"
        finally:
            fast_os.close(fd)
        publish(paths, reducer, fresh, st, full=True, save=not _holds_all(cached, matches, fresh, st))
        if matches is False:
            report(_mismatch(cached))
            return "rebuilt"
        return "ok"

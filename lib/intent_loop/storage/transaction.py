"""Locked mutations of one project's ledger: `Transaction` and the idempotent `mutate`.

The write half of the storage protocol: take the directory lock, verify from the checkpoint, append
the request's lines in place and sync them (`append`; a new ledger is created the seed's way: temp
file, fsync, rename, directory fsync; a torn tail's cut, deletion and recovery replace the whole
file that way too: storage/replacement.py), release. Sealing, verification and the lock-free read
path are in `ledger`.
"""
import time

from intent_loop.base import fast_os
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.cache import checkpoint
from intent_loop.storage.ledger import empty_verified, open_ledger, read_range
from intent_loop.storage.reading import verify_from_checkpoint
from intent_loop.storage.sealing import check_request_id, request_fingerprint, seal


class Transaction:
    """A locked mutation of one project: `with Transaction(paths, reducer, deadline=d) as tx:`.

    Entering takes the project lock, removes residue of killed processes, verifies the ledger
    from the cached checkpoint and quarantines a torn tail. `append` durably adds events.

    `hand_over(job)`: a caller that answers someone before it exits (a hook) gets, at a successful
    exit, the derived work a write leaves (saving the cache, the syncs asked for by `sync_later`)
    and the release of the lock, as `job(deadline)` to run once its answer is out; the lock stays
    held until then, so no other writer sees the cache behind. Whoever takes the job must run it
    (a process that dies first leaves a lock the kernel has already let go: storage.lock reclaims
    it). Nothing durable moves: the ledger's sync is still made before `append` returns.

    `watch`: told when `append` starts writing (`watch.writing()`, past its last deadline check)
    and when the request's lines are in the ledger for every reader (`watch.written()`, before
    their sync, or when `mutate` finds them recorded by an earlier try of the same request). A
    hook uses it to give the commit time to finish, and never to answer "not recorded" for lines
    that were written (hook.runtime.CommitWatch).
    """

    def __init__(self, paths, reducer, *, deadline, resume=None, hand_over=None, watch=None, _now=time.time):
        self.paths = paths
        self.reducer = reducer
        self.deadline = deadline
        # A Verified the caller already read without the lock (a hook's read path), folded by the
        # same reducer for the same project: used instead of parsing the cache a second time.
        # Like the cache, it is only a candidate checkpoint, re-checked against the bytes under
        # the lock, then continued (and updated) in place, so after a failed transaction the
        # caller must not use it again.
        self._resume = resume
        self._now = _now
        self.lock = None
        self.fd = None  # the current ledger, open for copying its verified prefix
        self.verified = None
        self.durability_uncertain = False
        self.index_end = None  # how far the request index is known to cover the ledger
        self._hand_over = hand_over
        self._watch = watch
        self._cache_due = False  # a cache save left for the handed-over job
        self._later = []  # syncs left for it (sync_later)

    @property
    def state(self):
        return self.verified.state

    def __enter__(self):
        from intent_loop.storage.lock import ProjectLock  # mutations only: reads never lock

        paths_mod.ensure_project_layout(self.paths)
        self.lock = ProjectLock(self.paths.dir, deadline=self.deadline)
        self.lock.acquire()
        try:
            self._prepare()
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, exc_type, *exc_info):
        self._close()
        if exc_type is None and self._hand_over is not None:
            self._hand_over(self._finish)
            return
        self._finish(self.deadline)  # a failure after an append still leaves its cache saved

    def _finish(self, deadline):
        """The handed-over rest of a committed transaction: what it left derived, then the lock."""
        try:
            if self._cache_due:
                self._cache_due = False
                self._save_cache_now()
            for sync in self._later:
                try:
                    sync()
                except OSError:
                    pass  # the renamed file is in place for every reader; only its durability is uncertain
        finally:
            self.lock.release()

    def sync_later(self, sync):
        """Run `sync()` (making a file already renamed into place durable) after the caller's answer
        when the work is handed over, else now."""
        if self._hand_over is None:
            sync()
        else:
            self._later.append(sync)

    def _close(self):
        if self.fd is not None:
            fast_os.close(self.fd)
            self.fd = None

    def _reopen(self):
        self._close()
        self.fd, _st = open_ledger(self.paths)

    @property
    def data(self):
        """The whole verified ledger (deletion and recovery need it; appends never read it)."""
        return read_range(self.fd, 0, self.verified.size) if self.fd is not None else b""

    def _prepare(self):
        self.lock.clean_residue()
        _remove_orphan_temps(self.paths)
        from intent_loop.storage.cache.chain_marker import raise_if_marked

        raise_if_marked(self.paths)  # the daily scrub found the chain broken: no write until recover
        self.fd, st = open_ledger(self.paths)
        # a ledger that grew since the lock-free read had its cache saved since: a sharded read's
        # lazy parts may name slots rewritten meanwhile, so the fresh checkpoint is the candidate
        overtaken = self.fd is not None and st.st_size != getattr(self._resume, "size", None)
        if self._resume is not None and not (overtaken and hasattr(self.reducer, "cache_split")):
            cached = checkpoint.Cached(self._resume, identity=None)
        else:
            cached = checkpoint.load(self.paths, self.reducer)
        if self.fd is None:
            self.verified = empty_verified(self.reducer)
        else:
            self.verified = verify_from_checkpoint(self.fd, st.st_size, cached, self.reducer,
                                                   project_id=self.paths.project_id)
        if self.verified.torn_tail:
            from intent_loop.storage.replacement import cut_torn_tail  # rare: a killed writer's tail

            cut_torn_tail(self, now=self._now)
        self.lock.heartbeat()

    def find_request(self, request_id):
        """Events already recorded under `request_id` (the request index, kept current here)."""
        from intent_loop.storage import request_index

        return request_index.find(self, request_id)

    def check_deadline(self):
        if time.monotonic() >= self.deadline:
            raise IntentLoopError(ErrorCode.DEADLINE_EXCEEDED,
                                  "ran out of time before writing; nothing was changed, retry")

    def append(self, drafts, *, request_id, fingerprint):
        """Seal and durably append `drafts` (one request); returns the sealed events."""
        check_request_id(request_id)
        if not drafts:
            return []
        occurred_at = format_utc(self._now())
        prev = self.verified.last_hash
        events, lines = [], []
        for index, draft in enumerate(drafts):
            if index == 0:  # the request's fingerprint and its length, which readers check complete
                draft.payload = dict(draft.payload, request_fingerprint=fingerprint,
                                     request_event_count=len(drafts))
            event, line = seal(draft, project_id=self.paths.project_id, request_id=request_id,
                               prev_hash=prev, occurred_at=occurred_at)
            prev = event["event_hash"]
            events.append(event)
            lines.append(line)
        self.check_deadline()
        self.lock.heartbeat()
        written = committing = None
        if self._watch is not None:
            self._watch.writing(self.paths)
            written, committing = self._watch.written, getattr(self._watch, "committing", None)
        first_offset = self.verified.size
        try:
            if self.fd is None:  # creating the ledger: the seed's temp file + fsync + rename
                from intent_loop.storage.atomic import replace_atomically  # only then: the read path needs none

                replace_atomically(self.paths.ledger, b"".join(lines), on_replaced=written, on_committing=committing)
                self._reopen()
            else:
                from intent_loop.storage.append import append_durably

                ending = b"\n" if self.verified.missing_lf else b""  # an editor's "no newline at end of file"
                append_durably(self.paths.ledger, self.fd, self.verified.size, ending + b"".join(lines),
                               on_written=written, on_committing=committing)
                if ending:
                    first_offset += 1
                    self.verified.size += 1
                    self.verified.missing_lf = False
                    if self.index_end == first_offset - 1:
                        self.index_end = first_offset
        except IntentLoopError as exc:
            if exc.code != ErrorCode.DURABILITY_UNCERTAIN:
                raise
            self.durability_uncertain = True
            if self.fd is None:
                self._reopen()
        self._advance(lines, events, first_offset)
        from intent_loop.storage import request_index

        try:
            request_index.record(self, request_id, first_offset, events[-1]["event_hash"])
        except (OSError, IntentLoopError):
            # After the ledger's sync everything is derived: a full disk here costs the index a
            # rebuild, never the answer "recorded" (the events are on disk, a retype would duplicate)
            self.index_end = None
            request_index.ask_for_rebuild(self)
        if self.durability_uncertain:
            raise IntentLoopError(
                ErrorCode.DURABILITY_UNCERTAIN,
                "the events were written but not confirmed on disk; a retry with the same request id returns them",
            )
        return events

    def _advance(self, lines, events, first_offset):
        offset = first_offset
        positioned = getattr(self.reducer, "wants_position", False)
        for event, line in zip(events, lines, strict=False):
            if positioned:  # the cache points at the line instead of copying its text
                self.reducer.apply(self.verified.state, event, (offset, len(line) - 1))
            else:
                self.reducer.apply(self.verified.state, event)
            self.verified.last_line_start = offset
            offset += len(line)
        self.verified.size = offset
        self.verified.count += len(events)
        self.verified.last_hash = events[-1]["event_hash"]
        self._save_cache()

    def _save_cache(self):
        if self._hand_over is not None:
            self._cache_due = True  # saved by the handed-over job, once, however many appends
            return
        self._save_cache_now()

    def _save_cache_now(self):
        st = paths_mod.check_regular_file(self.paths.ledger)
        if st is not None:
            checkpoint.save(self.paths, self.reducer, self.verified, st)

    def continue_from(self, verified):
        """Go on from a ledger just put in place of the old one (storage/replacement.py), whose
        verified state is `verified`: reopened, the request index left to revalidate itself (offsets
        moved), the cache saved."""
        self._reopen()
        self.index_end = None
        self.verified = verified
        self._save_cache()


def _remove_orphan_temps(paths):
    """Remove strictly named temp files that killed writers left (we hold the lock)."""
    from intent_loop.storage.atomic import is_temp_name_for

    suffix = len(".") + 32 + len(".tmp")
    for directory in (paths.dir, paths.private_dir, paths.quarantine_dir, paths.cache_dir):
        try:
            names = fast_os.listdir(directory)
        except FileNotFoundError:
            continue
        for name in names:
            target = name[:-suffix]
            if directory == paths.dir and target != "ledger.jsonl":
                continue  # the project directory holds no other files we replace
            if target and is_temp_name_for(name, target):
                try:
                    fast_os.unlink(fast_os.path.join(directory, name))
                except OSError:
                    pass


class Planned:
    """A plan's answer when it has more to say than its drafts: `detail` reaches the caller
    (and `after_commit`) through the Mutation, so no closure has to smuggle it out."""

    __slots__ = ("drafts", "detail")

    def __init__(self, drafts, detail=None):
        self.drafts = drafts
        self.detail = detail


class Mutation:
    """What one `mutate` did: the events it appended (for an exact retry, the stored ones),
    whether it was that retry, the plan's `detail` and what `after_commit` returned."""

    __slots__ = ("events", "replayed", "detail", "committed")

    def __init__(self, events, *, replayed, detail=None, committed=None):
        self.events = events
        self.replayed = replayed
        self.detail = detail
        self.committed = committed


def mutate(paths, reducer, *, request_id, operation, params, plan, deadline, after_commit=None, resume=None,
           on_replay=None, former_request_ids=(), hand_over=None, watch=None):
    """One locked, idempotent mutation; returns a Mutation.

    `plan(state)` decides the events from the verified state: a list of Drafts, or Planned(drafts,
    detail). An exact retry (same request id and fingerprint) returns the stored events with
    `replayed` set and appends nothing (the plan does not run); the same id with other
    parameters fails REQUEST_ID_REUSED. `after_commit(tx, mutation)` runs while the lock is
    still held (the Guard file is written there); its return value is `mutation.committed`.
    `resume` is a lock-free read's Verified to continue from (see Transaction). `on_replay(tx,
    mutation)` runs under the lock for an exact retry, which appends nothing and runs no plan.
    `former_request_ids` are the ids the same request had under earlier redaction rules (a hook
    retried across an upgrade): one already recorded makes this a retry too. Its fingerprint is not
    compared, being made of parameters redacted by the earlier rules. `hand_over`, `watch`: see
    Transaction.
    """
    check_request_id(request_id)
    fingerprint = request_fingerprint(operation, params)
    with Transaction(paths, reducer, deadline=deadline, resume=resume, hand_over=hand_over, watch=watch) as tx:
        stored = tx.find_request(request_id)
        former = next(filter(None, map(tx.find_request, former_request_ids)), None) if not stored else None
        if stored or former:
            if stored and stored[0]["payload"].get("request_fingerprint") != fingerprint:
                raise IntentLoopError(
                    ErrorCode.REQUEST_ID_REUSED,
                    f"request id {request_id!r} was already used for a different operation; use a new id",
                )
            if watch is not None:  # an exact retry: its lines are in the ledger, whatever fails from here
                watch.written()
            replay = Mutation(stored or former, replayed=True)
            if on_replay is not None:  # still under the lock: a retry may finish side effects (see callers)
                on_replay(tx, replay)
            return replay
        planned = plan(tx.state)
        if not isinstance(planned, Planned):
            planned = Planned(planned)
        result = Mutation(tx.append(planned.drafts, request_id=request_id, fingerprint=fingerprint),
                          replayed=False, detail=planned.detail)
        if after_commit is not None:
            result.committed = after_commit(tx, result)
        return result

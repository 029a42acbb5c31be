"""Work a hook finishes after it has answered: its hash-only observation and Stop's Guard refresh.

A prompt in a linked session and every Stop append one hash-only event, and the seed's durable
write is a full ledger rewrite (copy, fsync, rename, directory fsync: about 2 ms at 1,000 events
and 10 ms at 10,000 on the development VM). Nothing in the answer depends on that event, and
Codex waits for the hook process, not for what it leaves behind. So the hook answers first and a
detached child does the write, under the same lock protocol, with its own deadline, logging a
failure the way the hook would have. Commands are never deferred: their receipt says "recorded"
only after the ledger's sync. What their transaction leaves derived (the cache save, the Guard
file's two syncs once it is renamed into place) is finished here, by the child, which inherits the
project lock and releases it (storage.transaction.Transaction, `hand_over`): a fork costs less
than that work, and the lock keeps every other writer from seeing the cache behind.

Anyone who must see that work done (replay, tests, benchmarks) calls `pending_work.wait_idle`:
every child holds a shared flock on `cache/deferred.lock`, taken by the parent before fork(), so
there is no moment when the work exists and the lock does not.
"""
import _signal
import sys
import time

from intent_loop.base import fast_os
from intent_loop.hook import pending_work


def finish(paths, job, *, then, detach, deadline_seconds, log):
    """Run the work a hook call queued for after its answer (hook.runtime.run_hook), followed by
    `then()` whatever it did: in a detached child when `detach` (the hook process), right here when
    not (in-process callers), and right here with the daily scrub after it when `detach` is None
    (the commit's child, which is detached already: hook.runtime._split_commit). `log(step, exc)`
    records a failure as the hook's own, at step "after_answer" or "scrub"."""
    job = _followed_by(job, then)
    failed = lambda exc: log("after_answer", exc)  # noqa: E731
    scrub_found = lambda exc: log("scrub", exc)  # noqa: E731
    daily = lambda: upkeep(paths, report=scrub_found)  # noqa: E731
    if detach:
        run_detached(paths, job, deadline_seconds=deadline_seconds, on_failure=failed, upkeep=daily)
        return
    run_inline(job, deadline_seconds=deadline_seconds, on_failure=failed)
    if detach is None:
        daily()


def _followed_by(job, then):
    if then is None:
        return job

    def both(deadline):
        try:
            job(deadline)
        finally:
            then()

    return both


def run_detached(paths, job, *, deadline_seconds, on_failure, upkeep=None):
    """Run `job(deadline)` in a detached child; the caller goes on (and exits) at once.

    If the child cannot be created the job runs here instead: slower, never lost. `upkeep()`
    runs in the child after the job (the daily scrub; never in the hook process itself).
    """
    pending = pending_work.hold(paths)  # noqa: F841 - kept open, never read: the child inherits its flock
    adoption = _adoption_pipe()
    try:
        pid = fast_os.fork()
    except OSError:
        _close_all(adoption)
        run_inline(job, deadline_seconds=deadline_seconds, on_failure=on_failure)
        return
    if pid:
        _wait_for_adoption(adoption)
        return  # the parent's copy of `pending` closes when it exits; the child's keeps the flock
    try:
        fast_os.setsid()  # out of Codex's process group: its timeout kill is for the hook, not for this
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
        adopt_locks(adoption)
        _detach_stdio()
        run_inline(job, deadline_seconds=deadline_seconds, on_failure=on_failure)
        if upkeep is not None:
            upkeep()
    finally:
        fast_os._exit(0)


ADOPTION_WAIT = 0.5  # the parent's bound on waiting for its child to take over the project lock
# What the commit's child reports before its answer (b"A", its length, the answer): ADOPTED here, then
# b"C" (committing: past the point of no return) and b"W" (written) from hook.runtime.CommitWatch.
ADOPTED = b"L"


def split_commit(paths):
    """Fork a hook's commit at its write (hook.runtime._split_commit): ("child", the pipe's write
    end) in the child, which takes over the project lock and the pending-work lock, leaves Codex's
    process group and lets go of stdin, stdout and stderr before it reports ADOPTED; ("parent", the
    read end) in the hook process; None when no pipe or fork could be made (it commits itself)."""
    from posix import pipe

    pending = pending_work.hold(paths) if paths is not None else None  # noqa: F841 - the child's flock
    try:
        read_end, write_end = pipe()
    except OSError:
        return None
    # No alarm may land in this process past the fork: raised here, it would unwind the transaction
    # and release the lock the child now holds (child_reply arms its own; the child, its commit's).
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    try:
        pid = fast_os.fork()
    except OSError:
        _close_all((read_end, write_end))
        return None
    if pid:
        fast_os.close(write_end)
        return "parent", read_end
    fast_os.close(read_end)
    fast_os.setsid()
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    _detach_stdio()
    try:
        sys.modules["intent_loop.storage.lock"].adopt_held()
    except BaseException:  # the flock still guards the work; a waiter may only time out
        pass
    tell(write_end, ADOPTED)
    return "child", write_end


def tell(fd, data):
    """Write to the answering hook process; it may have answered and gone (EPIPE): never raises."""
    try:
        fast_os.write(fd, data)
    except OSError:
        pass


def child_reply(fd, *, until):
    """In the hook process: read what the commit's child reports until its whole answer, its end
    of file or the monotonic time `until` (a SIGALRM bounds each read: no disk is involved).
    Returns (the reports, the answer or None, whether the pipe ended)."""
    data, ended = b"", False
    try:
        while not _whole_answer(data):
            left = until - time.monotonic()
            if left <= 0:
                break
            _signal.setitimer(_signal.ITIMER_REAL, left)
            chunk = fast_os.read(fd, 65536)
            _signal.setitimer(_signal.ITIMER_REAL, 0)
            if not chunk:
                ended = True
                break
            data += chunk
    except BaseException:  # the alarm (the hook's HookDeadline), or a read error: answer from what came
        pass
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
    reported, _marker, rest = data.partition(b"A")
    return reported, (rest[8:8 + int.from_bytes(rest[:8], "little")] if _whole_answer(data) else None), ended


def _whole_answer(data):
    at = data.find(b"A")
    return at >= 0 and len(data) >= at + 9 and len(data) - at - 9 >= int.from_bytes(data[at + 1:at + 9], "little")


def _adoption_pipe():
    """A pipe for the child to say it has taken over the project lock the parent holds (a committed
    transaction's handed-over work, storage.lock.adopt_held), or None when none is held."""
    lock = sys.modules.get("intent_loop.storage.lock")  # not loaded: this process never locked
    if lock is None or not lock.holds_any():
        return None
    from posix import pipe

    try:
        return pipe()
    except OSError:
        return None


def adopt_locks(adoption):
    """In the child: become the recorded owner of every lock inherited, then tell the parent, which
    stays alive until then (a waiter never finds the lock's pid dead while its flock is held)."""
    if adoption is None:
        return
    fast_os.close(adoption[0])
    try:
        sys.modules["intent_loop.storage.lock"].adopt_held()
    except BaseException:  # nothing to do about it here: the job still finishes under the flock
        pass
    try:
        fast_os.write(adoption[1], b"1")
    except OSError:
        pass
    fast_os.close(adoption[1])


def _wait_for_adoption(adoption):
    """In the parent: wait (at most ADOPTION_WAIT) until the child has taken the lock over, or died
    (the pipe's end of file)."""
    if adoption is None:
        return
    fast_os.close(adoption[1])
    try:
        _signal.setitimer(_signal.ITIMER_REAL, ADOPTION_WAIT)  # the hook's alarm handler raises
        fast_os.read(adoption[0], 1)
    except BaseException:
        pass
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        fast_os.close(adoption[0])


def _close_all(fds):
    for fd in fds or ():
        fast_os.close(fd)


def run_inline(job, *, deadline_seconds, on_failure):
    """Run `job(deadline)` bounded by SIGALRM (the hook's HookDeadline handler is installed), then
    the storage maintenance the call or the job asked for (storage.maintenance)."""
    deadline = time.monotonic() + deadline_seconds
    try:
        _signal.setitimer(_signal.ITIMER_REAL, deadline_seconds)
        try:
            job(deadline - 0.25)
        except Exception as exc:  # a detached job has nobody to raise to: log it, like a hook failure
            on_failure(exc)
        for _paths, maintenance in _maintenance_asked_for():
            try:
                maintenance(deadline - 0.25)
            except Exception as exc:
                on_failure(exc)
    except BaseException as exc:  # the deadline (HookDeadline) or a signal
        on_failure(exc)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)


def _maintenance_asked_for():
    """The storage maintenance asked for in this process, taken (none when nothing loaded the
    registry: importing it just to find it empty would cost every hook a module)."""
    registry = sys.modules.get("intent_loop.storage.maintenance")
    return registry.take_maintenance() if registry is not None else []


def _detach_stdio():
    """Codex reads the hook's stdout and stderr until EOF: the child must not hold them."""
    null = fast_os.open("/dev/null", fast_os.O_RDWR)
    for fd in (0, 1, 2):
        fast_os.dup2(null, fd)
    if null > 2:
        fast_os.close(null)


def rebuild_after_answer(paths, reducer, after):
    """Queue on `after` (hook/runtime.AfterAnswer) the work of a hook that found the checkpoint far
    behind: it runs once the answer is out even though the read failed, within its own budget.

    The rebuild reads without the project lock and publishes atomically, one at a time per project
    (storage/cache/cache_upkeep.py), so the next hook finds a checkpoint and injects the full view."""
    from intent_loop.storage.cache.cache_upkeep import REBUILD_BUDGET

    def job(_deadline):  # bounded by run_inline's timer (REBUILD_BUDGET)
        from intent_loop.storage.cache import cache_upkeep

        cache_upkeep.rebuild(paths, reducer)

    after.despite_failure(paths, job, budget=REBUILD_BUDGET)


def upkeep(paths, *, report):
    """After the job, in the detached child: the daily scrub when it is due (at most once a day per
    project). What it finds goes to `report` (the runtime logs it like a hook failure, so `doctor`
    shows its code)."""
    from intent_loop.intent.state import REDUCER
    from intent_loop.storage.cache import cache_upkeep

    if not cache_upkeep.scrub_due(paths):
        return

    run_inline(lambda _deadline: cache_upkeep.scrub(paths, REDUCER, report=report),
               deadline_seconds=cache_upkeep.REBUILD_BUDGET, on_failure=report)

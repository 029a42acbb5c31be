"""Work a hook finishes after it has answered: its hash-only observation and Stop's Guard refresh.

A prompt in a linked session and every Stop append one hash-only event, and the seed's durable
write is a full ledger rewrite (copy, fsync, rename, directory fsync: about 2 ms at 1,000 events
and 10 ms at 10,000 on the development VM). Nothing in the answer depends on that event, and
Codex waits for the hook process, not for what it leaves behind. So the hook answers first and a
detached child does the write, under the same lock protocol, with its own deadline, logging a
failure the way the hook would have. Commands are never deferred: their receipt says "recorded"
only after the write.

Anyone who must see that work done (replay, tests, benchmarks) calls `wait_idle`: every child
holds a shared flock on `cache/deferred.lock`, taken by the parent before fork(), so there is no
moment when the work exists and the lock does not.
"""
import time

import _signal

from intent_loop import _os as os  # `os` without its import cost (see _os.py)
from intent_loop import _platform, paths as paths_mod
from intent_loop.errors import IntentLoopError

PENDING_FILE = "deferred.lock"


def detach(paths, job, *, deadline_seconds, on_failure):
    """Run `job(deadline)` in a detached child; the caller goes on (and exits) at once.

    If the child cannot be created the job runs here instead: slower, never lost.
    """
    pending = _hold_pending(paths)
    try:
        pid = os.fork()
    except OSError:
        run_inline(job, deadline_seconds=deadline_seconds, on_failure=on_failure)
        return
    if pid:
        return  # the parent's copy of `pending` closes when it exits; the child's keeps the flock
    try:
        os.setsid()  # out of Codex's process group: its timeout kill is for the hook, not for this
        _detach_stdio()
        _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
        run_inline(job, deadline_seconds=deadline_seconds, on_failure=on_failure)
    finally:
        os._exit(0)


def run_inline(job, *, deadline_seconds, on_failure):
    """Run `job(deadline)` bounded by SIGALRM (the hook's HookDeadline handler is installed)."""
    deadline = time.monotonic() + deadline_seconds
    try:
        _signal.setitimer(_signal.ITIMER_REAL, deadline_seconds)
        job(deadline - 0.25)
    except BaseException as exc:  # a detached job has nobody to raise to: log it, like a hook failure
        on_failure(exc)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)


def _detach_stdio():
    """Codex reads the hook's stdout and stderr until EOF: the child must not hold them."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    if null > 2:
        os.close(null)


def _hold_pending(paths):
    """Open `cache/deferred.lock` with a shared flock, or None: then waiters cannot see this job,
    which still runs. Bounded: the answer is already out and no timer guards this step, so a
    foreign exclusive holder (waiters only ever hold it for an instant) must not keep the hook."""
    try:
        paths_mod.ensure_directory(paths.cache_dir)  # deletable at any time; the job writes it anyway
        fd = os.open(os.path.join(paths.cache_dir, PENDING_FILE),
                     os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except (OSError, IntentLoopError):
        return None
    try:
        if _platform.wait_for_lock(fd, shared=True, until=time.monotonic() + 0.02, pause=0.001):
            return fd
    except OSError:  # no flock here (ENOLCK on some network filesystems)
        pass
    os.close(fd)
    return None


def wait_idle(paths, *, timeout):
    """True once no detached work of this project is running (False after `timeout` seconds)."""
    path = os.path.join(paths.cache_dir, PENDING_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return True  # no detached work was ever started here (or the cache was deleted)
    try:
        return _platform.wait_for_lock(fd, until=time.monotonic() + timeout, pause=0.002)
    finally:
        os.close(fd)

"""The pending-work lock `cache/deferred.lock`: detached hook writers hold it shared, waiters exclusive.

Lives in storage because deletion must keep the file and replay, tests and benchmarks wait on it;
the detached writers themselves are the hook layer's (intent_loop.hook.deferred).
"""
import time

from intent_loop.base import fast_os, platform
from intent_loop.errors import IntentLoopError
from intent_loop.storage import paths as paths_mod

PENDING_FILE = "deferred.lock"


def hold(paths):
    """Open `cache/deferred.lock` with a shared flock, or None: then waiters cannot see this job,
    which still runs. Bounded: the answer is already out and no timer guards this step, so a
    foreign exclusive holder (waiters only ever hold it for an instant) must not keep the hook."""
    try:
        paths_mod.ensure_directory(paths.cache_dir)  # deletable at any time; the job writes it anyway
        fd = _open_lock_file(paths, create=True)
    except (OSError, IntentLoopError):
        return None
    try:
        if platform.wait_for_lock(fd, shared=True, until=time.monotonic() + 0.02, pause=0.001):
            return fd
    except OSError:  # no flock here (ENOLCK on some network filesystems)
        pass
    fast_os.close(fd)
    return None


def _open_lock_file(paths, *, create):
    """The lock file, never a FIFO or a link: a FIFO in its place would block the open forever
    (after the hook answered); in its place is derived residue, so it is moved aside for the next
    call (UNSAFE_PATH is raised for this one)."""
    path = fast_os.path.join(paths.cache_dir, PENDING_FILE)
    flags = fast_os.O_RDONLY | (fast_os.O_CREAT if create else 0)
    try:
        fd, _st = paths_mod.open_regular(path, flags)
    except IntentLoopError:
        paths_mod.remove_derived(path)
        raise
    return fd


def wait_idle(paths, *, timeout):
    """True once no detached work of this project is running (False after `timeout` seconds)."""
    try:
        fd = _open_lock_file(paths, create=False)
    except FileNotFoundError:
        return True  # no detached work was ever started here (or the cache was deleted)
    except (OSError, IntentLoopError):
        return True  # not a lock file of ours (hold() refuses it too, so no job holds it)
    try:
        return platform.wait_for_lock(fd, until=time.monotonic() + timeout, pause=0.002)
    finally:
        fast_os.close(fd)


# Storage maintenance a call asked for while it ran (a request index to rebuild, a checkpoint to
# refresh): never done inside a hook's deadline. The hook runs these after its answer, in the
# same detached child as its own deferred work; the command line runs them before it exits.
_requested = {}


def request_maintenance(paths, name, job):
    """Ask for `job(deadline)` to run after the answer, once per project and name per process: a
    later request replaces an earlier one (it was made with the newer state)."""
    _requested[(paths.dir, name)] = (paths, job)


def peek_maintenance():
    return list(_requested.values())


def take_maintenance():
    """The (paths, job) pairs asked for so far, forgetting them."""
    jobs = list(_requested.values())
    _requested.clear()
    return jobs

"""The pending-work lock `cache/deferred.lock`: detached hook writers hold it shared, waiters exclusive.

The hook process's own state: its detached children (hook/deferred.py) hold it; replay, the tests
and the benchmarks wait on it. Its name is part of the data layout (storage.paths.PENDING_FILE),
which deletion keeps.
"""
import time

from intent_loop.base import fast_os, platform
from intent_loop.errors import IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.paths import PENDING_FILE


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

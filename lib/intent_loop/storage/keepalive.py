"""The heartbeat of a project lock held for long: a thread touching the owner record until the lock
is given back (storage/lock.py's protocol).

Holders heartbeat at least every quarter of the smallest no-progress window, or a waiter would take
a live holder for silent. A hook's short transaction heartbeats at its steps and never loads this
module; the command line's long holders (delete, recover, a big import) start the thread when they
install the lock, and a forked child that adopts a hook's lock to finish its work (lock.adopt_held)
starts it once it is the recorded owner.
"""
import _thread  # the C module: no import cost; a process that dies takes the thread along

from intent_loop.base import fast_os, platform


def start(fd, *, every):
    """Touch the owner record open at `fd` every `every` seconds from a thread; returns `stop()`.
    A holder that dies takes the thread along, and then the flock proves the lock dead. Stopping
    waits out a touch in progress, so none lands after the caller closes `fd`."""
    wake, busy, stopped = _thread.allocate_lock(), _thread.allocate_lock(), []
    wake.acquire()

    def beat():
        while not wake.acquire(True, every):
            with busy:
                if stopped:
                    return
                try:
                    fast_os.utime(fd)
                except OSError:
                    return

    def stop():
        with busy:
            stopped.append(True)
        wake.release()

    # Started with the signals a caller handles blocked, which the thread inherits: SIGALRM (a
    # hook's deadline) and SIGTERM must reach the main thread only, or a write's hold on the
    # alarm (append.append_durably) would be bypassed through this thread.
    held = platform.hold_signals(("SIGALRM", "SIGTERM", "SIGINT"))
    try:
        _thread.start_new_thread(beat, ())
    finally:
        platform.release_signals(held)
    return stop

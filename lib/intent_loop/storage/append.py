"""Appending a mutation's lines to the verified ledger in place: cost proportional to the new bytes.

This departs from seed 000's replace protocol (copy the ledger to a temp file, fsync, rename,
fsync the directory) for appends only, because that protocol writes the whole ledger on every
mutation: 78 MiB per typed command at 100,000 events. Creating a ledger, deletion, recovery,
migration and cutting a torn tail still replace the file (`atomic.replace_atomically`).

What the replace protocol guaranteed and how an append keeps it:
- Nothing is written through a link or into a file that is not the verified ledger: the file is
  opened O_NOFOLLOW|O_NONBLOCK (a symlink fails, a FIFO never blocks) and, before the first byte,
  `fstat` on the descriptor must show a regular file with exactly one link, owned by this user,
  with the (device, inode) that was just verified and the verified length. A hardlink made
  before the check has st_nlink 2; a file swapped in by rename has another inode.
- A crash mid-append leaves complete lines of an unfinished request or a partial line: readers
  never project those (the request's first event says how many events it has, see
  `ledger.RequestAssembler`), and the next mutation quarantines and cuts them.
- A failed write is cut back to the verified length, so the ledger stays byte-identical
  (WRITE_FAILED); a failed sync after every byte was written is DURABILITY_UNCERTAIN.
"""
import errno

from intent_loop.base import fast_os, platform
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.atomic import describe_os_error, write_all


def open_for_append(path, verified_fd, verified_length):
    """A descriptor to append to `path`, checked to be the very file `verified_fd` verified."""
    flags = fast_os.O_WRONLY | fast_os.O_APPEND | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK
    try:
        fd = fast_os.open(path, flags)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
            raise paths_mod.unsafe(path, "the ledger is not a regular file") from None
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not open the ledger: {describe_os_error(exc)}") from exc
    try:
        st, known = fast_os.fstat(fd), fast_os.fstat(verified_fd)
        if not fast_os.S_ISREG(st.st_mode):
            raise paths_mod.unsafe(path, "the ledger is not a regular file")
        if st.st_nlink != 1:
            raise paths_mod.unsafe(path, "the ledger has another hard link")
        if st.st_uid != fast_os.geteuid():
            raise paths_mod.unsafe(path, "the ledger is owned by another user")
        if (st.st_dev, st.st_ino) != (known.st_dev, known.st_ino):
            raise paths_mod.unsafe(path, "the ledger was swapped after it was verified")
        if st.st_size != verified_length:
            raise IntentLoopError(ErrorCode.WRITE_FAILED,
                                  "the ledger changed size while it was locked; nothing was written, retry")
    except BaseException:
        fast_os.close(fd)
        raise
    return fd


def append_durably(path, verified_fd, verified_length, data, *, on_written=None, on_committing=None):
    """Append `data` (whole lines) to the verified ledger and sync it.

    Raises WRITE_FAILED with the ledger cut back to `verified_length` (or, if even that fails,
    with the partial tail left for the next mutation to quarantine), or DURABILITY_UNCERTAIN
    when every byte was written but the sync failed. `on_written()` runs once every byte is in
    the file, before the sync: from then on every reader sees the lines, so a caller interrupted
    during the sync (a hook's deadline) must not call them "not recorded". SIGALRM (a hook's
    deadline) is held back from the write until then: a write the disk stalls still completes, and
    an alarm raised right after it would otherwise leave written lines unnoted. `on_committing()`
    runs once it is held, before the first byte: from then on the lines will be in the file unless
    the write fails (a hook's answering process, waiting on the writer, may say so).
    """
    fd = open_for_append(path, verified_fd, verified_length)
    try:
        held = platform.hold_signals(("SIGALRM",)) if on_written is not None else None
        try:
            if on_committing is not None:
                on_committing()
            try:
                write_all(fd, data)
            except OSError as exc:
                _cut_back(fd, verified_length, exc)
            if on_written is not None:
                on_written()
        finally:
            platform.release_signals(held)
        try:
            platform.sync_data(fd)
        except OSError as exc:
            raise IntentLoopError(
                ErrorCode.DURABILITY_UNCERTAIN,
                f"the events were written but the ledger sync failed ({exc.strerror}); "
                "a retry with the same request id returns them",
            ) from exc
    finally:
        fast_os.close(fd)


def _cut_back(fd, verified_length, exc):
    try:
        fast_os.ftruncate(fd, verified_length)
        platform.sync_data(fd)
    except OSError:
        raise IntentLoopError(
            ErrorCode.WRITE_FAILED,
            f"could not append to the ledger: {describe_os_error(exc)}; the partial write could not be "
            "cut off either and is set aside (quarantined) by the next change",
        ) from exc
    raise IntentLoopError(ErrorCode.WRITE_FAILED,
                          f"could not append to the ledger: {describe_os_error(exc)}; nothing was changed") from exc

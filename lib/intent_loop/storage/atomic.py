"""Durable whole-file replacement: temp file in the same directory, fsync, rename, fsync the directory."""
import errno

from intent_loop.base import fast_os, platform
from intent_loop.errors import ErrorCode, IntentLoopError

TEMP_SUFFIX = ".tmp"


def temp_name_for(path):
    """`<name>.<32 hex>.tmp` beside `path`: strict enough that orphan cleanup never matches user files."""
    directory, name = fast_os.path.split(path)
    return fast_os.path.join(directory, f"{name}.{fast_os.urandom(16).hex()}{TEMP_SUFFIX}")


def is_temp_name_for(name, target_name):
    if not (name.startswith(target_name + ".") and name.endswith(TEMP_SUFFIX)):
        return False
    token = name[len(target_name) + 1 : -len(TEMP_SUFFIX)]
    return len(token) == 32 and all(c in "0123456789abcdef" for c in token)


def describe_os_error(exc):
    if exc.errno == errno.ENOSPC:
        return "the disk is full; free some space and retry"
    return f"{exc.strerror or exc}; check permissions and free space, then retry"


write_all = platform.write_all  # counted by the seam (platform.WRITTEN)


def copy_prefix(src_fd, dst_fd, length):
    """Copy bytes [0, length) of src_fd to dst_fd's position, inside the kernel where possible."""
    copied = 0
    while copied < length:
        try:
            step = fast_os.copy_file_range(src_fd, dst_fd, length - copied, copied)
        except (AttributeError, OSError) as exc:  # no copy_file_range here (macOS, old kernels, EXDEV)
            if isinstance(exc, OSError) and exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL,
                                                               errno.EOPNOTSUPP, errno.EPERM):
                raise
            step = _copy_by_reading(src_fd, dst_fd, copied, length)
        if step == 0:
            raise OSError(errno.EIO, "the source ended before the verified prefix did")
        copied += step


def _copy_by_reading(src_fd, dst_fd, start, length):
    chunk = fast_os.pread(src_fd, min(1 << 20, length - start), start)
    write_all(dst_fd, chunk)
    return len(chunk)


def replace_atomically(path, data=b"", *, mode=0o600, durable=True, prefix=None, fill=None, check=None,
                       on_replaced=None, on_committing=None):
    """Replace `path` with `data` durably (`durable=False`: atomic only, for derived caches).

    `prefix=(fd, length)` puts the first `length` bytes of an open file before `data`: cutting a
    torn tail keeps the ledger's verified prefix without reading it into memory. `fill(fd)`
    writes the content itself instead of `data` (a streamed rewrite of the whole ledger), and
    `check(fd, filled)` runs on the synced temp file before the rename; either may raise to leave
    `path` as it was. `on_replaced()` runs right after the rename, before the directory's sync,
    with SIGALRM held back from the rename until then (see append.append_durably's `on_written`);
    `on_committing()` runs once it is held, right before the rename.
    Returns what `fill` returned.

    Before the rename any failure leaves `path` byte-identical and no temp file behind
    (WRITE_FAILED). After the rename the new content is visible; if the directory sync then
    fails the outcome is DURABILITY_UNCERTAIN, never "failed".
    """
    temp = temp_name_for(path)
    filled = None
    try:
        fd = fast_os.open(temp, fast_os.O_RDWR | fast_os.O_CREAT | fast_os.O_EXCL
                                | fast_os.O_NOFOLLOW, mode)
        try:
            if prefix is not None:
                copy_prefix(prefix[0], fd, prefix[1])
            if fill is not None:
                filled = fill(fd)
            else:
                write_all(fd, data)
            if durable:
                platform.fsync_file(fd)
            if check is not None:
                check(fd, filled)
        finally:
            fast_os.close(fd)
        held = platform.hold_signals(("SIGALRM",)) if on_replaced is not None else None
        try:  # the rename and its note together (see append.append_durably)
            if on_committing is not None:
                on_committing()
            fast_os.replace(temp, path)
            if on_replaced is not None:
                on_replaced()
        finally:
            platform.release_signals(held)
    except OSError as exc:
        _remove_quietly(temp)
        raise IntentLoopError(ErrorCode.WRITE_FAILED,
                              f"could not write {fast_os.path.basename(path)}: {describe_os_error(exc)}") from exc
    except BaseException:
        _remove_quietly(temp)
        raise
    if not durable:
        return filled
    try:
        platform.fsync_directory(fast_os.path.dirname(path))
    except OSError as exc:
        raise IntentLoopError(
            ErrorCode.DURABILITY_UNCERTAIN,
            f"{fast_os.path.basename(path)} was replaced but the directory sync failed ({exc.strerror}); "
            "the change is visible, a retry with the same request id returns it",
        ) from exc
    return filled


def _remove_quietly(path):
    try:
        fast_os.unlink(path)
    except OSError:
        pass

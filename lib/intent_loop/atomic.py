"""Durable whole-file replacement: temp file in the same directory, fsync, rename, fsync the directory."""
import errno
import os

from intent_loop import _platform
from intent_loop.errors import ErrorCode, IntentLoopError

TEMP_SUFFIX = ".tmp"


def temp_name_for(path):
    """`<name>.<32 hex>.tmp` beside `path`: strict enough that orphan cleanup never matches user files."""
    directory, name = os.path.split(path)
    return os.path.join(directory, f"{name}.{os.urandom(16).hex()}{TEMP_SUFFIX}")


def is_temp_name_for(name, target_name):
    if not (name.startswith(target_name + ".") and name.endswith(TEMP_SUFFIX)):
        return False
    token = name[len(target_name) + 1 : -len(TEMP_SUFFIX)]
    return len(token) == 32 and all(c in "0123456789abcdef" for c in token)


def _describe(exc):
    if exc.errno == errno.ENOSPC:
        return "the disk is full; free some space and retry"
    return f"{exc.strerror or exc}; check permissions and free space, then retry"


def write_all(fd, data):
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def replace_atomically(path, data, *, mode=0o600, durable=True):
    """Replace `path` with `data` durably (`durable=False`: atomic only, for derived caches).

    Before the rename any failure leaves `path` byte-identical and no temp file behind
    (WRITE_FAILED). After the rename the new content is visible; if the directory sync then
    fails the outcome is DURABILITY_UNCERTAIN, never "failed".
    """
    temp = temp_name_for(path)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
        try:
            write_all(fd, data)
            if durable:
                _platform.fsync_file(fd)
        finally:
            os.close(fd)
        os.replace(temp, path)
    except OSError as exc:
        _remove_quietly(temp)
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not write {os.path.basename(path)}: {_describe(exc)}") from exc
    except BaseException:
        _remove_quietly(temp)
        raise
    if not durable:
        return
    try:
        _platform.fsync_directory(os.path.dirname(path))
    except OSError as exc:
        raise IntentLoopError(
            ErrorCode.DURABILITY_UNCERTAIN,
            f"{os.path.basename(path)} was replaced but the directory sync failed ({exc.strerror}); "
            "the change is visible, a retry with the same request id returns it",
        ) from exc


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:
        pass

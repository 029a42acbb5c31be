"""The hook failure log `<data root>/logs/hook-failures.jsonl`: codes only, bounded, never followed.

One line per failure (`at`, `event`, `where`, `code`; never prompt text), rotated to `.1` past
64 KiB. The log is written only into a real directory and opened so that it cannot be a link, a
FIFO or a second name of another file (storage.paths.open_regular). When a line cannot be
written (a full disk), the empty marker file beside it gets its mtime set instead, which needs no
free space, so `doctor` still sees that a hook failed.
"""
import time

from intent_loop.base import fast_os, platform
from intent_loop.base.canonical import dumps, loads
from intent_loop.errors import IntentLoopError
from intent_loop.storage import paths as paths_mod

LOG_NAME = "hook-failures.jsonl"
UNLOGGED_MARKER = "hook-failures.unlogged"
LOG_CAP = 64 * 1024


def log_path(root):
    return fast_os.path.join(root, "logs", LOG_NAME)


def record(env, event_name, where, exc, *, executable=None):
    """Append one content-free line for `exc`, or touch the unlogged marker when that fails.

    The marker goes only into a `logs/` that passed the log's own directory check: through a
    `logs/` that is a link (to a directory outside the data root), nothing is written at all."""
    logs = None  # set once `logs/` is known to be a real directory
    try:
        root, _how = paths_mod.resolve_data_root(env, executable=executable)
        if not paths_mod.check_real_directory(root):
            return
        directory = fast_os.path.join(root, "logs")
        paths_mod.ensure_directory(directory)  # UNSAFE_PATH for a link or non-directory
        logs = directory
        path = log_path(root)
        st = paths_mod.check_regular_file(path)
        if st is not None and st.st_size > LOG_CAP:
            fast_os.replace(path, path + ".1")
        code = exc.code if isinstance(exc, IntentLoopError) else type(exc).__name__
        line = dumps({"at": int(time.time()), "event": event_name, "where": where, "code": code})
        fd, _st = paths_mod.open_regular(path, fast_os.O_WRONLY | fast_os.O_CREAT | fast_os.O_APPEND)
        try:
            platform.write_all(fd, line.encode() + b"\n")
        finally:
            fast_os.close(fd)
    except BaseException:  # the caller answers fail-open whatever happens here
        _mark_unlogged(logs)


def _mark_unlogged(logs):
    """Touch (or create) the marker in `logs`, a directory that passed the check; it is checked
    again here, as what stands there may have been swapped for a link since."""
    if logs is None:
        return
    try:
        if not paths_mod.check_real_directory(logs):
            return
    except BaseException:
        return
    marker = fast_os.path.join(logs, UNLOGGED_MARKER)
    try:
        fast_os.utime(marker, None, follow_symlinks=False)
    except FileNotFoundError:
        try:
            fd, _st = paths_mod.open_regular(marker, fast_os.O_WRONLY | fast_os.O_CREAT)
            fast_os.close(fd)
        except BaseException:
            pass
    except BaseException:
        pass


class Summary:
    """What the log says: records (dicts), whether it could not be read, and the marker's mtime."""

    __slots__ = ("records", "unreadable", "unlogged_at")

    def __init__(self, records, unreadable, unlogged_at):
        self.records = records
        self.unreadable = unreadable
        self.unlogged_at = unlogged_at


def read(root):
    """The log's records (bounded read; a link or special file in its place is reported, not read)."""
    records, unreadable = [], None
    try:
        data = paths_mod.read_capped(log_path(root), 4 * LOG_CAP) or b""
    except IntentLoopError as exc:
        data, unreadable = b"", exc.code
    for line in data.splitlines():
        try:
            entry = loads(line)
        except ValueError:
            entry = None
        records.append(entry if isinstance(entry, dict) else {})
    try:
        marker = paths_mod.check_regular_file(fast_os.path.join(root, "logs", UNLOGGED_MARKER))
    except IntentLoopError:
        marker = None
    return Summary(records, unreadable, marker.st_mtime if marker is not None else None)

"""Everything that differs between operating systems: kernel locks, durable syncs, positioned
reads and writes, signal masks, process identity, mount information.

Linux and macOS are supported. Windows would need msvcrt locking and its own directory-sync
story; keeping every such call here is what lets that port stay one module. Each facility a
platform may lack or refuse has its fallback here (`preadv`, `fdatasync`, `F_FULLFSYNC`), and the
tests remove or refuse each one to run the fallback on Linux (tests/base/test_platform_seam.py).

Every sync goes through this module and is counted in SYNCS, and every byte written to storage in
WRITTEN, so tests and benchmarks can say how many syncs a path made and what it wrote.
`INTENT_LOOP_SLOW_SYNC_MS` (benchmarks only: `build.py bench --slow-sync MS`) makes each sync cost
that many milliseconds more, so a Mac's F_FULLFSYNC cost shows here.
"""
import sys
import time

from intent_loop.base import fast_os

IS_MACOS = sys.platform == "darwin"
IS_WINDOWS = fast_os.name == "nt"

# Syncs made by this process, by kind: "full" (F_FULLFSYNC), "fsync", "fdatasync", "directory"
# (a directory's fsync, counted besides the fsync it makes).
SYNCS = {"full": 0, "fsync": 0, "fdatasync": 0, "directory": 0}
# Bytes this process wrote to storage through write_all and pwrite (the payload, not the kernel's
# count of blocks, which the benchmarks read from ru_oublock).
WRITTEN = {"bytes": 0}
# Where F_FULLFSYNC was refused (some network and FUSE filesystems): fsync instead, from then on.
_FULL_SYNC_REFUSED = set()


def _slow_sync_seconds():
    value = fast_os.getenv("INTENT_LOOP_SLOW_SYNC_MS")
    try:
        return max(0.0, float(value) / 1000) if value else 0.0
    except ValueError:
        return 0.0


_SLOW_SYNC = _slow_sync_seconds()


def _synced(kind):
    SYNCS[kind] += 1
    if _SLOW_SYNC:
        time.sleep(_SLOW_SYNC)


def read_into(fd, view, offset):
    """Read into the writable buffer `view` from `offset`: how many bytes were read (0 at the end).
    preadv fills the buffer in place; a Python without it (macOS before 11, some builds) preads."""
    preadv = getattr(fast_os, "preadv", None)
    if preadv is not None:
        return preadv(fd, [view], offset)
    data = fast_os.pread(fd, len(view), offset)
    view[:len(data)] = data
    return len(data)


def write_all(fd, data):
    """Write all of `data` at the file's position (a short write goes on from where it stopped)."""
    view = memoryview(data)
    while view:
        written = fast_os.write(fd, view)
        WRITTEN["bytes"] += written
        view = view[written:]


def pwrite(fd, data, offset):
    """Write all of `data` at `offset` (the request index's slots and header)."""
    view = memoryview(data)
    while view:
        written = fast_os.pwrite(fd, view, offset)
        WRITTEN["bytes"] += written
        view, offset = view[written:], offset + written


def _fcntl():
    """fcntl on first use: the hooks' read path never locks, so it never pays for the import."""
    import fcntl

    return fcntl


def wait_for_lock(fd, *, until, pause, shared=False):
    """Take a kernel lock on an open file (exclusive, or `shared`), trying again every `pause`
    seconds; False once the monotonic time `until` has passed without it. Never blocks in the
    kernel, so a holder that never lets go cannot outlast the caller's deadline."""
    fcntl = _fcntl()
    kind = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB
    while True:
        try:
            fcntl.flock(fd, kind)
            return True
        except BlockingIOError:
            if time.monotonic() >= until:
                return False
            time.sleep(pause)


def is_kernel_lock_held(fd):
    """True when some other open file description holds a lock on this file (probe and let go)."""
    fcntl = _fcntl()
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def fsync_file(fd):
    """Flush a file to stable storage.

    macOS fsync() only reaches the drive's cache; F_FULLFSYNC is what makes it durable
    (Apple's fsync(2) man page), as python-atomicwrites also does.
    """
    if IS_MACOS:
        fcntl = _fcntl()
        if hasattr(fcntl, "F_FULLFSYNC") and _device_of(fd) not in _FULL_SYNC_REFUSED:
            try:
                fcntl.fcntl(fd, fcntl.F_FULLFSYNC)
            except OSError:  # refused here (EINVAL, ENOTSUP on some network/FUSE filesystems)
                _FULL_SYNC_REFUSED.add(_device_of(fd))
            else:
                _synced("full")
                return
    fast_os.fsync(fd)
    _synced("fsync")


def _device_of(fd):
    try:
        return fast_os.fstat(fd).st_dev
    except OSError:
        return None


def sync_data(fd):
    """Flush an appended file's data (and the size needed to read it back) to stable storage.

    fdatasync skips metadata an append does not need (mtime), which makes it the cheaper sync
    where it exists; macOS needs F_FULLFSYNC as for fsync_file.
    """
    if IS_MACOS or not hasattr(fast_os, "fdatasync"):
        fsync_file(fd)
        return
    fast_os.fdatasync(fd)
    _synced("fdatasync")


def fsync_directory(path):
    """Make a rename inside `path` durable (POSIX needs the directory itself synced)."""
    fd = fast_os.open(path, fast_os.O_RDONLY | getattr(fast_os, "O_DIRECTORY", 0))
    try:
        fsync_file(fd)
        SYNCS["directory"] += 1
    finally:
        fast_os.close(fd)


def hold_signals(names):
    """Block the signals named in `names` ("SIGALRM", "SIGTERM", ...) until release_signals: a
    handler that raises must not land between two steps that belong together (a lock's release, a
    ledger write and the note that it happened). Returns the previous mask, or None where there is
    no sigmask (Windows) or it is refused. A blocked signal is delivered at release."""
    try:
        import _signal  # the C module; loaded already in a hook (hook.runtime)

        return _signal.pthread_sigmask(_signal.SIG_BLOCK, {getattr(_signal, name) for name in names})
    except (ImportError, AttributeError, OSError, ValueError):
        return None


def release_signals(previous):
    if previous is not None:
        import _signal

        _signal.pthread_sigmask(_signal.SIG_SETMASK, previous)


def process_start_time(pid):
    """An opaque start-time token for `pid`, or None when it cannot be read (or pid is gone).

    Comparing it with the token a lock owner recorded tells a reused pid from the holder.
    """
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            return None
        # the command name (field 2) may contain spaces and ')' : split after the last ')'
        fields = data[data.rfind(b")") + 2 :].split()
        return fields[19].decode() if len(fields) > 19 else None
    return None


def filesystem_type(path, mountinfo="/proc/self/mountinfo"):
    """The type of the filesystem `path` (a realpath) is on, from the longest matching mount point
    of /proc/self/mountinfo; None where that file does not exist (not Linux) or cannot be read."""
    try:
        with open(mountinfo, "rb") as fh:
            data = fh.read(1 << 20)
    except OSError:  # no /proc (macOS): the caller does without the check
        return None
    best, kind = -1, None
    for line in data.decode("utf-8", "replace").splitlines():
        fields = line.split(" ")
        try:
            mount_point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n") \
                .replace("\\134", "\\")
            fstype = fields[fields.index("-", 6) + 1]
        except (IndexError, ValueError):
            continue
        inside = path == mount_point or mount_point == "/" or path.startswith(mount_point.rstrip("/") + "/")
        if inside and len(mount_point) > best:
            best, kind = len(mount_point), fstype
    return kind


def is_process_alive(pid):
    if pid <= 0:
        return False
    try:
        fast_os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def is_local_path_syntax(path):
    """Reject Windows UNC and device namespaces before any filesystem call."""
    if path.startswith(("\\\\", "//?/", "//./")):
        return False
    return True


def canonical_case(path):
    """Windows paths compare case-insensitively; POSIX paths are kept as they are."""
    return path.casefold() if IS_WINDOWS else path


def on_disk_spelling(path):
    """`path` (a realpath) as the filesystem stores it, so one directory is one project however it
    was typed: on a case-insensitive volume (APFS and HFS+ by default, WSL's /mnt/c, FAT and exFAT)
    `~/Proj` and `~/proj` name the same directory, and realpath keeps the case it was given.

    macOS: the kernel's own name for the open directory (fcntl F_GETPATH), in Unicode NFC (macOS
    stores names decomposed, so a path typed composed compares equal only once both are NFC).
    Linux: each component that also resolves with its letters' case swapped to the same inode sits
    in a case-insensitive directory, and takes the spelling that directory lists (one lstat per
    component with letters; a listdir only where that is so). Elsewhere the path as it is."""
    if IS_WINDOWS:
        return path
    if IS_MACOS:
        return _macos_spelling(path)
    return _listed_spelling(path)


def _macos_spelling(path):
    import unicodedata

    spelled = path
    fcntl = _fcntl()
    if hasattr(fcntl, "F_GETPATH"):
        try:
            fd = fast_os.open(path, fast_os.O_RDONLY | getattr(fast_os, "O_DIRECTORY", 0) | fast_os.O_NONBLOCK)
        except OSError:
            fd = None
        if fd is not None:
            try:
                named = fcntl.fcntl(fd, fcntl.F_GETPATH, b"\0" * 1024).split(b"\0", 1)[0].decode("utf-8")
                if named.startswith("/"):
                    spelled = named
            except (OSError, UnicodeDecodeError):
                pass
            finally:
                fast_os.close(fd)
    return unicodedata.normalize("NFC", spelled)


def _listed_spelling(path):
    out = ""
    for part in path.split("/")[1:]:
        parent = out or "/"
        here = out + "/" + part
        swapped = part.swapcase()
        if swapped != part:
            try:
                st, st_swapped = fast_os.lstat(here), fast_os.lstat(out + "/" + swapped)
            except OSError:
                st = st_swapped = None
            if st is not None and (st.st_dev, st.st_ino) == (st_swapped.st_dev, st_swapped.st_ino):
                part = _listed_name(parent, part)
        out += "/" + part
    return out or "/"


def _listed_name(directory, part):
    """The entry of `directory` that `part` names on a case-insensitive filesystem: itself when it
    is listed so, else the one entry equal to it ignoring case (else `part`, unchanged)."""
    try:
        names = fast_os.listdir(directory)
    except OSError:
        return part
    if part in names:
        return part
    folded = part.casefold()
    matches = [name for name in names if name.casefold() == folded]
    return matches[0] if len(matches) == 1 else part

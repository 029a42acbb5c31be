"""Every operation on the Guard file, through descriptors walked down from the project root.

The agent can swap the Guard file's directory (or any directory above it, up to the project root)
for a symbolic link between two of our calls (issue 33, item 4). So no call here takes a path: the
directory is reached from the project root's descriptor one component at a time, each opened with
O_DIRECTORY | O_NOFOLLOW, and the read, the temp file, the rename, the unlink, the .gitignore and
the syncs all name the file relative to that descriptor. A link anywhere on the way is refused
(PROVIDER_PATH_FOREIGN), or, at a path we hold, removed as a takeover (`relink`: the link entry
itself, by unlinkat); nothing is ever written or removed through one.
"""
import errno
import posix
import stat

from intent_loop.base import fast_os, platform
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage.atomic import TEMP_SUFFIX, is_temp_name_for
from intent_loop.storage.paths import read_at_most

_DIR_FLAGS = fast_os.O_RDONLY | fast_os.O_DIRECTORY | fast_os.O_NOFOLLOW | getattr(posix, "O_CLOEXEC", 0)
GITIGNORE_NAME = ".gitignore"
TEMP_SCAN_LIMIT = 256  # entries clean_temps looks at, at most
ASIDE = ".replaced-"  # what stood at a path we hold is renamed to <name>.replaced-<8 hex>


def _between(step):
    """A test seam: called between opening the directory and each write, rename or unlink."""


def relative_parts(path, project_root):
    """(the root's real path, the components of the Guard file's directory below it), the components
    None when that directory lies outside the root. The components are the ones Guard names below the
    first ancestor whose real path is the root (the payload's cwd may be a link to the project; a
    link below it is the walk's to refuse, even one that dangles now), else those of the directory's
    real path (a path that reaches the project from elsewhere). The walk refuses any link it meets,
    so a swap after this check changes nothing."""
    root = fast_os.path.realpath(project_root)
    directory = fast_os.path.normpath(fast_os.path.dirname(path))
    head, names = directory, []
    while True:
        if fast_os.path.realpath(head) == root:
            return _below(fast_os.path.join(root, *reversed(names)), root)
        parent, name = fast_os.path.split(head)
        if parent == head or not name:
            return _below(fast_os.path.realpath(directory), root)
        names.append(name)
        head = parent


def _lexical_parts(path, project_root):
    """relative_parts for the directory as Guard names it (no link on the way resolved)."""
    return _below(fast_os.path.dirname(path), fast_os.path.realpath(project_root))


def _below(directory, root):
    if directory == root:
        return root, ()
    if not directory.startswith(root.rstrip(fast_os.sep) + fast_os.sep):
        return root, None
    parts = tuple(p for p in directory[len(root.rstrip(fast_os.sep)) + 1:].split(fast_os.sep) if p)
    return root, (None if any(p in (".", "..") for p in parts) else parts)


def obstacle(path, project_root):
    """What stands in the way of the Guard file at `path` (as Guard names it), or None: ("link",
    name) for a folder on the way that is a symbolic link, ("not_directory", name) for one that is a
    file or another non-directory, ("directory", name) for a directory at the file's own name. At a
    path we hold each is a takeover (issue 33, findings 3)."""
    try:
        root, parts = _lexical_parts(path, project_root)
        if parts is None:
            return None
        fd = posix.open(root, _DIR_FLAGS)
    except OSError:
        return None
    try:
        for part in parts:
            mode = posix.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                return "link", part
            if not stat.S_ISDIR(mode):
                return "not_directory", part
            child = posix.open(part, _DIR_FLAGS, dir_fd=fd)
            fast_os.close(fd)
            fd = child
        name = fast_os.path.basename(path)
        if stat.S_ISDIR(posix.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            return "directory", name
    except OSError:
        return None
    finally:
        fast_os.close(fd)
    return None


class GuardDir:
    """An open descriptor on the Guard file's directory (close it, or use it as a context manager)."""

    __slots__ = ("fd", "name", "created")

    def __init__(self, fd, name, *, created=False):
        self.fd, self.name, self.created = fd, name, created

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self.fd is not None:
            fast_os.close(self.fd)
            self.fd = None

    # -- reading -------------------------------------------------------------------------
    def read(self, cap):
        """(bytes up to cap + 1, None) or (None, why): a regular file only, never a link, never a FIFO."""
        try:
            fd = posix.open(self.name, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK, dir_fd=self.fd)
        except FileNotFoundError:
            return None, "missing"
        except OSError as exc:
            return None, "not a regular file" if exc.errno in (errno.ELOOP, errno.ENXIO) else exc.strerror
        try:
            mode = fast_os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                return None, "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            return read_at_most(fd, cap + 1), None
        except OSError as exc:
            return None, exc.strerror
        finally:
            fast_os.close(fd)

    def kind(self):
        """"missing", "file", "link" or "other" for the name in this directory (not followed)."""
        try:
            st = posix.stat(self.name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return "missing"
        if stat.S_ISREG(st.st_mode):
            return "file"
        return "link" if stat.S_ISLNK(st.st_mode) else "other"

    # -- writing -------------------------------------------------------------------------
    def write(self, data, *, durable=True):
        """Write `data` to a temp file in this directory and rename it over the name. Returns the
        open descriptor of the new file when not `durable` (sync_later syncs and closes it)."""
        temp = f"{self.name}.{fast_os.urandom(16).hex()}{TEMP_SUFFIX}"
        _between("write")
        fd = posix.open(temp, fast_os.O_RDWR | fast_os.O_CREAT | fast_os.O_EXCL | fast_os.O_NOFOLLOW
                        | getattr(posix, "O_CLOEXEC", 0), 0o644, dir_fd=self.fd)
        try:
            platform.write_all(fd, data)
            if durable:
                platform.fsync_file(fd)
            _between("rename")
            posix.replace(temp, self.name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            fast_os.close(fd)
            try:
                posix.unlink(temp, dir_fd=self.fd)
            except OSError:
                pass
            raise
        if not durable:
            return fd
        fast_os.close(fd)
        try:
            _fsync_directory(self.fd)
        except OSError:
            pass  # renamed and visible; only a power loss could undo it, and the next refresh repairs that
        return None

    def remove(self):
        """Unlink the name (only the name in this directory: never through a link)."""
        _between("unlink")
        try:
            posix.unlink(self.name, dir_fd=self.fd)
        except FileNotFoundError:
            pass

    def sync_later(self, file_fd):
        """A job for after the answer: sync the renamed file and this directory through the
        descriptors held since the write (never reopened by name), then close them."""
        directory_fd = posix.dup(self.fd)

        def sync():
            try:
                platform.fsync_file(file_fd)
                _fsync_directory(directory_fd)
            finally:
                fast_os.close(file_fd)
                fast_os.close(directory_fd)

        return sync

    def clean_temps(self, limit=TEMP_SCAN_LIMIT):
        """Remove temp files a killed writer of ours left here (by our name pattern only; the
        caller holds the project lock, so none of them is being written). At most `limit` entries
        are looked at: a directory flooded with names costs one bounded scan, never a listing of
        all of them (each refresh clears what it meets)."""
        removed = 0
        try:
            entries = posix.scandir(self.fd)
        except OSError:
            return 0
        with entries:
            for seen, entry in enumerate(entries):
                if seen >= limit:
                    break
                if is_temp_name_for(entry.name, self.name):
                    try:
                        if entry.is_file(follow_symlinks=False):
                            posix.unlink(entry.name, dir_fd=self.fd)
                            removed += 1
                    except OSError:
                        pass
        return removed

    def clean_later(self):
        """clean_temps as a job for after the answer, on a descriptor of its own (still under the lock)."""
        directory = GuardDir(posix.dup(self.fd), self.name)

        def clean():
            with directory:
                directory.clean_temps()

        return clean

    def move_aside(self, aside):
        """Rename a directory standing at the file's name to `aside` in the same directory (its
        content stays as it is: never deleted); whether one was moved."""
        try:
            mode = posix.stat(self.name, dir_fd=self.fd, follow_symlinks=False).st_mode
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(mode):
            return False
        _rename_aside(self.fd, self.name, aside)
        return True


def _rename_aside(fd, name, aside):
    """renameat within one directory, never over something that is there."""
    try:
        posix.stat(aside, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        _between("aside")
        posix.rename(name, aside, src_dir_fd=fd, dst_dir_fd=fd)
        return
    raise FileExistsError(errno.EEXIST, "a file is already at the name to move it to", aside)


def _fsync_directory(fd):
    """platform.fsync_directory on a descriptor we hold (never reopened by name), counted alike."""
    platform.fsync_file(fd)
    platform.SYNCS["directory"] += 1


def open_guard_dir(path, project_root, *, create=False, gitignore=b"", relink=False, aside=None):
    """The Guard file's directory, walked from the project root (see the module docstring), or
    None when it does not exist and `create` is false. Raises PROVIDER_PATH_OUTSIDE when it lies
    outside the project, PROVIDER_PATH_FOREIGN when a component is a link or not a directory.
    `relink` (a takeover of a path we hold): a link met on the way, as Guard names the path, is
    removed (the link itself, never what it points to) and a real directory made in its place;
    another non-directory there (a file) is renamed to `<its name><aside>` beside it, never removed."""
    try:
        root, parts = (_lexical_parts if relink else relative_parts)(path, project_root)
    except OSError as exc:  # a link swapped while realpath read it
        raise IntentLoopError(ErrorCode.PROVIDER_PATH_FOREIGN, f"{path} changed while it was resolved "
                              f"({exc.strerror}); intent-loop writes nothing through it") from exc
    if parts is None:
        raise IntentLoopError(ErrorCode.PROVIDER_PATH_OUTSIDE,
                              f"{path} is outside the project {root}; nothing is written")
    try:
        fd = posix.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED, f"cannot open {root}: {exc.strerror}") from exc
    created = False
    try:
        for index, part in enumerate(parts):
            try:
                child = posix.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                missing = isinstance(exc, FileNotFoundError)
                if missing and not create:
                    fast_os.close(fd)
                    return None
                kind = None if missing or not relink else _kind(fd, part)  # Linux: ENOTDIR, not ELOOP
                if not missing and kind not in ("link", "other"):
                    raise
                if kind == "link":
                    _between("relink")
                    posix.unlink(part, dir_fd=fd)  # a link: unlinkat removes the link itself
                elif kind == "other":
                    _rename_aside(fd, part, part + (aside or ASIDE + fast_os.urandom(4).hex()))
                _make_directory(fd, part)
                created = index == len(parts) - 1
                child = posix.open(part, _DIR_FLAGS, dir_fd=fd)
            fast_os.close(fd)
            fd = child
    except IntentLoopError:
        fast_os.close(fd)
        raise
    except OSError as exc:
        fast_os.close(fd)
        where = fast_os.path.join(root, *parts)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise IntentLoopError(ErrorCode.PROVIDER_PATH_FOREIGN, f"a component of {where} is a symbolic link "
                                  f"or not a directory; intent-loop writes nothing through it") from exc
        raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED, f"cannot open {where}: {exc.strerror}") from exc
    guard_dir = GuardDir(fd, fast_os.path.basename(path), created=created)
    if created and gitignore:
        _write_gitignore(guard_dir, gitignore)
    return guard_dir


def _kind(fd, part):
    """"link", "other" (not a directory) or None (a directory, or nothing) for a name in `fd`."""
    try:
        mode = posix.stat(part, dir_fd=fd, follow_symlinks=False).st_mode
    except OSError:
        return None
    return "link" if stat.S_ISLNK(mode) else None if stat.S_ISDIR(mode) else "other"


def _make_directory(fd, part):
    try:
        posix.mkdir(part, 0o755, dir_fd=fd)
    except FileExistsError:
        pass  # made meanwhile: the open that follows refuses it if it is not a directory
    except OSError as exc:
        raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED, f"cannot create {part}: {exc.strerror}") from exc


def _write_gitignore(guard_dir, data):
    ignore = GuardDir(guard_dir.fd, GITIGNORE_NAME)
    try:
        ignore.write(data)
    except OSError as exc:
        raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED,
                              f"cannot write {GITIGNORE_NAME}: {exc.strerror}") from exc
    finally:
        ignore.fd = None  # borrowed

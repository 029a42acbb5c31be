"""Where data lives: the data root, project identity, the project directory layout, path safety."""
import errno
import stat

from intent_loop.base import fast_os, platform
from intent_loop.base.canonical import sha256_hex
from intent_loop.base.data_root import find_data_root
from intent_loop.errors import ErrorCode, IntentLoopError

PROJECT_ID_DOMAIN = b"intent-loop-project-v1\x00"
SESSION_DOMAIN = "intent-loop-session-v1\0"
DIR_MODE = 0o700


def resolve_data_root(env, *, executable=None, home=None):
    """Return (data_root, how_chosen) following the documented order, or raise DATA_DIR_REQUIRED."""
    try:
        found = find_data_root(env, executable, home)
    except ValueError as exc:
        raise IntentLoopError(ErrorCode.DATA_DIR_REQUIRED, str(exc)) from exc
    if found is None:
        raise IntentLoopError(
            ErrorCode.DATA_DIR_REQUIRED,
            "no data directory: HOME is not an absolute path; set CODEX_HOME or INTENT_LOOP_DATA_DIR "
            "to an absolute path",
        )
    return found


def root_spellings(path):
    """(the directory's realpath as given, the same directory as the filesystem spells it)."""
    given = _real_root(path)
    return given, platform.on_disk_spelling(given)


def _real_root(path):
    if not isinstance(path, str) or not path:
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT, "the project directory is missing")
    if not platform.is_local_path_syntax(path):
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT, "UNC and device paths are not supported")
    if not fast_os.path.isabs(path):
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT, f"the project directory must be absolute: {path!r}")
    real = fast_os.path.realpath(path)
    if not fast_os.path.isdir(real):
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT, f"not an existing directory: {path!r}")
    if real == fast_os.sep:
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT,
                              "the filesystem root is not a project; start Codex in your project's directory")
    return platform.canonical_case(real)


# cache/deferred.lock: the lock the hooks' detached children hold shared (hook/pending_work.py); a
# cache file deletion keeps, since a child may hold it and its waiters need it.
PENDING_FILE = "deferred.lock"

# Kernel filesystems no project lives on (Linux names, as /proc/self/mountinfo gives them:
# base/platform.filesystem_type).
PSEUDO_FILESYSTEMS = frozenset(("proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "securityfs",
                                "debugfs", "tracefs", "pstore", "bpf", "mqueue", "configfs", "fusectl",
                                "binfmt_misc", "efivarfs", "hugetlbfs"))


def check_new_project_root(paths):
    """Refuse to start a project where none can be: on a kernel filesystem (/proc, /sys, /dev ...)
    or inside the data root itself. Checked once, when the project directory is first created."""
    root = paths.root
    if root is None:
        return
    data_root = fast_os.path.realpath(paths.data_root)
    if root == data_root or root.startswith(data_root.rstrip(fast_os.sep) + fast_os.sep):
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT,
                              f"{root} is inside intent-loop's data directory; work in a project directory")
    kind = platform.filesystem_type(root)
    if kind in PSEUDO_FILESYSTEMS:
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT,
                              f"{root} is on a {kind} filesystem, not a project; "
                              "start Codex in your project's directory")


def project_id_for(canonical_root):
    try:
        encoded = canonical_root.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise IntentLoopError(ErrorCode.INVALID_PROJECT_ROOT, "the project path is not valid UTF-8") from exc
    return sha256_hex(PROJECT_ID_DOMAIN + encoded)


def session_hash(session_id):
    """The stored identity of a Codex session: never the raw id (hooks, CLI and MCP agree on it)."""
    return sha256_hex((SESSION_DOMAIN + session_id).encode("utf-8"))


class ProjectPaths:
    """The fixed layout of one project's directory under the data root."""

    __slots__ = ("data_root", "project_id", "root", "dir", "ledger", "lock_dir", "private_dir",
                 "quarantine_dir", "cache_dir")

    def __init__(self, data_root, project_id, project_root=None):
        self.data_root = data_root
        self.project_id = project_id
        self.root = project_root
        self.dir = fast_os.path.join(data_root, "projects", project_id)
        self.ledger = fast_os.path.join(self.dir, "ledger.jsonl")
        self.lock_dir = fast_os.path.join(self.dir, "ledger.lock")
        self.private_dir = fast_os.path.join(self.dir, "private-sessions")
        self.quarantine_dir = fast_os.path.join(self.dir, "quarantine")
        self.cache_dir = fast_os.path.join(self.dir, "cache")


def project_paths(data_root, cwd):
    return paths_for(data_root, *root_spellings(cwd))


def paths_for(data_root, given, root):
    """The project of the directory `root_spellings` named (`given`, `root`)."""
    return ProjectPaths(data_root, _recorded_id(data_root, root, given), root)


def _recorded_id(data_root, root, given):
    """The project id of `root`. A project recorded before the on-disk spelling decided identity
    (issue 27) under the spelling it was given (`~/proj` for `~/Proj` on a case-insensitive volume)
    keeps its id while no project exists under the on-disk one, so nothing recorded is orphaned."""
    project_id = project_id_for(root)
    if given == root:
        return project_id
    projects = fast_os.path.join(data_root, "projects")
    legacy = project_id_for(given)
    if not fast_os.path.isdir(fast_os.path.join(projects, project_id)) and \
            fast_os.path.isdir(fast_os.path.join(projects, legacy)):
        return legacy
    return project_id


def unsafe(path, why):
    return IntentLoopError(ErrorCode.UNSAFE_PATH, f"refusing {path}: {why}; inspect it and remove it by hand")


def check_real_directory(path):
    """True if `path` is a real directory, False if missing; UNSAFE_PATH for links and the rest."""
    try:
        st = fast_os.lstat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise unsafe(path, "a symbolic link or non-directory stands where a directory belongs")
    return True


def check_regular_file(path):
    """Return the lstat of a single-linked regular file, None if missing; UNSAFE_PATH otherwise."""
    try:
        st = fast_os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode):
        raise unsafe(path, "a symbolic link, FIFO, device or directory stands where a data file belongs")
    if st.st_nlink != 1:
        raise unsafe(path, "the data file has other hard links")
    return st


def open_regular(path, flags=None, mode=0o600):
    """Open a file of ours so that it cannot be a link, a FIFO or a device, and never blocks.

    O_NOFOLLOW refuses a symlink, O_NONBLOCK keeps a FIFO from hanging the open, and the fstat of
    the descriptor (not of the name, which could change in between) must show a regular file with
    one link; anything else closes it and raises UNSAFE_PATH. Returns (fd, fstat).
    """
    flags = fast_os.O_RDONLY if flags is None else flags
    try:
        fd = fast_os.open(path, flags | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK, mode)
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EISDIR):  # ENXIO: a FIFO opened to write
            raise unsafe(path, "a symbolic link, FIFO, device or directory stands where a data file belongs") from None
        raise
    st = fast_os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        fast_os.close(fd)
        raise unsafe(path, "a symbolic link, FIFO, device, directory or hard-linked file stands where a data file "
                           "belongs")
    return fd, st


def read_at_most(fd, limit):
    """Up to `limit` bytes from `fd`, whatever the file claims its size is (a file that grows, or
    one with no size such as /dev/zero, stops there)."""
    chunks, size = [], 0
    while size < limit:
        chunk = fast_os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_capped(path, cap):
    """The bytes of a regular file of ours, or None when it is missing or larger than `cap`
    (a derived file that big is not ours to believe); UNSAFE_PATH for links and special files."""
    try:
        fd, st = open_regular(path)
    except FileNotFoundError:
        return None
    try:
        if st.st_size > cap:
            return None
        data = read_at_most(fd, cap + 1)
        return data if len(data) <= cap else None
    finally:
        fast_os.close(fd)


def read_through_links(path, cap, *, head=False):
    """The bytes of a file that may be a link (Codex's own hooks.json and config.toml: a dotfile
    manager links them), or None when missing. The link is followed, but the open never blocks
    (a FIFO), what it reaches must be a regular file, and at most `cap` bytes are read (a link to
    /dev/zero): UNSAFE_PATH otherwise. `head`: the first `cap` bytes of a longer file (a binary's
    launcher prefix) instead of UNSAFE_PATH. OSError for what the system refuses (permissions)."""
    try:
        fd = fast_os.open(path, fast_os.O_RDONLY | fast_os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    try:
        st = fast_os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise unsafe(path, "it is not a regular file (a FIFO, device or directory)")
        data = read_at_most(fd, cap if head else cap + 1)
        if len(data) > cap:
            raise unsafe(path, f"it is larger than {cap} bytes")
        return data
    finally:
        fast_os.close(fd)


def read_others_config(path, cap, invalid):
    """`read_through_links` for a configuration file another program owns (Codex's hooks.json and
    config.toml): every refusal becomes `invalid(path, why)`, the caller's own error code."""
    try:
        return read_through_links(path, cap)
    except OSError as exc:
        raise invalid(path, f"cannot be read ({exc.strerror})") from exc
    except IntentLoopError as exc:
        raise invalid(path, f"cannot be read ({exc.message.split('; inspect')[0]})") from None


def remove_derived(path):
    """Remove what stands where a derived file of ours belongs (a link, FIFO, device or a
    hard-linked file: unlink removes only the name, never what it points at); directories are
    renamed aside with a unique suffix, never deleted. Best effort."""
    try:
        st = fast_os.lstat(path)
    except OSError:
        return
    try:
        if stat.S_ISDIR(st.st_mode):
            fast_os.rename(path, f"{path}.{fast_os.urandom(4).hex()}.unsafe")
        else:
            fast_os.unlink(path)
    except OSError:
        pass


def ensure_directory(path):
    """Create a 0700 directory if missing; refuse symlinks and non-directories."""
    if check_real_directory(path):
        return
    try:
        fast_os.mkdir(path, DIR_MODE)
    except FileExistsError:
        pass
    except OSError as exc:
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"cannot create {path}: {exc.strerror}") from exc
    check_real_directory(path)


def ensure_data_root(data_root):
    """Create the data root (and parents) 0700; the root itself may be reached through links."""
    try:
        fast_os.makedirs(data_root, DIR_MODE, exist_ok=True)
    except OSError as exc:
        raise IntentLoopError(ErrorCode.WRITE_FAILED,
                              f"cannot create the data root {data_root}: {exc.strerror}") from exc
    if not fast_os.path.isdir(data_root):
        raise unsafe(data_root, "the data root is not a directory")


def ensure_project_layout(paths):
    """Create the project directory tree for a mutation; every level below the root must be real."""
    ensure_data_root(paths.data_root)
    ensure_directory(fast_os.path.join(paths.data_root, "projects"))
    if not check_real_directory(paths.dir):
        check_new_project_root(paths)
    ensure_directory(paths.dir)
    for sub in (paths.private_dir, paths.quarantine_dir, paths.cache_dir):
        ensure_directory(sub)

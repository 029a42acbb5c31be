"""Every hook run leaves its install's id and the time in the data root (launch/hook_runs.py reads
them): kept to the writer's half, which every hook loads after its answer, so that this costs one
small module and a few system calls (an lstat per directory, then the file's creation or utime)."""
from intent_loop.base import fast_os as os  # every hook runs this: the slice of os without its import
from intent_loop.base.canonical import sha256_hex
from intent_loop.base.data_root import find_data_root

RUNTIME_DIR = "runtime"  # the one name of <data root>/runtime
RAN_DIR = "hooks-ran"
SOURCE_LAUNCHER = os.path.join("hooks", "intent-loop")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../intent_loop


def running_install_id(package=_PACKAGE):
    """The id of the code running now: its extracted runtime's build id, or its source tree's."""
    parts = package.split(os.sep)
    # <runtime dir>/<build id>/<binary>_<build id>/site-packages/intent_loop, the path as imported (no
    # realpath: this runs on every hook); the command line and the server import from <binary>/site-packages
    # (the binary's own zip) until the data root exists (launch/launcher.py)
    if len(parts) > 4 and parts[-2] == "site-packages" and len(parts[-4]) == 64 and parts[-3].endswith("_" + parts[-4]):
        return parts[-4]
    if len(parts) > 2 and parts[-2] == "site-packages" and not os.path.isdir(os.sep.join(parts[:-2])):
        return build_id_of(os.sep.join(parts[:-2]))  # imported from the binary's zip
    tree = os.path.dirname(os.path.dirname(package))  # <tree>/lib/intent_loop
    return source_install_id(tree)


def source_install_id(tree):
    """The id of a source tree (a plugin copy or a checkout), or None without its launcher."""
    try:
        st = os.stat(os.path.join(tree, SOURCE_LAUNCHER))
    except OSError:
        return None
    seed = f"{os.path.realpath(tree)}\0{st.st_ino}\0{st.st_mtime_ns}".encode("utf-8", "surrogateescape")
    return "source-" + sha256_hex(seed)[:16]


def is_build_id(name):
    """shiv's build id: the sha256 of the runtime's files, 64 lowercase hex digits."""
    return len(name) == 64 and all(char in "0123456789abcdef" for char in name)


def build_id_of(binary):
    """The build id a binary's launcher names in its `.../runtime/<build id>/...` path, or None
    (also for a FIFO or device in its place: the read never blocks)."""
    from intent_loop.errors import IntentLoopError
    from intent_loop.storage.paths import read_through_links

    try:
        head = read_through_links(binary, 16384, head=True) or b""
    except (OSError, IntentLoopError):
        return None
    needle = ("/" + RUNTIME_DIR + "/").encode()
    at = head.find(needle)
    while at >= 0:
        candidate = head[at + len(needle):at + len(needle) + 64].decode("ascii", "replace")
        if is_build_id(candidate):
            return candidate
        at = head.find(needle, at + 1)
    return None


def record(env, event_name, executable):
    """Leave this run's trace; never raises (the answer is out; nothing here may fail the hook)."""
    try:
        found = find_data_root(env, executable)
        install = running_install_id()
        if not found or not install:
            return
        base = os.path.join(found[0], RUNTIME_DIR)
        ran = os.path.join(base, install, RAN_DIR)
        path = os.path.join(ran, event_name)
        os.makedirs(found[0], 0o700, exist_ok=True)  # the data root itself may be reached through links
        # every directory below it is made here or must be a real one of this user's: a link or
        # another user's directory in the data root is never written through (issue 33, item 9)
        if not all(_own_directory(directory) for directory in (base, os.path.dirname(ran), ran)):
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        try:
            os.write(fd, (executable or "").encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except FileExistsError:
        try:
            os.utime(path, follow_symlinks=False)  # the directories above it were checked: no link on the way
        except OSError:
            pass
    except (OSError, ValueError):
        pass


def _own_directory(path):
    """True once `path` is a real directory of this user's (made 0700 when missing)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        try:
            os.mkdir(path, 0o700)
            st = os.lstat(path)
        except OSError:
            return False
    return os.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()

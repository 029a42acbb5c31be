"""Every hook run leaves its install's id and the time in the data root (launch/hook_runs.py reads
them): kept to the writer's half, which every hook loads after its answer, so that this costs one
small module and one utime."""
from intent_loop.base import fast_os as os  # every hook runs this: the slice of os without its import
from intent_loop.base.canonical import sha256_hex
from intent_loop.base.data_root import find_data_root

RUNTIME_DIR = "runtime"
RAN_DIR = "hooks-ran"
SOURCE_LAUNCHER = os.path.join("hooks", "intent-loop")
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../intent_loop


def running_install_id(package=_PACKAGE):
    """The id of the code running now: its extracted runtime's build id, or its source tree's."""
    parts = package.split(os.sep)
    # <runtime dir>/<build id>/<binary>_<build id>/site-packages/intent_loop, the path as imported (no
    # realpath: this runs on every hook); the runtime dir is the data root's or, for the command
    # line and the server before the data root exists, a private one (launch/launcher.py)
    if len(parts) > 4 and parts[-2] == "site-packages" and len(parts[-4]) == 64 and parts[-3].endswith("_" + parts[-4]):
        return parts[-4]
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


def record(env, event_name, executable):
    """Leave this run's trace; never raises (the answer is out; nothing here may fail the hook)."""
    try:
        found = find_data_root(env, executable)
        install = running_install_id()
        if not found or not install:
            return
        ran = os.path.join(found[0], RUNTIME_DIR, install, RAN_DIR)
        path = os.path.join(ran, event_name)
        try:
            os.utime(path, follow_symlinks=False)
            return
        except FileNotFoundError:
            pass
        base = os.path.join(found[0], RUNTIME_DIR)
        os.makedirs(base, 0o700, exist_ok=True)
        if os.path.islink(base):
            return
        os.makedirs(ran, 0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
        try:
            os.write(fd, (executable or "").encode("utf-8", "surrogateescape"))
        finally:
            os.close(fd)
    except (OSError, ValueError):
        pass

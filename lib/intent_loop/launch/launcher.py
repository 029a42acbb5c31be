"""The launcher's long way: find the data root in Python, then import from the runtime or extract it
(before the data root exists, the command line and the server import from the binary's own zip).

The /bin/sh prefix runs this when it cannot settle the data root itself (PLUGIN_DATA, a
plugin-cache path, a symlinked binary, a relative override) or finds no complete runtime.
build.py embeds it as `python -I -S -c` code, with the source of fast_path.py and data_root.py
in place of their imports (and the real `os` for the fast slice), and appends a call to `run`.
"""
import os
import sys

from intent_loop.base.data_root import find_data_root
from intent_loop.launch.fast_path import MARKER, answer_fail_open_on_sigterm, run_extracted

FAIL_OPEN = b'{"continue":true}'
EXTRACTING_ENV = "INTENT_LOOP_EXTRACTING"  # names the fresh site-packages for that first run's check


def run(build_id, module, function, *, is_hook):
    """sys.argv is [-c, binary, *args]."""
    if is_hook:
        answer_fail_open_on_sigterm()
    binary = os.path.realpath(sys.argv[1])
    args = sys.argv[2:]
    root = runtime_root(os.environ, binary, build_id, is_hook=is_hook)
    if root is None and is_hook:  # a hook with no data root at all has nothing to do
        _broken_quietly()
    if root is None:
        run_from_zip(binary, args, module, function)
        return
    root = repaired(root, is_hook=is_hook)
    site_packages = os.path.join(root, os.path.basename(binary) + "_" + build_id, "site-packages")
    if os.path.isfile(os.path.join(site_packages, MARKER)):
        sys.argv = [sys.argv[0], site_packages, binary] + args
        run_extracted(module, function, is_hook=False)  # the handler is in place already
    else:
        extract(root, site_packages, binary, args, is_hook=is_hook)


def repaired(root, *, is_hook):
    """`root` (<data root>/runtime/<build id>) with whatever is not our own directory at it or at
    its parent (a file, a symlink, a FIFO, another user's directory) moved aside, so the next
    extraction can proceed and nothing is extracted through a link or imported from a directory
    someone else can write. When that is impossible: a hook answers fail-open, the command line
    says RUNTIME_BROKEN and what to do."""
    for path in (os.path.dirname(root), root):
        if not os.path.lexists(path) or (os.path.isdir(path) and not os.path.islink(path)
                                         and os.lstat(path).st_uid == os.getuid()):
            continue
        try:
            os.rename(path, f"{path}.broken-{os.urandom(4).hex()}")
        except OSError:
            _broken(path, is_hook)
    return root


def _broken_quietly():
    """A hook that cannot run answers fail-open (after draining stdin) and leaves."""
    while os.read(0, 65536):
        pass
    os.write(1, FAIL_OPEN)
    sys.exit(0)


def _broken(path, is_hook):
    if is_hook:
        _broken_quietly()
    sys.exit(f"intent-loop: RUNTIME_BROKEN: {path} is not a directory of ours and could not be moved aside; "
             "remove it, then run the command again")


def runtime_root(env, binary, build_id, *, is_hook):
    """<data root>/runtime/<build id>, or None: for a hook without a data root, and for the command
    line and the server until the data root exists (so a dry run creates nothing there)."""
    try:
        found = find_data_root(env, binary)
    except ValueError:
        found = None
    if found and (is_hook or os.path.isdir(found[0])):
        return os.path.join(found[0], "runtime", build_id)
    return None


def run_from_zip(binary, args, module, function):
    """Call the entry point imported straight from the binary's own zip (zipimport finds the
    archive behind the /bin/sh prefix), writing nothing anywhere: no runtime extracted, no bytecode.
    Nothing is imported from a directory another program could have filled (a temporary directory
    is writable by the agent). orjson, a C extension zipimport cannot load, gives way to the
    standard library's JSON (base/json_engine.py)."""
    sys.dont_write_bytecode = True
    sys.argv = [binary] + args
    sys.path[0:0] = [os.path.join(binary, "site-packages")]
    getattr(__import__(module, fromlist=[function]), function)()


# Unpacked, a binary takes about six times its size (measured: a 390 KB binary, 2.3 MB runtime).
UNPACKED_PER_BYTE = 8


def extract(root, site_packages, binary, args, *, is_hook=False):
    """Run the binary as a zip so shiv extracts it into `root` (again, over a damaged runtime).
    shiv's own extraction would die with a traceback on a full disk, so the room is checked first:
    a hook then answers fail-open, the command line says WRITE_FAILED and what to do."""
    for name in [name for name in os.environ if name.startswith("SHIV_")]:
        del os.environ[name]
    if os.path.isdir(site_packages):
        os.environ["SHIV_FORCE_EXTRACT"] = "1"
    try:
        os.makedirs(root, 0o700, exist_ok=True)
        st = os.statvfs(root)
        room, needed = st.f_bavail * st.f_frsize, os.path.getsize(binary) * UNPACKED_PER_BYTE
    except OSError as exc:
        room, needed = 0, 1
        why = exc.strerror
    else:
        why = f"{room // 1024} KiB free, about {needed // 1024} KiB needed"
    if room < needed:
        if is_hook:
            _broken_quietly()
        sys.exit(f"intent-loop: WRITE_FAILED: no room to unpack intent-loop's runtime in {root} ({why}); "
                 "free disk space, then run the command again")
    os.environ["SHIV_ROOT"] = root
    os.environ[EXTRACTING_ENV] = site_packages
    os.execv(sys.executable, [sys.executable, "-I", "-S", binary] + args)

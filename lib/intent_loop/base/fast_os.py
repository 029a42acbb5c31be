"""The slice of `os` and `os.path` the hook path uses, built on the builtin `posix` module.

A hook runs under `python -I -S`, where nothing has imported `os` yet, and importing it costs
about 1.5-2 ms (it builds `os.environ` on `_collections_abc`): a seventh of the interpreter's
own start, paid on every prompt. Modules on the hook path therefore call `fast_os.<name>` and
get the same behaviour as `os.<name>` / `os.path.<name>` for the calls provided here (tests
compare them with the real `os` and `posixpath` under each CPython the project supports). The
environment is read through `getenv` when asked, never copied. POSIX only, like the hooks; a
Windows port replaces this module with the real `os`.
"""
import posix
import sys
from _stat import S_ISDIR, S_ISLNK, S_ISREG  # noqa: F401 - S_ISREG re-exported
from posix import (  # noqa: F401 - re-exported for `fast_os.<name>` call sites
    O_APPEND,
    O_CREAT,
    O_DIRECTORY,
    O_EXCL,
    O_NOFOLLOW,
    O_NONBLOCK,
    O_RDONLY,
    O_RDWR,
    O_WRONLY,
    X_OK,
    _exit,
    access,
    close,
    dup2,
    fork,
    fstat,
    fsync,
    ftruncate,
    getcwd,
    geteuid,
    getpid,
    getuid,
    kill,
    listdir,
    lstat,
    mkdir,
    open,
    pread,
    pwrite,
    read,
    readlink,
    rename,
    replace,
    rmdir,
    setsid,
    stat,
    sysconf,
    unlink,
    urandom,
    utime,
    write,
)

try:
    from posix import preadv  # noqa: F401 - not on every POSIX system
except ImportError:  # pragma: no cover
    pass
try:
    from posix import fdatasync  # noqa: F401 - not on macOS; platform.sync_data falls back
except ImportError:  # pragma: no cover
    pass
try:
    from posix import copy_file_range  # noqa: F401 - Linux only; atomic.py falls back without it
except ImportError:  # pragma: no cover
    pass

name = "posix"
sep = "/"
path = sys.modules[__name__]  # `os.path.join` and friends are the functions below

_ENCODING = sys.getfilesystemencoding()


def getenv(key, default=None):
    """os.getenv: the variable read from posix.environ when asked and decoded as os.environ
    decodes it. posix.environ is the very dict os.environ stores its bytes in, so a change made
    through os.environ is seen here too: there is no second copy to fall out of step."""
    value = posix.environ.get(key.encode(_ENCODING, "surrogateescape"))
    return default if value is None else value.decode(_ENCODING, "surrogateescape")


class Environment:
    """The read-only view of the environment a hook passes down as `env` (callers use `.get`)."""

    __slots__ = ()
    get = staticmethod(getenv)

    def __contains__(self, key):
        return getenv(key) is not None


environment = Environment()


def join(first, *rest):
    result = first
    for part in rest:
        if part.startswith("/"):
            result = part
        elif not result or result.endswith("/"):
            result += part
        else:
            result += "/" + part
    return result


def split(p):
    """(head, tail) like posixpath.split: the head keeps a root of slashes, loses trailing ones."""
    cut = p.rfind("/") + 1
    head, tail = p[:cut], p[cut:]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head, tail


def basename(p):
    return p[p.rfind("/") + 1:]


def dirname(p):
    return split(p)[0]


def isabs(p):
    return p.startswith("/")


def normpath(p):
    """Lexical normalisation like posixpath.normpath (POSIX keeps exactly two leading slashes)."""
    if not p:
        return "."
    leading = 0
    if p.startswith("/"):
        leading = 2 if p.startswith("//") and not p.startswith("///") else 1
    parts = []
    for part in p.split("/"):
        if part in ("", "."):
            continue
        if part != ".." or (not leading and not parts) or (parts and parts[-1] == ".."):
            parts.append(part)
        elif parts:
            parts.pop()
    return "/" * leading + "/".join(parts) or "."


def abspath(p):
    return normpath(p if isabs(p) else join(getcwd(), p))


def realpath(p):
    """Every symbolic link resolved, like os.path.realpath of Python 3.11 and 3.12 (non-strict:
    missing parts stay as written, and a link loop stops resolution where it was found; 3.13
    goes on after a loop, which only matters for paths no working directory can have). Relative
    paths are joined to the working directory first, which differs from CPython only when a
    loop is met through relative link names."""
    resolved, _complete = _resolve(p if isabs(p) else join(getcwd(), p), "", {})
    return abspath(resolved)


def _resolve(rest, base, links):
    """Append the components of `rest` to the already resolved `base`; (path, finished)."""
    if rest.startswith("/"):
        base = "/"
    parts = rest.split("/")
    for index, part in enumerate(parts):
        if part in ("", "."):
            continue
        if part == "..":
            base = _parent(base)
            continue
        candidate = join(base, part)
        try:
            is_link = S_ISLNK(lstat(candidate).st_mode)
        except OSError:
            is_link = False
        if not is_link:
            base = candidate
            continue
        remaining = "/".join(parts[index + 1:])
        if candidate in links:
            if links[candidate] is None:  # a loop: stop resolving, keep the rest as written
                return join(candidate, remaining), False
            base = links[candidate]
            continue
        links[candidate] = None
        base, finished = _resolve(readlink(candidate), base, links)
        if not finished:
            return join(base, remaining), False
        links[candidate] = base
    return base, True


def _parent(base):
    if not base:
        return ".."
    head, tail = split(base)
    return join(head, "..", "..") if tail == ".." else head


def exists(p):
    try:
        stat(p)
    except (OSError, ValueError):
        return False
    return True


def isdir(p):
    try:
        return S_ISDIR(stat(p).st_mode)
    except (OSError, ValueError):
        return False


def isfile(p):
    try:
        return S_ISREG(stat(p).st_mode)
    except (OSError, ValueError):
        return False


def islink(p):
    try:
        return S_ISLNK(lstat(p).st_mode)
    except (OSError, ValueError):
        return False


def getsize(p):
    return stat(p).st_size


def makedirs(p, mode=0o777, exist_ok=False):
    """Like os.makedirs: `mode` applies to the last directory, parents get the default."""
    head, tail = split(p)
    if not tail:
        head, tail = split(head)
    if head and tail and not exists(head):
        try:
            makedirs(head, exist_ok=exist_ok)
        except FileExistsError:
            pass
        if tail == ".":
            return
    try:
        mkdir(p, mode)
    except OSError:
        if not exist_ok or not isdir(p):
            raise

"""The bytecode intent-loop leaves under the data root: find damaged .pyc files, and the trees of
`pycache/` whose sources are gone.

`<data root>/pycache/` mirrors, below it, the absolute path of every source the source-run plugin
imported (the source launcher sets sys.pycache_prefix), so each plugin version adds a tree;
`runtime/<build id>/.../site-packages/` holds the binaries' own `__pycache__` directories. Both
are caches: removing a file costs one compile at the next import. Links are never followed.
"""
import os
import stat

from intent_loop.launch.run_record import RUNTIME_DIR

PYCACHE_DIR = "pycache"
HEADER_BYTES = 16  # magic, flags, then the source's mtime and size or its hash (PEP 552)
READ_CAP = 16 * 1024 * 1024  # far above any module of ours; a bigger file is not read


def damaged(data_root):
    """The .pyc files under the data root's bytecode that this interpreter fails to load: cut
    short (a full disk), or something else than a code object behind its header. A file of
    another Python version (another magic number) is that version's to judge and left alone."""
    import marshal
    from importlib.util import MAGIC_NUMBER

    found = []
    for path in _bytecode_files(data_root):
        data = _read_regular(path)
        if data is None or data[:4] != MAGIC_NUMBER:
            continue
        try:
            code = marshal.loads(data[HEADER_BYTES:])
        except (EOFError, ValueError, TypeError):
            found.append(path)
            continue
        if not isinstance(code, type(damaged.__code__)):
            found.append(path)
    return found


def remove(paths):
    """({path: why} of those that could not be removed); unlink never follows a link."""
    failed = {}
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            failed[path] = exc.strerror or str(exc)
    return failed


def stale_trees(data_root):
    """[{build_id: None, path, source, bytes}] for the trees of `pycache/` whose source directory
    no longer exists (a plugin version Codex removed, a moved checkout), in the shape of
    extracted_runtime.old_runtimes so that the same sweep removes them."""
    base = os.path.join(data_root, PYCACHE_DIR)
    if not is_own_directory(base):
        return []
    from intent_loop.launch.extracted_runtime import tree_bytes

    found = []
    for directory, dirs, _files in os.walk(base):
        source_dir = directory[len(base):] or os.sep
        kept = []
        for name in sorted(dirs):
            if os.path.isdir(os.path.join(source_dir, name)):
                kept.append(name)
            else:
                path = os.path.join(directory, name)
                found.append({"build_id": None, "path": path, "source": os.path.join(source_dir, name),
                              "bytes": tree_bytes(path)})
        dirs[:] = kept
    return found


def is_own_directory(path):
    """A real directory (not a link) owned by this user: the only kind bytecode is read from or
    written into under the data root."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()


def _bytecode_files(data_root):
    for name in (PYCACHE_DIR, RUNTIME_DIR):
        base = os.path.join(data_root, name)
        if not is_own_directory(base):
            continue
        for directory, _dirs, files in os.walk(base):  # os.walk does not follow links to directories
            yield from (os.path.join(directory, f) for f in sorted(files) if f.endswith(".pyc"))


def _read_regular(path):
    """The bytes of a regular file (never a link, FIFO or device; never blocking), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > READ_CAP:
            return None
        chunks, size = [], 0
        while size <= st.st_size:
            chunk = os.read(fd, st.st_size + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)

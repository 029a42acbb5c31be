"""The extracted runtimes of the binaries: mark a fresh extraction complete, find and remove old ones.

The /bin/sh launcher of each binary imports straight from
`<data root>/runtime/<build id>/<name>_<build id>/site-packages` only when that directory holds
the marker written here; otherwise it runs the file as a zip so shiv extracts it again. Every
build has its own build id, so each new build leaves the previous one's runtime behind until
`intent-loop install --apply` removes the runtimes no installed binary uses.
"""
import os

from intent_loop.launch.fast_path import MARKER
from intent_loop.launch.launcher import EXTRACTING_ENV
from intent_loop.launch.run_record import RUNTIME_DIR, build_id_of, is_build_id  # noqa: F401 - build_id_of re-exported

REMOVING_PREFIX = ".removing-"  # a runtime being deleted; a sweep interrupted half-way is finished by the next
RECENT_SECONDS = 3600  # a runtime changed this recently may be a first run extracting right now: kept


def finish_extraction():
    """Called first by every entry point; costs one environment lookup on the fast path."""
    # os.environ keeps its bytes in posix.environ, which fast_os.getenv reads: the hooks no longer see it
    site_packages = os.environ.pop(EXTRACTING_ENV, None)
    if not site_packages:
        return
    import sys
    import zipfile  # first run only: zipfile costs ~28 ms

    try:
        with zipfile.ZipFile(sys.argv[0]) as archive:
            if not is_complete(archive, site_packages):
                return
        fd = os.open(os.path.join(site_packages, MARKER), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
    except (OSError, zipfile.BadZipFile):
        pass  # no marker: the next run extracts again, nothing breaks


def is_complete(archive, site_packages):
    """Every file of the zip's site-packages is on disk with the right size."""
    for info in archive.infolist():
        if not info.filename.startswith("site-packages/") or info.is_dir():
            continue
        path = os.path.join(site_packages, info.filename[len("site-packages/"):])
        try:
            if os.path.getsize(path) != info.file_size:
                return False
        except OSError:
            return False
    return True


def running_build_id():
    """The build id of the runtime this code was imported from, or None (a source checkout)."""
    parts = os.path.realpath(__file__).split(os.sep)
    for parent, name in zip(parts, parts[1:], strict=False):
        if parent == RUNTIME_DIR and is_build_id(name):
            return name
    return None


def old_runtimes(data_root, in_use, *, _now=None):
    """[{build_id, path, bytes}] of the runtimes under `data_root` that no build id in `in_use`
    names and that nothing changed for an hour. Only real directories owned by this user count;
    links are never followed."""
    import stat
    import time

    now = time.time() if _now is None else _now
    base = os.path.join(data_root, RUNTIME_DIR)
    if not _is_own_directory(base):
        return []
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return []
    found = []
    for name in names:
        build_id = name[len(REMOVING_PREFIX):].split("-", 1)[0] if name.startswith(REMOVING_PREFIX) else name
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not is_build_id(build_id) or not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        if name == build_id and (build_id in in_use or now - st.st_mtime < RECENT_SECONDS):
            continue
        found.append({"build_id": build_id, "path": path, "bytes": tree_bytes(path)})
    return found


def remove_runtime(path):
    """Move the runtime out of the way first (a start in between extracts afresh instead of
    meeting half a tree), then delete it; shutil.rmtree never follows a link out of it."""
    import shutil

    base, name = os.path.split(path)
    if not name.startswith(REMOVING_PREFIX):
        doomed = os.path.join(base, f"{REMOVING_PREFIX}{name}-{os.getpid()}")
        os.rename(path, doomed)
        path = doomed
    shutil.rmtree(path)


def describe(runtimes):
    """`2 old runtimes (9.8 MB): 4981946df67f, 0c1d2e3f4a5b`, content-free; the bytecode trees of
    sources that are gone (launch/bytecode_cache.stale_trees) are counted on their own."""
    parts = []
    built = [runtime for runtime in runtimes if runtime["build_id"]]
    if built:
        total = sum(runtime["bytes"] for runtime in built)
        ids = ", ".join(runtime["build_id"][:12] for runtime in built)
        parts.append(f"{len(built)} old runtime{'' if len(built) == 1 else 's'} ({total / 1e6:.1f} MB): {ids}")
    trees = [runtime for runtime in runtimes if not runtime["build_id"]]
    if trees:
        total = sum(tree["bytes"] for tree in trees)
        parts.append(f"bytecode of {len(trees)} source director{'y' if len(trees) == 1 else 'ies'} no longer "
                     f"there ({total / 1e6:.1f} MB): " + ", ".join(tree["source"] for tree in trees))
    return "; ".join(parts)


def _is_own_directory(path):
    import stat

    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()


def tree_bytes(path):
    total = 0
    for directory, _dirs, files in os.walk(path):  # os.walk does not follow links to directories
        for name in files:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                pass
    return total

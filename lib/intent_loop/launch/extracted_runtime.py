"""The extracted runtime of a binary: confirm a fresh shiv extraction is complete, then mark it.

The /bin/sh launcher of each binary imports straight from
`<data root>/runtime/<build id>/<name>_<build id>/site-packages` only when that directory holds
the marker written here; otherwise it runs the file as a zip so shiv extracts it again.
"""
import os

from intent_loop.launch.fast_path import MARKER
from intent_loop.launch.launcher import EXTRACTING_ENV


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

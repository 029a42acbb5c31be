"""Recovery of a damaged ledger: its verified prefix, and cutting the ledger back to it under the lock
(the damaged suffix goes to quarantine with a manifest; nothing verified is ever lost).

Both stream (storage/bulk_verify.py): the prefix is found by the chunked verifier and the bytes are
copied file to file, so memory stays bounded at any ledger size.
"""
import hashlib
import time

from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import chain_marker, fast_os, quarantine
from intent_loop.storage import lock as lock_mod
from intent_loop.storage.bulk_verify import fold_stream
from intent_loop.storage.canonical import canonical_bytes
from intent_loop.storage.checkpoint import STATE_FILE
from intent_loop.storage.ledger import empty_verified, is_project_present, open_ledger
from intent_loop.storage.paths import ensure_project_layout

_COPY = 1 << 20


class _NoFold:
    """Recovery needs the chain checked, not the state folded."""

    version = "recovery"

    def initial(self):
        return None

    def apply(self, state, event):
        pass


class Prefix:
    """What a scan found: the ledger's size, its verified prefix (bytes, lines) and the error that ends it."""

    __slots__ = ("ledger_bytes", "size", "count", "error")

    def __init__(self, ledger_bytes, size, count, error):
        self.ledger_bytes, self.size, self.count, self.error = ledger_bytes, size, count, error


def scan(fd, size, project_id, *, on_progress=None):
    """The verified prefix of an open ledger of `size` bytes. A partial last line is damage too
    (LEDGER_TORN_TAIL)."""
    reducer = _NoFold()
    verified = empty_verified(reducer)
    error = None
    try:
        fold_stream(fd, verified, reducer, project_id=project_id, end=size, on_progress=on_progress)
    except IntentLoopError as exc:
        error = exc
    if error is None and verified.size < size:
        line = verified.count + 1
        error = IntentLoopError(ErrorCode.LEDGER_TORN_TAIL, f"line {line}: a partial last line without LF", line=line)
    return Prefix(size, verified.size, verified.count, error)


def scan_project(paths, *, on_progress=None):
    """(Prefix, fd or None) of the project's ledger; the caller closes the fd."""
    if not is_project_present(paths):
        return Prefix(0, 0, 0, None), None
    fd, st = open_ledger(paths)
    if fd is None:
        return Prefix(0, 0, 0, None), None
    try:
        return scan(fd, st.st_size, paths.project_id, on_progress=on_progress), fd
    except BaseException:
        fast_os.close(fd)
        raise


def copy_range(fd, start, end, path):
    """Write bytes [start, end) of an open file to a new 0600 file `path` (temp + fsync + rename, in
    chunks: a suffix can be most of the ledger); return its SHA-256."""
    from intent_loop.storage import platform
    from intent_loop.storage.atomic import temp_name_for, write_all

    digest = hashlib.sha256()
    temp = temp_name_for(path)
    try:
        out = fast_os.open(temp, fast_os.O_WRONLY | fast_os.O_CREAT | fast_os.O_EXCL | fast_os.O_NOFOLLOW, 0o600)
        try:
            position = start
            while position < end:
                data = fast_os.pread(fd, min(_COPY, end - position), position)
                if not data:
                    break
                digest.update(data)
                write_all(out, data)
                position += len(data)
            platform.fsync_file(out)
        finally:
            fast_os.close(out)
        fast_os.replace(temp, path)
        platform.fsync_directory(fast_os.path.dirname(path))
    except OSError as exc:
        try:
            fast_os.unlink(temp)
        except OSError:
            pass
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not write {path}: {exc.strerror or exc}") from exc
    return digest.hexdigest()


def _after_last_lf(fd, start, end):
    """The offset just after the last LF in bytes [start, end) of an open file, or `start`."""
    position = end
    while position > start:
        low = max(start, position - _COPY)
        chunk = fast_os.pread(fd, position - low, low)
        cut = chunk.rfind(b"\n")
        if cut >= 0:
            return low + cut + 1
        position = low
    return start


def export_prefix(fd, size, path):
    """Write the verified prefix (bytes [0, size) of the open ledger) to `path`, copied in the kernel."""
    from intent_loop.storage.atomic import replace_atomically

    replace_atomically(path, b"", mode=0o600, prefix=(fd, size))


def export_prefix_empty(path):
    """An empty export (the project has no ledger yet)."""
    from intent_loop.storage.atomic import replace_atomically

    replace_atomically(path, b"", mode=0o600)


def cut_to_verified_prefix(paths, *, deadline, on_progress=None):
    """Under the project lock: quarantine the suffix with a manifest, then keep exactly the prefix."""
    from intent_loop.storage.atomic import replace_atomically  # writers only

    ensure_project_layout(paths)
    with lock_mod.ProjectLock(paths.dir, deadline=deadline) as held:
        held.clean_residue()
        found, fd = scan_project(paths, on_progress=on_progress)  # re-read under the lock
        if fd is None:
            return {"applied": False, "verified_lines": 0}
        try:
            if found.error is None:
                chain_marker.clear(paths)
                return {"applied": False, "verified_lines": found.count}
            error = found.error
            suffix_name, manifest_name = quarantine.recovered_suffix_names(time.time())
            suffix_path = fast_os.path.join(paths.quarantine_dir, suffix_name)
            # Complete lines of the damaged suffix are kept, as the manifest describes them; a torn
            # partial last line never is (seed 000: only its byte length and SHA-256).
            lines_end = _after_last_lf(fd, found.size, found.ledger_bytes)
            suffix_sha = copy_range(fd, found.size, lines_end, suffix_path) if lines_end > found.size else None
            manifest = {"kind": "recovered_suffix", "byte_length": lines_end - found.size,
                        "sha256": suffix_sha, "offset": found.size, "first_bad_line": error.line,
                        "error_code": error.code, "reason": error.message, "verified_lines": found.count}
            if suffix_sha is None:
                suffix_path = None
            if lines_end < found.ledger_bytes:
                torn = fast_os.pread(fd, found.ledger_bytes - lines_end, lines_end)
                manifest["torn_tail"] = {"byte_length": len(torn), "sha256": hashlib.sha256(torn).hexdigest()}
            replace_atomically(fast_os.path.join(paths.quarantine_dir, manifest_name),
                               canonical_bytes(manifest) + b"\n", mode=0o600)
            replace_atomically(paths.ledger, b"", prefix=(fd, found.size))
        finally:
            fast_os.close(fd)
        for name in (STATE_FILE, chain_marker.MARKER_FILE):
            try:
                fast_os.unlink(fast_os.path.join(paths.cache_dir, name))
            except FileNotFoundError:
                pass
    return {"applied": True, "verified_lines": found.count, "verified_bytes": found.size,
            "quarantine": suffix_path, "manifest": manifest}

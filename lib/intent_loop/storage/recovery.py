"""Recovery of a damaged ledger: its verified prefix, and cutting the ledger back to it under the lock
(the damaged suffix goes to quarantine with a manifest; nothing verified is ever lost).

Guard's versions survive the cut: Guard must never see a (contract_ref, contract_version) again with
other content, so the highest version ever published per ref (the prefix's, every
`contract_published` line of the damaged suffix that still parses, the Guard file's, earlier
recovery manifests') is written into the recovered ledger as one `contract_version_floor` event, in
the same atomic replace as the cut, and new publications continue above it.

Both stream (storage/cache/bulk_verify.py): the prefix is found by the chunked verifier and the bytes are
copied file to file, so memory stays bounded at any ledger size.
"""
import hashlib
import time

from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import lock as lock_mod
from intent_loop.storage import quarantine
from intent_loop.storage.cache import chain_marker
from intent_loop.storage.cache.bulk_verify import fold_stream
from intent_loop.storage.cache.checkpoint import STATE_FILE
from intent_loop.storage.ledger import empty_verified, is_project_present, open_ledger
from intent_loop.storage.paths import ensure_project_layout

_COPY = 1 << 20


FLOOR_EVENT = "contract_version_floor"
_REF_PREFIX = "intent:"
_SUFFIX_LINE_CAP = 1 << 20  # a contract_published or task_started line is far smaller; longer ones are skipped
_MANIFEST_CAP = 1 << 20


class _Versions:
    """Recovery needs the chain checked and, of the state, only the Guard versions and the task ids."""

    version = "recovery"

    def initial(self):
        return {"floors": {}, "tasks": set()}

    def apply(self, state, event):
        note_event(state, event)


def note_event(state, event):
    """Take what an event (verified or merely parsed) says about Guard versions and task ids."""
    if not isinstance(event, dict):
        return
    payload = event.get("payload")
    kind = event.get("event_type")
    if isinstance(event.get("task_id"), str):
        state["tasks"].add(event["task_id"])
    if not isinstance(payload, dict):
        return
    if kind == "contract_published":
        _raise_floor(state["floors"], payload.get("contract_ref"), payload.get("contract_version"))
    elif kind == FLOOR_EVENT and isinstance(payload.get("floors"), dict):
        for ref, version in payload["floors"].items():
            _raise_floor(state["floors"], ref, version)


def _raise_floor(floors, ref, version):
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX) and type(version) is int and version > 0:
        floors[ref] = max(floors.get(ref, 0), version)


class Prefix:
    """What a scan found: the ledger's size, its verified prefix (bytes, lines, last hash), the
    error that ends it, and the prefix's Guard versions and task ids."""

    __slots__ = ("ledger_bytes", "size", "count", "error", "last_hash", "versions")

    def __init__(self, ledger_bytes, size, count, error, last_hash=None, versions=None):
        self.ledger_bytes, self.size, self.count, self.error = ledger_bytes, size, count, error
        self.last_hash = last_hash
        self.versions = versions if versions is not None else _Versions().initial()


def scan(fd, size, project_id, *, on_progress=None):
    """The verified prefix of an open ledger of `size` bytes. A partial last line is damage too
    (LEDGER_TORN_TAIL)."""
    reducer = _Versions()
    verified = empty_verified(reducer)
    error = None
    try:
        fold_stream(fd, verified, reducer, project_id=project_id, end=size, on_progress=on_progress)
    except IntentLoopError as exc:
        error = exc
    if error is None and verified.size < size:
        line = verified.count + 1
        error = IntentLoopError(ErrorCode.LEDGER_TORN_TAIL, f"line {line}: a partial last line without LF", line=line)
    return Prefix(size, verified.size, verified.count, error, verified.last_hash, verified.state)


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
    from intent_loop.base import platform
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


def _suffix_versions(fd, start, end, versions):
    """Note every line of bytes [start, end) that still parses as JSON (hash checked or not, a torn
    partial last line included): the damaged suffix may hold the newest publications."""
    from intent_loop.base.canonical import loads

    position, pending = start, b""
    while position < end or pending:
        data = fast_os.pread(fd, min(_COPY, end - position), position) if position < end else b""
        position += len(data)
        if not data:
            lines, pending = [pending], b""
        else:
            lines = (pending + data).split(b"\n")
            pending = lines.pop()
            if len(pending) > _SUFFIX_LINE_CAP:
                pending = b"\xff"  # never parses: the rest of this long line is skipped
        for line in lines:
            if line and len(line) <= _SUFFIX_LINE_CAP:
                try:
                    note_event(versions, loads(line.decode("utf-8")))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    pass


def _manifest_versions(paths, versions):
    """Floors recorded by earlier recoveries (their manifests are capped, regular files of ours)."""
    from intent_loop.base.canonical import loads
    from intent_loop.storage.paths import read_capped

    try:
        names = fast_os.listdir(paths.quarantine_dir)
    except OSError:
        return
    for name in names:
        if not name.endswith(quarantine.RECOVERED_MANIFEST):
            continue
        try:
            data = read_capped(fast_os.path.join(paths.quarantine_dir, name), _MANIFEST_CAP)
            manifest = loads(data.decode("utf-8")) if data is not None else None
        except (IntentLoopError, OSError, UnicodeDecodeError, ValueError, RecursionError):
            continue
        floors = manifest.get("contract_version_floors") if isinstance(manifest, dict) else None
        if isinstance(floors, dict):
            for ref, version in floors.items():
                _raise_floor(versions["floors"], ref, version)


def _floor_line(paths, found, floors, manifest_name, manifest_sha256):
    """The sealed `contract_version_floor` line (bytes with LF) chained to the verified prefix."""
    from intent_loop.base.timestamps import format_utc
    from intent_loop.storage.ledger import Draft
    from intent_loop.storage.sealing import request_fingerprint, seal

    params = {"floors": floors, "manifest_sha256": manifest_sha256}
    draft = Draft(FLOOR_EVENT, None, "system", dict(params, manifest=manifest_name,
                                                    request_fingerprint=request_fingerprint("recover", params)))
    _event, line = seal(draft, project_id=paths.project_id, request_id=f"recover:{manifest_sha256[:32]}",
                        prev_hash=found.last_hash, occurred_at=format_utc(time.time()))
    return line


def export_prefix(fd, size, path):
    """Write the verified prefix (bytes [0, size) of the open ledger) to `path`, copied in the kernel."""
    from intent_loop.storage.atomic import replace_atomically

    replace_atomically(path, b"", mode=0o600, prefix=(fd, size))


def export_prefix_empty(path):
    """An empty export (the project has no ledger yet)."""
    from intent_loop.storage.atomic import replace_atomically

    replace_atomically(path, b"", mode=0o600)


def cut_to_verified_prefix(paths, *, deadline, on_progress=None, guard_version=None):
    """Under the project lock: quarantine the suffix with a manifest, then keep exactly the prefix,
    followed by a `contract_version_floor` event when anything outside the prefix published a
    higher Guard version. `guard_version()` (called under the lock) is the Guard file's
    (contract_ref, contract_version) or None; it counts only when the ref names a task of this
    project (one the prefix or the damaged suffix knows)."""
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
            floors, raised = _carried_floors(paths, fd, found, guard_version)
            manifest["contract_version_floors"] = floors
            manifest_bytes = canonical_bytes(manifest) + b"\n"
            replace_atomically(fast_os.path.join(paths.quarantine_dir, manifest_name), manifest_bytes, mode=0o600)
            manifest_sha256 = hashlib.sha256(manifest_bytes).hexdigest()
            tail = _floor_line(paths, found, raised, manifest_name, manifest_sha256) if raised else b""
            replace_atomically(paths.ledger, tail, prefix=(fd, found.size))
        finally:
            fast_os.close(fd)
        for name in (STATE_FILE, chain_marker.MARKER_FILE):
            try:
                fast_os.unlink(fast_os.path.join(paths.cache_dir, name))
            except FileNotFoundError:
                pass
    return {"applied": True, "verified_lines": found.count, "verified_bytes": found.size,
            "quarantine": suffix_path, "manifest": manifest, "manifest_sha256": manifest_sha256,
            "version_floors": raised}


def _carried_floors(paths, fd, found, guard_version):
    """(every ref's highest version known anywhere, the refs whose highest is above the prefix's)."""
    prefix = found.versions["floors"]
    known = {"floors": dict(prefix), "tasks": set(found.versions["tasks"])}
    _suffix_versions(fd, found.size, found.ledger_bytes, known)
    _manifest_versions(paths, known)
    guard = guard_version() if guard_version is not None else None
    if guard is not None:
        ref, version = guard
        if isinstance(ref, str) and ref[len(_REF_PREFIX):] in known["tasks"] | {
                r[len(_REF_PREFIX):] for r in known["floors"]}:
            _raise_floor(known["floors"], ref, version)
    floors = known["floors"]
    return floors, {ref: v for ref, v in sorted(floors.items()) if v > prefix.get(ref, 0)}

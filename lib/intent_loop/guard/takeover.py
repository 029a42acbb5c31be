"""A takeover of a path we hold (issue 33, item 3): the restoration's plan, and the bytes it
replaces, kept under the data root within their caps (and cleared by a deletion that names them).
Loaded only when there is a takeover (file_state.held_record decides whether we hold the path;
guard_dir.obstacle finds a link, a file or a directory in the way) or a deletion.
"""
from intent_loop.base import fast_os
from intent_loop.base.canonical import sha256_hex
from intent_loop.guard import file_state, guard_dir
from intent_loop.storage.ledger import Draft

MOVED = ("directory", "not_directory")  # what is moved aside, never deleted
KEPT_DIR = "guard-replaced"
KEEP_CAP = 262_144  # the replaced bytes kept under the data root, at most Guard's own size limit
KEPT_TOTAL_CAP, KEPT_FILES_CAP = 4 << 20, 32  # the whole store: beyond either, the oldest go


def aside_path(path, workspace, blocked, suffix):
    """Where what stood in the way goes, relative to the project root (as told and recorded)."""
    kind, name = blocked
    _root, parts = guard_dir._lexical_parts(path, workspace)
    parts = tuple(parts or ())
    if kind == "directory":
        return "/".join(parts + (fast_os.path.basename(path) + suffix,))
    return "/".join(parts[:parts.index(name) + 1]) + suffix if name in parts else name + suffix


def plan_restore(publication_class, path, taken, data, rendered, *, draft, task_id, version, sha256,
                 blocked=None, workspace=None, paths=None):
    """A takeover of the path we hold: our publication goes back (the same version, or the next
    when the file reused it or the contract changed meanwhile: then `draft`, its publication),
    recorded as a `contract_restored` naming what was found, where its bytes are kept, and where a
    directory or file standing in the way was moved."""
    kept = kept_name(data) if data is not None else None
    publication = publication_class("restored", path, draft=draft, document=rendered, task_id=task_id,
                                    version=version, sha256=sha256)
    publication.restored, publication.kept, publication.replaced = taken, kept, data
    payload = {"contract_ref": f"intent:{task_id}", "contract_version": version, "snapshot_sha256": sha256,
               "found": taken, "replaced_bytes": len(data) if data is not None else 0,
               "replaced_sha256": sha256_hex(data) if data is not None else None, "kept": kept}
    if taken in MOVED and blocked is not None:
        publication.aside = guard_dir.ASIDE + fast_os.urandom(4).hex()
        publication.moved = payload["moved_aside"] = aside_path(path, workspace, blocked, publication.aside)
    if paths is None or _pending(paths).get(path) != _pending_entry(payload):
        publication.note = Draft("contract_restored", task_id, "system", payload)
    return publication


# A restoration whose `contract_restored` is in the ledger but whose file write did not finish (a
# killed hook, a deadline) is retried by the next refresh without a second event for the same
# takeover: the same found bytes (sha256), class and version.
PENDING_NAME = "guard-restoring.json"


def _pending_entry(payload):
    return {k: payload[k] for k in ("found", "replaced_sha256", "contract_version")}


def _pending(paths):
    from intent_loop.errors import IntentLoopError
    from intent_loop.storage.paths import read_capped

    try:
        data = read_capped(fast_os.path.join(paths.dir, PENDING_NAME), 1 << 16)
    except (IntentLoopError, OSError):  # a lost mark only records a retried restoration once more
        return {}
    doc = file_state.parse_loosely(data) if data is not None else None
    return doc if isinstance(doc, dict) else {}


def note_pending(publication, *, done=False):
    """Mark the publication's restoration recorded and not yet carried out (`done`: carried out)."""
    from intent_loop.base.canonical import canonical_bytes
    from intent_loop.storage.atomic import replace_atomically

    marks = _pending(publication.paths)
    if done:
        if marks.pop(publication.path, None) is None:
            return
    elif publication.note is not None:
        marks[publication.path] = _pending_entry(publication.note.payload)
    else:
        return
    try:
        replace_atomically(fast_os.path.join(publication.paths.dir, PENDING_NAME), canonical_bytes(marks),
                           durable=False)
    except OSError:
        pass  # without the mark, a retried restoration is only recorded once more


# -- the bytes restorations replaced, kept under the data root -----------------------------------
def kept_name(data):
    """Where keep_replaced keeps these bytes, relative to the project's data directory."""
    return f"{KEPT_DIR}/{sha256_hex(data[:KEEP_CAP])}.bin"


def keep_replaced(paths, data, *, sync_later=None):
    """Keep the bytes a restoration replaces (capped) under the data root; returns their name
    relative to the project's data directory. `sync_later` (a hook before its answer): renamed
    into place now, synced by the job it is given."""
    from intent_loop.storage.atomic import replace_atomically
    from intent_loop.storage.paths import ensure_directory

    name = kept_name(data)
    ensure_directory(fast_os.path.join(paths.dir, KEPT_DIR))
    target = fast_os.path.join(paths.dir, name)
    if not fast_os.path.exists(target):
        replace_atomically(target, data[:KEEP_CAP], mode=0o600, durable=sync_later is None)
        if sync_later is not None:
            sync_later(lambda: file_state.sync_renamed(target))
    return name  # the caller holds the store to its caps (prune_kept)


def prune_kept(paths, *, keep=None):
    """Hold the kept-bytes store to KEPT_FILES_CAP files and KEPT_TOTAL_CAP bytes: the newest stay
    (and `keep`, just written), the oldest are removed. Returns the names removed."""
    directory = fast_os.path.join(paths.dir, KEPT_DIR)
    try:
        names = fast_os.listdir(directory)
    except OSError:
        return []
    entries = []
    for entry in names:
        try:
            st = fast_os.lstat(fast_os.path.join(directory, entry))
        except OSError:
            continue
        entries.append((f"{KEPT_DIR}/{entry}" == keep, st.st_mtime_ns, entry, st.st_size))
    entries.sort(reverse=True)  # the one just kept first, then newest first
    removed, total = [], 0
    for index, (_kept, _mtime, entry, size) in enumerate(entries):
        total += size
        if index >= KEPT_FILES_CAP or (total > KEPT_TOTAL_CAP and index > 0):
            try:
                fast_os.unlink(fast_os.path.join(directory, entry))
                removed.append(entry)
            except OSError:
                pass
    return removed


def clear_copies(paths, needles, *, task_id=None):
    """Deletion (ops/derived_copies.py): the kept bytes of restorations that hold a deleted id or
    statement go, and with a whole task, the record of our file naming it. Returns what went."""
    cleared = []
    directory = fast_os.path.join(paths.dir, KEPT_DIR)
    try:
        names = sorted(fast_os.listdir(directory))
    except OSError:
        names = []
    for name in names:
        data, _why = file_state.read_bytes(fast_os.path.join(directory, name), KEEP_CAP)
        if data is not None and any(needle in data for needle in needles):
            fast_os.unlink(fast_os.path.join(directory, name))
            cleared.append({"path": f"{KEPT_DIR}/{name}", "why": "a Guard file a restoration replaced, naming it"})
    if task_id is not None:
        for path, entry in list((file_state.read_records(paths) or {}).items()):
            if isinstance(entry, dict) and entry.get("contract_ref") == f"intent:{task_id}":
                file_state.write_record(paths, path, None)
                cleared.append({"path": file_state.RECORD_NAME, "why": f"the record of our Guard file at {path}"})
    return cleared

"""What is at the Guard path: nothing, a document of ours (whole or damaged), one naming our task at
a version the ledger never recorded, or a file someone else wrote (never overwritten).

"Ours, damaged" (issue 22) is a file that no longer parses but is provably ours: empty, or our
document with a BOM in front, a cut-off tail or garbage after it, where what can be read of it
names a task of this project and our `source`. Guard calls such a file invalid and enforces
nothing, so the refresh writes the recorded contract back in its place.
"""
import errno
import stat

from intent_loop.base import fast_os
from intent_loop.guard import contract_file
from intent_loop.intent.state import version_floor
from intent_loop.storage.paths import read_at_most

OWN_FILE_READ_CAP = 4 << 20  # an oversized document of ours (an older build wrote them) is recognised up to this
SOURCE_MARK = b'"source": "user-intent-plugin"'
REF_MARK = b'"contract_ref": "intent:'
BOM = b"\xef\xbb\xbf"


def read_bytes(path, cap=OWN_FILE_READ_CAP):
    """(bytes up to cap + 1, None) or (None, why): never through a link, never blocking on a FIFO,
    and only a regular file (checked on the descriptor, not the name)."""
    try:
        fd = fast_os.open(path, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, "not a regular file" if exc.errno in (errno.ELOOP, errno.ENXIO) else exc.strerror
    try:
        if not stat.S_ISREG(fast_os.fstat(fd).st_mode):
            return None, "not a regular file"
        return read_at_most(fd, cap + 1), None
    except OSError as exc:
        return None, exc.strerror
    finally:
        fast_os.close(fd)


def read_file_state(path, state):
    """Classify what is at the provider path: missing, ours (task_id, version, sha, and `damage`
    when it needs a repair), unrecorded, or foreign (with a true `why`)."""
    return classify_bytes(*read_bytes(path), state)


def classify_bytes(data, why, state):
    """read_file_state for bytes already read (guard_dir.GuardDir.read: through the directory's
    descriptor)."""
    if data is None:
        return {"kind": "missing"} if why == "missing" else {"kind": "foreign", "why": why}
    kind, doc, errors = contract_file.validate_document_bytes(data)
    if len(data) > contract_file.MAX_DOCUMENT_BYTES and len(data) <= OWN_FILE_READ_CAP:
        doc, kind = parse_loosely(data), "provider"
    damage = None
    if kind == "unknown":
        doc, damage = _damaged_document(data, state)
    owner = _owning_task(doc, state) if kind == "provider" or (damage and _names_our_source(doc)) else None
    if damage == "emptied":
        owner = (None, None, None, True)
    if owner is None:
        what = {"lite": "a TaskContractLite", "provider": "a provider document"}.get(kind, "a file that is no document")
        return {"kind": "foreign", "why": f"{what} intent-loop did not write", "errors": errors}
    found = {"task_id": owner[0], "version": owner[1], "sha256": owner[2], "errors": errors}
    if damage is not None:
        found["damage"] = damage
    if not owner[3]:
        return dict(found, kind="unrecorded", why=f"names task {owner[0][:8]} of this project at version "
                                                  f"{owner[1]}, which its ledger never recorded")
    return dict(found, kind="ours")


def guard_file_version(path):
    """(contract_ref, contract_version) of an `intent:` provider document at `path`, or None: what
    recovery carries across a cut (read without following a link, never blocking, capped)."""
    data, _why = read_bytes(path)
    doc = parse_loosely(data) if data is not None and len(data) <= OWN_FILE_READ_CAP else None
    envelope = doc.get("envelope") if isinstance(doc, dict) else None
    if not isinstance(envelope, dict):
        return None
    ref, version = envelope.get("contract_ref"), envelope.get("contract_version")
    if isinstance(ref, str) and ref.startswith("intent:") and type(version) is int and version > 0:
        return ref, version
    return None


def _names_our_source(doc):
    envelope = doc.get("envelope") if isinstance(doc, dict) else None
    return isinstance(envelope, dict) and envelope.get("source", "user-intent-plugin") == "user-intent-plugin"


def parse_loosely(data):
    from intent_loop.base.canonical import loads

    try:
        return loads(data)
    except (ValueError, RecursionError):
        return None


def _damaged_document(data, state):
    """(what can be read of our document, the damage) for bytes that do not parse, or (None, None)."""
    if not data.strip():
        return None, "emptied"
    if data.startswith(BOM):
        doc = parse_loosely(data[len(BOM):])
        if doc is not None:
            return doc, "a BOM in front"
    doc = _leading_document(data)
    if doc is not None:
        return doc, "garbage after the document"
    envelope = _envelope_fields(data)
    if envelope is not None and envelope["contract_ref"][len("intent:"):] in state["tasks"]:
        return {"envelope": envelope}, "truncated"  # SOURCE_MARK was in what is left
    return None, None


def _leading_document(data):
    """The JSON object the bytes start with, when something else follows it."""
    import json  # only for a damaged file: raw_decode finds where the first document ends

    try:
        doc, end = json.JSONDecoder().raw_decode(data.decode("utf-8", "replace").lstrip())
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _envelope_fields(data):
    """contract_ref and contract_version of a cut-off document of ours, read line by line as
    render_document writes them (sorted keys: the ref, the version, ..., the source), or None when
    the part that is left does not name our source."""
    if SOURCE_MARK not in data or REF_MARK not in data:
        return None
    found = {}
    for line in data.split(b"\n"):
        key, _sep, value = line.strip().rstrip(b",").partition(b": ")
        if key == b'"contract_ref"' and value.startswith(b'"intent:') and value.endswith(b'"'):
            found["contract_ref"] = value[1:-1].decode("ascii", "replace")
        elif key == b'"contract_version"' and value.isdigit():
            found["contract_version"] = int(value)
        elif key == b'"snapshot_sha256"' and len(value) == 66:
            found["snapshot_sha256"] = value[1:-1].decode("ascii", "replace")
    return found if "contract_ref" in found and "contract_version" in found else None


def _owning_task(doc, state):
    envelope = doc.get("envelope") if isinstance(doc, dict) else None
    if not isinstance(envelope, dict):
        return None
    ref, version, digest = (envelope.get("contract_ref"), envelope.get("contract_version"),
                            envelope.get("snapshot_sha256"))
    if not isinstance(ref, str) or not ref.startswith("intent:") or type(version) is not int:
        return None
    task_id = ref[len("intent:"):]
    task = state["tasks"].get(task_id)
    if task is None:
        # a task only a recovery's floor remembers (its events were in the damaged suffix)
        return (task_id, version, digest, False) if version_floor(state, task_id) else None
    return task_id, version, digest, task.get("publications", {}).get(str(version)) == digest


# -- what we last wrote at each Guard path (issue 33, item 3) -------------------------------------
# Kept in the project's data directory, which the agent cannot write: while it names a path, any
# other content there is a takeover and our publication is written back; a path it does not name
# (we never wrote there, or withdrew since) holds the user's file, never touched.
RECORD_NAME = "guard-file.json"
_RECORD_CAP = 1 << 20
_RECORD_KEYS = {"contract_ref": str, "contract_version": int, "snapshot_sha256": str, "file_sha256": str}


def _record_file(paths):
    return fast_os.path.join(paths.dir, RECORD_NAME)


def read_records(paths):
    """{path: entry} of the record, or None when there is none or it cannot be read (the ledger
    decides then: guard/takeover.derived_record)."""
    from intent_loop.errors import IntentLoopError
    from intent_loop.storage.paths import read_capped

    try:
        data = read_capped(_record_file(paths), _RECORD_CAP)
    except (IntentLoopError, OSError):
        return None
    doc = parse_loosely(data) if data is not None else None
    files = doc.get("files") if isinstance(doc, dict) else None
    return files if isinstance(files, dict) else None


def _read_records(paths):
    return read_records(paths) or {}


def entry_of(files, path):
    entry = files.get(path)
    if not isinstance(entry, dict) or set(entry) != set(_RECORD_KEYS) \
            or not all(type(entry[k]) is t for k, t in _RECORD_KEYS.items()):
        return None
    return entry


def read_record(paths, path):
    """What we last wrote at `path` ({contract_ref, contract_version, snapshot_sha256,
    file_sha256}), or None: we never wrote there, or withdrew our file since."""
    return entry_of(_read_records(paths), path)


def held_record(paths, path, state):
    """What we last wrote at `path` (read_record), or, with no readable record at all,
    the entry the ledger implies (derived_record); None: the path is not ours."""
    records = read_records(paths)
    if records is not None:
        return entry_of(records, path)
    return derived_record(state)


def derived_record(state):
    """The record the ledger implies when there is none to read (a project published before it
    existed, or one lost): the path is held when the task Guard gets is on and its latest
    `contract_published` is no older than its last change by the user (an `intent: off`, a dropped
    goal: no withdrawal followed it). The event names no path, so the path the refresh computes
    (the current provider path) is the one held. Its file_sha256 is empty (the bytes are not in
    the ledger): the file counts as ours only as a whole document at that ref, version and hash."""
    task_id = state["last_change"]["task_id"]
    task = state["tasks"].get(task_id) if task_id is not None else None
    if task is None or task.get("guard_mode", task["mode"]) != "on":
        return None
    published = task.get("published")
    if not published or not isinstance(published.get("published_at"), str) \
            or published["published_at"] < task["changed_at"]:
        return None
    return {"contract_ref": f"intent:{task_id}", "contract_version": published["version"],
            "snapshot_sha256": published["sha256"], "file_sha256": ""}


def write_record(paths, path, entry, *, sync_later=None):
    """Remember what we wrote at `path` (None: forget it: the path is the user's again).
    `sync_later` (a hook before its answer): renamed into place now, synced by the job it is given
    with the Guard file's own syncs; without it, written durably here."""
    from intent_loop.base.canonical import canonical_bytes
    from intent_loop.storage.atomic import replace_atomically

    records = read_records(paths)
    files = records or {}
    if (entry is None and path not in files) or (records is not None and files.get(path) == entry):
        return
    if entry is None:
        files.pop(path, None)
    else:
        files[path] = entry
    target = _record_file(paths)
    replace_atomically(target, canonical_bytes({"files": files}), durable=sync_later is None)
    if sync_later is not None:
        sync_later(lambda: sync_renamed(target))


def sync_renamed(target):
    """Make a file already renamed into place durable: the file, then its directory."""
    from intent_loop.base import platform

    fd = fast_os.open(target, fast_os.O_RDONLY | fast_os.O_NOFOLLOW)
    try:
        platform.fsync_file(fd)
    finally:
        fast_os.close(fd)
    platform.fsync_directory(fast_os.path.dirname(target))


def takeover_kind(record, data, current, *, file_sha256):
    """How the file at a path we hold (`record`) differs from what we wrote there, or None when it
    is still ours: the same bytes, or a whole document of ours with the same ref, version and hash.
    missing | emptied | same_version (our ref and version, other content) | other_version (our
    ref, another version) | other_ref | lite | other."""
    if data is None:
        return "missing" if current.get("why") == "missing" or current["kind"] == "missing" else "other"
    if file_sha256 == record["file_sha256"]:
        return None
    if current["kind"] in ("ours", "unrecorded") and current.get("damage") not in (None, "emptied") \
            and f"intent:{current['task_id']}" == record["contract_ref"] \
            and current["version"] == record["contract_version"]:
        return None  # our own document, damaged as a crash or a cut copy leaves it: repaired, not restored
    if current["kind"] == "ours" and not current.get("errors") and not current.get("damage") \
            and f"intent:{current['task_id']}" == record["contract_ref"] \
            and current["version"] == record["contract_version"] and current["sha256"] == record["snapshot_sha256"]:
        return None
    if not data.strip():
        return "emptied"
    named = named_version(parse_loosely(data[:OWN_FILE_READ_CAP]))
    if named is not None:
        ref, version = named
        if ref == record["contract_ref"]:
            return "same_version" if version == record["contract_version"] else "other_version"
        return "other_ref"
    kind, _doc, _errors = contract_file.validate_document_bytes(data)
    return "lite" if kind == "lite" else "other"


def named_version(doc):
    envelope = doc.get("envelope") if isinstance(doc, dict) else None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("contract_ref"), str):
        return None
    return envelope["contract_ref"], envelope.get("contract_version")


def is_current_publication(current, state, task_id):
    """Whether the file is, whole, the task's latest publication as the ledger records it."""
    published = state["tasks"][task_id].get("published") if task_id in state["tasks"] else None
    return bool(published) and current["kind"] == "ours" and not current.get("errors") \
        and not current.get("damage") and current["task_id"] == task_id \
        and (current["version"], current["sha256"]) == (published["version"], published["sha256"])


def plan_record(publication, record, data, current):
    """What the record of our last write at the path becomes once the publication is carried out
    (provider.Publication.record: the new entry, False to forget the path, None to leave it)."""
    from intent_loop.base.canonical import sha256_hex

    if publication.document is not None:
        publication.record = {"contract_ref": f"intent:{publication.task_id}",
                              "contract_version": publication.version, "snapshot_sha256": publication.sha256,
                              "file_sha256": sha256_hex(publication.document)}
    elif publication.action == "unchanged" and data is not None:
        publication.record = {"contract_ref": f"intent:{publication.task_id}", "contract_version": current["version"],
                              "snapshot_sha256": current["sha256"], "file_sha256": sha256_hex(data)}
        if publication.record == record:
            publication.record = None
    elif publication.action in ("removed", "absent", "foreign") and record is not None:
        publication.record = False

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
    data, why = read_bytes(path)
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

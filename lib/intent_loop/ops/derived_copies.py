"""Copies of deleted content outside the ledger: clearing them, then scanning the project directory for any left.

Cleared: all of `cache/` (but its empty `deferred.lock`), quarantine files that name a deleted id or
statement or cannot be attributed (torn-tail digests and unreadable files), our Guard provider file
when it holds that task, and private-session control files naming a deleted task. The scan looks at
every file under the project directory for the deleted ids and the exact JSON-encoded statements.
"""
import os

from intent_loop.base.canonical import dumps
from intent_loop.guard import provider, takeover
from intent_loop.intent import private_mode
from intent_loop.storage import quarantine
from intent_loop.storage.paths import PENDING_FILE


def clear(paths, old_state, *, task_id, whole_task, ids, statements, workspace, env):
    """Remove every derived copy that may hold the deleted task or claim; returns what was cleared."""
    cleared = _clear_cache(paths)
    needles = [i.encode() for i in ids] + [dumps(s).encode("utf-8") for s in statements.values()]
    q_cleared, _q_kept = _clear_quarantine(paths, needles)
    cleared += q_cleared
    cleared += _clear_provider(paths, old_state, task_id, workspace, env)
    cleared += takeover.clear_copies(paths, needles + [task_id.encode()] if whole_task else needles,
                                     task_id=task_id if whole_task else None)
    if whole_task:
        cleared += _clear_private(paths, task_id)
    return cleared


def _rel(paths, path):
    return os.path.relpath(path, paths.dir)


def _clear_cache(paths):
    cleared = []
    try:
        names = sorted(os.listdir(paths.cache_dir))
    except FileNotFoundError:
        return cleared
    for name in names:
        path = os.path.join(paths.cache_dir, name)
        if name == PENDING_FILE:
            continue  # empty, and detached hook writers may hold it (their waiters need it)
        if os.path.isfile(path) or os.path.islink(path):
            os.unlink(path)
            cleared.append({"path": _rel(paths, path), "why": "derived cache"})
    return cleared


def _needles_in(path, needles, *, chunk=1 << 20):
    """The needles that occur in the regular file `path` (None for anything else), read in chunks
    that overlap by the longest needle, so the ledger is never held in memory whole."""
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    overlap = max((len(n) for n in needles), default=1) - 1
    found, tail = set(), b""
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            window = tail + block
            found.update(n for n in needles if n not in found and n in window)
            tail = window[-overlap:] if overlap > 0 else b""
    return found


def _file_bytes(path):
    st = os.lstat(path)
    if not os.path.isfile(path) or os.path.islink(path):
        return None
    with open(path, "rb") as fh:
        return fh.read(max(st.st_size, 0) + 1)


def _clear_quarantine(paths, needles):
    """Remove quarantine files naming a deleted id/statement, or that cannot be attributed."""
    cleared, kept = [], []
    try:
        names = sorted(os.listdir(paths.quarantine_dir))
    except FileNotFoundError:
        return cleared, kept
    remove = {}
    for name in names:
        path = os.path.join(paths.quarantine_dir, name)
        try:
            data = _file_bytes(path)
        except OSError:
            data = None
        if data is None:
            remove[name] = "unreadable, cannot be attributed"
            continue
        if quarantine.is_torn_tail(name):
            remove[name] = "torn-tail digest, cannot be attributed to a task"
        elif any(n in data for n in needles):
            remove[name] = "names a deleted id or statement"
    # a suffix and its manifest go together
    for name in list(remove):
        twin = quarantine.twin_of(name)
        if twin in names and twin not in remove:
            remove[twin] = "belongs to a removed quarantine file"
    for name in names:
        path = os.path.join(paths.quarantine_dir, name)
        if name in remove:
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    continue
                os.unlink(path)
                cleared.append({"path": _rel(paths, path), "why": remove[name]})
            except OSError:
                pass
        else:
            kept.append(_rel(paths, path))
    return cleared, kept


def _clear_provider(paths, old_state, task_id, workspace, env):
    if workspace is None:
        return []
    path = provider.provider_path(workspace, env or {})
    fstate = provider.read_file_state(path, old_state)
    if fstate["kind"] in ("ours", "unrecorded") and fstate["task_id"] == task_id:
        if not provider.remove_file(path, workspace):  # through the directory's descriptor, never a link
            return []
        return [{"path": path,
                 "why": f"Guard provider file of task {task_id}; `intent-loop contract publish` writes it again"}]
    return []


def _clear_private(paths, task_id):
    cleared = []
    for session in private_mode.controls_for_task(paths, task_id):
        path = private_mode.control_path(paths, session)
        try:
            os.unlink(path)
            cleared.append({"path": _rel(paths, path), "why": "private-session control naming the task"})
        except FileNotFoundError:
            pass
    return cleared


def _live_texts(state):
    texts = set()
    for task in state["tasks"].values():
        for record in task["claims"].values():
            texts.add(record["claim"]["statement"])
    for candidate in state["candidates"].values():
        texts.add(candidate["statement"])
    return texts


def scan(paths, *, ids, statements, live_state):
    """Search every file under the project directory for `ids` and JSON-encoded `statements`.

    `statements` maps claim id -> statement. A statement still held by a surviving claim or
    candidate is shared text, reported but not a failure. Reports never repeat the text itself.
    """
    live = _live_texts(live_state)
    needles = [(("id", i), i.encode()) for i in sorted(ids)]
    shared_claims = {}
    for cid, text in sorted(statements.items()):
        encoded = dumps(text).encode("utf-8")
        if text in live:
            shared_claims[cid] = encoded
        else:
            needles.append((("statement", cid), encoded))
    hits, shared = [], {}
    for dirpath, dirnames, filenames in os.walk(paths.dir):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            try:
                found = _needles_in(path, [n for _w, n in needles] + list(shared_claims.values()))
            except OSError:
                found = None
            if found is None:
                continue
            rel = _rel(paths, path)
            for (kind, what), needle in needles:
                if needle in found:
                    hits.append({"file": rel, "kind": kind, ("id" if kind == "id" else "claim_id"): what})
            for cid, needle in shared_claims.items():
                if needle in found:
                    shared.setdefault(cid, []).append(rel)
    shared_text = [{"claim_id": cid, "files": files,
                    "why": "the same statement is still held by another live claim or candidate"}
                   for cid, files in sorted(shared.items())]
    return {"clean": not hits, "hits": hits, "shared_text": shared_text,
            "ids_checked": len(ids), "statements_checked": len(statements)}

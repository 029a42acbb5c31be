"""The Guard provider document: derive the projection, decide its version, publish or withdraw it.

We own contract_ref (`intent:<task_id>`) and contract_version. A version is decided and
recorded as a `contract_published` event under the project lock, and the file is written while
that lock is still held, so concurrent hooks, restarts and deleted caches can never reuse or
skip a version, and the file on disk never goes back to an older one.
"""
import time

from intent_loop.base import fast_os
from intent_loop.base.canonical import sha256_hex
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import acceptance, contract_file, document, file_state, guard_dir
from intent_loop.guard.document import projection_for  # also provider's to its callers (cli/contract_cmd.py)
from intent_loop.guard.file_state import guard_file_version, read_file_state  # noqa: F401 (re-exported)
from intent_loop.guard.location import DEFAULT_PATH, directory_problem, provider_path  # noqa: F401 (re-exported)
from intent_loop.intent.state import version_floor
from intent_loop.storage.ledger import Draft

GITIGNORE = b"# written by intent-loop: the Guard contract is local state, not source\n*\n"


def guard_file(cwd, env, *, project_root):
    """(path, why it may not be written or None): THE decision where the Guard file goes.

    The path is the file Guard 0.2.2 reads for a hook payload whose `cwd` is `cwd` as given
    (provider_path: lexical, no realpath, so a symlinked `cwd` with `../guard.json` names the same
    file Guard does); the containment check then takes realpaths (outside_reason: the file's
    directory must resolve inside the project root's realpath)."""
    path = provider_path(cwd, env)
    return path, outside_reason(path, project_root)


def outside_reason(path, project_root):
    """Why `path` may not be written (its directory's realpath is outside the project's), or None.

    The one check every Guard-file write passes: an EFG_CONTRACT_PATH through a symlinked
    directory, with `..`, or absolute elsewhere would otherwise write the document and a
    .gitignore outside the workspace."""
    try:
        directory = fast_os.path.realpath(fast_os.path.dirname(path))
        root = fast_os.path.realpath(project_root)
    except OSError as exc:  # a link swapped while it was being resolved
        return f"{path} cannot be resolved ({exc.strerror}); nothing is written"
    if directory == root or directory.startswith(root.rstrip(fast_os.sep) + fast_os.sep):
        return None
    return f"{path} is outside the project {root} (its directory resolves to {directory}); nothing is written"


def select_task(state):
    """(task_id or None, reason): the newest claim-changed task, if it is on and publishable."""
    task_id = state["last_change"]["task_id"]
    if task_id is None or task_id not in state["tasks"]:
        return None, "no task has been started in this project"
    task = state["tasks"][task_id]
    mode = task.get("guard_mode", task["mode"])  # the mode the user set: the agent's never counts
    if mode != "on":
        return None, f"the most recently changed task {task_id[:8]} is {mode}"
    return task_id, None


def shadowed_tasks(state, selected):
    return sorted(t for t in state["tasks"] if t != selected)


def next_version(state, task_id, digest, *, above=0):
    """(version, is_new) of the task's publication of `digest`: a new one goes above the task's
    last publication and a recovery's floor, so no (ref, version) ever comes back with other
    content. `above`: a version another file at the path reused with other content (Guard bound
    that pair to it), which the next publication must exceed. The file's version never counts
    otherwise: a forged 2^53-1 would leave no valid version to publish (issue 33, item 3)."""
    task = state["tasks"][task_id]
    published = task.get("published")
    # every version the task recorded, not only the one `published` names: in a cache-backed state
    # that pointer is lifecycle a hand edit can move back to an older (still verified) publication
    recorded = max((int(v) for v in task.get("publications", {}) if v.isascii() and v.isdigit()), default=0)
    floor = max(published["version"] if published else 0, recorded, version_floor(state, task_id))
    if published and published["sha256"] == digest and published["version"] >= floor and above < floor:
        return published["version"], False
    return max(floor, above) + 1, True


class Publication:
    """One refresh decision: the event to append (if any) and what happens to the file.

    action is published | rewritten | unchanged | removed | absent | invalid | foreign | outside.
    """

    __slots__ = ("action", "path", "task_id", "version", "sha256", "reason", "draft", "document", "remove", "code",
                 "repaired", "restored", "kept", "root", "paths", "record", "replaced", "note", "aside", "moved")

    @property
    def drafts(self):
        """The events carrying it out records: its publication, and a restoration's note."""
        return [d for d in (self.draft, self.note) if d is not None]

    def __init__(self, action, path, *, task_id=None, version=None, sha256=None, reason=None,
                 draft=None, document=None, remove=False, code=None, repaired=None):
        self.action, self.path, self.task_id, self.version = action, path, task_id, version
        self.sha256, self.reason, self.draft, self.document, self.remove = sha256, reason, draft, document, remove
        self.code, self.repaired = code, repaired
        # a takeover (what was found, where its bytes are kept); where the file and the record of
        # what we wrote there live (the record's new entry, or False to forget it)
        self.restored = self.kept = self.root = self.paths = self.record = self.replaced = self.note = None
        self.aside = self.moved = None  # what stood in the way: the suffix it was renamed with, and where

    @property
    def writes(self):
        """Whether carrying it out touches the file (only the write itself can tell if it succeeds)."""
        return self.remove or self.document is not None

    def as_dict(self):
        return {k: getattr(self, k) for k in ("action", "path", "task_id", "version", "sha256", "reason", "code",
                                              "repaired", "restored", "kept", "moved") if getattr(self, k) is not None}


def plan_refresh(state, *, workspace, env, now=time.time, cwd=None, paths=None):
    """Decide the publication for `state` (the state as it will be after the pending events).

    `workspace` is the project root (a realpath); `cwd` the hook payload's `cwd` as given, which
    Guard resolves EFG_CONTRACT_PATH against (the CLI has no payload: its cwd is the root).
    `paths`: the project's data paths, where the record of what we last wrote at the path is
    kept (without them a takeover is not recognised: read-only callers that have none)."""
    path, outside = guard_file(cwd or workspace, env, project_root=workspace)
    record = file_state.held_record(paths, path, state) if paths is not None else None
    blocked = guard_dir.obstacle(path, workspace) if record is not None else None  # a link, a file, a directory
    linked = blocked is not None
    if outside is not None and not linked:
        return Publication("outside", path, reason=outside, code=ErrorCode.PROVIDER_PATH_OUTSIDE)
    not_a_directory = None if linked else directory_problem(path)
    if not_a_directory is not None:
        return Publication("error", path, reason=not_a_directory, code=ErrorCode.PROVIDER_PATH_FOREIGN)
    try:
        data, why = (None, f"{blocked[1]} is in the way") if linked else _read_at(path, workspace)
    except IntentLoopError as exc:
        return Publication("error", path, reason=exc.message, code=exc.code)
    if why == "a directory" and record is not None:  # a rename cannot replace it: told, never recorded
        return Publication("error", path, reason=f"a directory stands at {path}, where Guard reads its contract; "
                           "intent-loop does not remove it", code=ErrorCode.PROVIDER_PATH_FOREIGN)
    current = file_state.classify_bytes(data, why, state)
    taken = blocked[0] if linked else None if record is None else file_state.takeover_kind(
        record, data, current, file_sha256=None if data is None else sha256_hex(data))
    task_id, reason = select_task(state)
    if taken is not None and file_state.is_current_publication(current, state, task_id):
        taken = None  # ours as the ledger records it: only the record lagged (a crash, a failed record write)
    projection = code = None
    if task_id is not None:
        projection = projection_for(state["tasks"][task_id], project_root=workspace)
        if projection is None:
            reason = f"task {task_id[:8]} has no goal yet (`intent: goal ...`)"
            code = ErrorCode.PROJECTION_INCOMPLETE
    if projection is None:
        # A file naming our task at a version we never recorded (a recovery cut its event) is ours
        # to withdraw: left alone it would keep an old contract in force. Withdrawn, the path is
        # the user's: the record of what we wrote there is forgotten.
        # A takeover of the path we held goes with it (its bytes kept first): it stood in for ours.
        taken_over = taken is not None and data is not None
        mine = current["kind"] in ("ours", "unrecorded") or taken_over
        action = "removed" if mine else {"foreign": "foreign"}.get(current["kind"], "absent")
        if taken_over:
            reason = f"{reason}; the file found there, changed outside intent-loop, is kept in its data folder"
        publication = Publication(action, path, task_id=task_id, reason=reason, remove=mine, code=code)
        publication.replaced = data if taken_over else None
    else:
        publication = _plan_publish(path, current, state, state["tasks"][task_id], projection, now,
                                    taken=taken, data=data, blocked=blocked, workspace=workspace, paths=paths)
    publication.root, publication.paths = workspace, paths
    if paths is not None:
        file_state.plan_record(publication, record, data, current)
    return publication


def _read_at(path, workspace):
    """The Guard file's bytes and why there are none, read through the directory's descriptor."""
    directory = guard_dir.open_guard_dir(path, workspace)
    if directory is None:
        return None, "missing"
    with directory:
        return directory.read(file_state.OWN_FILE_READ_CAP)


def _plan_publish(path, current, state, task, projection, now, *, taken=None, data=None, blocked=None,
                  workspace=None, paths=None):
    task_id = task["task_id"]
    digest = document.projection_sha256(projection)
    published = task.get("published")
    version, is_new = next_version(state, task_id, digest)
    named = file_state.named_version(file_state.parse_loosely(data)) if data else None
    # Guard bound our (ref, version) to other content, or may have (a link: what it reached is not read)
    if taken == "link" or named == (f"intent:{task_id}", version) and (taken or current["kind"] == "unrecorded"):
        version, is_new = next_version(state, task_id, digest, above=version)
    refs = list(task["claim_events"])
    doc = document.build_document(projection, contract_ref=f"intent:{task_id}", contract_version=version,
                                  source_message_refs=refs,
                                  updated_at=format_utc(now()))
    known = {"task_id": task_id, "version": version, "sha256": digest}
    # Never publish what Guard would refuse, and never withdraw for it either: the version Guard
    # enforces stays in force, and the receipt and `status` say so and why. "Guard still enforces
    # vN" only when the file at the path is vN.
    if published and taken is None and file_state.is_current_publication(current, state, task_id):
        enforced = f"Guard still enforces v{published['version']}"
    elif published:
        enforced = f"Guard does not enforce v{published['version']}: the file at {path} is not it"
    else:
        enforced = "Guard has no contract for this task yet"
    errors = acceptance.validate_provider_document(doc)
    if errors:
        return Publication("invalid", path, reason=f"{enforced}: the new contract would be invalid to Guard ("
                           + "; ".join(errors) + ")", code=ErrorCode.CONTRACT_INVALID, **known)
    rendered = document.render_document(doc)
    if len(rendered) > contract_file.MAX_DOCUMENT_BYTES:
        return Publication("too_large", path, code=ErrorCode.CONTRACT_TOO_LARGE, reason=(
            f"{enforced}: the contract would be {len(rendered) / 1024:.0f} KiB > "
            f"{contract_file.MAX_DOCUMENT_BYTES // 1024} KiB; drop or shorten claims"), **known)
    if taken is not None:
        from intent_loop.guard import takeover  # only for a takeover

        return takeover.plan_restore(Publication, path, taken, data, rendered, blocked=blocked, workspace=workspace,
                                     paths=paths,
                                     draft=_published_draft(task_id, version, digest, refs) if is_new else None,
                                     **known)
    if current["kind"] == "foreign":
        return Publication("foreign", path, reason=foreign_reason(path, current), **known)
    repaired = f"repaired the Guard file: it was {current['damage']}" if current.get("damage") else None
    if is_new:
        return Publication("published", path, draft=_published_draft(task_id, version, digest, refs),
                           document=rendered, repaired=repaired, **known)
    if current["kind"] == "ours" and current["task_id"] == task_id and current["version"] == version \
            and not current.get("errors"):
        return Publication("unchanged", path, **known)
    # a damaged or older file of ours: the recorded (ref, version, hash) written back as it was
    return Publication("rewritten", path, document=rendered, repaired=repaired, **known)


def _published_draft(task_id, version, digest, refs, **extra):
    return Draft("contract_published", task_id, "system", dict({
        "contract_ref": f"intent:{task_id}", "contract_version": version, "snapshot_sha256": digest,
        "source_message_refs": refs}, **extra))


def foreign_reason(path, current):
    """The true words for a file we must not overwrite."""
    return f"a file intent-loop did not write is at {path}; Guard reads that one ({current.get('why', 'not ours')})"


def apply_file(publication, *, sync_later=None):
    """Write or withdraw the document (the caller holds the lock and has appended the event).

    `sync_later(sync)`: the file is renamed into place now, so Guard reads the new contract from
    this instant, and its syncs are left to `sync` (a hook's transaction runs it after the answer:
    storage.transaction.Transaction.sync_later); without it the file is written durably here.
    Every step goes through the directory's descriptor (guard_dir); a takeover's bytes are kept
    under the data root before they are replaced."""
    root = publication.root or fast_os.path.dirname(fast_os.path.dirname(publication.path))
    if publication.remove or publication.document is not None:
        pending = publication.restored is not None and publication.paths is not None
        if pending:  # recorded before it is carried out: an interrupted one is not recorded twice
            from intent_loop.guard import takeover

            takeover.note_pending(publication)
        try:
            _carry_out(publication, root, sync_later)
            if pending:
                takeover.note_pending(publication, done=True)
        except OSError as exc:
            raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED,
                                  f"cannot write {publication.path}: {exc.strerror}; the next refresh writes it again"
                                  ) from exc
    if publication.paths is not None and publication.record is not None:
        try:
            file_state.write_record(publication.paths, publication.path, publication.record or None,
                                    sync_later=sync_later)
        except (IntentLoopError, OSError):
            if publication.record is False:  # a path we could not let go of would be taken back later
                raise
            # the file is written; a record left behind only lags, and the next refresh renews it


def _carry_out(publication, root, sync_later):
    directory = guard_dir.open_guard_dir(publication.path, root, create=publication.document is not None,
                                         gitignore=GITIGNORE, aside=publication.aside,
                                         relink=publication.restored in ("link", "not_directory"))
    if directory is None:  # nothing to withdraw
        return
    with directory:
        if publication.restored == "directory":  # moved aside whole (renameat), never deleted
            directory.move_aside(directory.name + publication.aside)
        if sync_later is None:
            directory.clean_temps()
        else:  # a flooded directory never delays the answer: after it, still under the lock
            sync_later(directory.clean_later())
        if publication.replaced is not None and publication.paths is not None:
            from intent_loop.guard import takeover  # only a takeover keeps bytes

            kept = takeover.keep_replaced(publication.paths, publication.replaced, sync_later=sync_later)
            takeover.prune_kept(publication.paths, keep=kept)
        if publication.remove:
            directory.remove()
            return
        fd = directory.write(publication.document, durable=sync_later is None)
        if fd is not None:
            sync_later(directory.sync_later(fd))


def refresh(tx, *, workspace, env, now=time.time, cwd=None):
    """Publish, rewrite, restore or withdraw the provider document inside a locked transaction."""
    publication = plan_refresh(tx.state, workspace=workspace, env=env, now=now, cwd=cwd, paths=tx.paths)
    if publication.drafts:
        request_id = f"publish:{publication.task_id}:{publication.version}"
        if publication.restored is not None:  # the same version may be restored more than once
            request_id = f"restore:{publication.task_id}:{publication.version}:{tx.state['seq']}"
        tx.append(publication.drafts, request_id=request_id, fingerprint=publication.sha256)
    apply_file(publication)
    return publication.as_dict()


def remove_file(path, project_root):
    """Unlink the Guard file through its directory's descriptor (deletion, ops/derived_copies.py);
    whether there was one to remove. A link on the way raises PROVIDER_PATH_FOREIGN."""
    directory = guard_dir.open_guard_dir(path, project_root)
    if directory is None:
        return False
    with directory:
        if directory.kind() == "missing":
            return False
        directory.remove()
        return True


def write_document(path, data, *, sync_later=None, project_root=None):
    """Atomic replace of the Guard file at `path` (its directory walked from `project_root`,
    default the directory above it), adding a .gitignore when we create the directory."""
    publication = Publication("published", path, document=data)
    publication.root = project_root
    apply_file(publication, sync_later=sync_later)

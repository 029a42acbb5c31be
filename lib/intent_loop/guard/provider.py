"""The Guard provider document: derive the projection, decide its version, publish or withdraw it.

We own contract_ref (`intent:<task_id>`) and contract_version. A version is decided and
recorded as a `contract_published` event under the project lock, and the file is written while
that lock is still held, so concurrent hooks, restarts and deleted caches can never reuse or
skip a version, and the file on disk never goes back to an older one.
"""
import stat
import time

from intent_loop.base import fast_os, platform
from intent_loop.base.timestamps import format_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import acceptance, contract_file, document
from intent_loop.guard.file_state import guard_file_version, read_file_state  # noqa: F401 (re-exported)
from intent_loop.guard.location import DEFAULT_PATH, provider_path  # noqa: F401 (re-exported)
from intent_loop.intent.claim_records import shown_active
from intent_loop.intent.claim_text import split_sources
from intent_loop.intent.claims import split_prefix
from intent_loop.intent.state import version_floor
from intent_loop.storage.atomic import replace_atomically
from intent_loop.storage.ledger import Draft

DEFAULT_SURFACE = "repository"
DEFAULT_EVIDENCE = {"requirement": "The user confirms the requested outcome was delivered",
                    "acceptable_sources": ["user"]}
GITIGNORE = b"# written by intent-loop: the Guard contract is local state, not source\n*\n"
_LIST_FIELDS = {"scope include": ("scope", "include"), "scope exclude": ("scope", "exclude"),
                "must": ("must_and_must_not", "must"), "must not": ("must_and_must_not", "must_not"),
                "allow": ("authorization", "allowed"), "ask": ("authorization", "requires_user"),
                "forbid": ("authorization", "forbidden")}


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
    directory = fast_os.path.realpath(fast_os.path.dirname(path))
    root = fast_os.path.realpath(project_root)
    if directory == root or directory.startswith(root.rstrip(fast_os.sep) + fast_os.sep):
        return None
    return f"{path} is outside the project {root} (its directory resolves to {directory}); nothing is written"


def projection_for(task, *, project_root):
    """The seven-field projection of a task's active direct user-explicit claims, or None."""
    p = {"objective": [], "primary_object": None, "delivery_surface": [],
         "scope": {"include": [], "exclude": []}, "must_and_must_not": {"must": [], "must_not": []},
         "authorization": {"allowed": [], "requires_user": [], "forbidden": []}, "completion_evidence": []}
    for record in shown_active(task):  # the user's words only: the hidden claims are never read
        _project_claim(p, record["claim"])
    if not p["objective"]:
        return None
    p["objective"] = "; ".join(p["objective"])
    p["primary_object"] = p["primary_object"] or fast_os.path.basename(project_root.rstrip(fast_os.sep)) or project_root
    p["delivery_surface"] = p["delivery_surface"] or [DEFAULT_SURFACE]
    p["completion_evidence"] = p["completion_evidence"] or [dict(DEFAULT_EVIDENCE, acceptable_sources=["user"])]
    return p


def _project_claim(p, claim):
    prefix, value = split_prefix(claim["statement"])
    facets = claim["facets"]
    if prefix is None:
        if "outcome" in facets:
            p["objective"].append(value)
        elif "success_signal" in facets:
            _add_evidence(p, value)
        elif "hard_constraint" in facets:
            p["must_and_must_not"]["must"].append(value)
    elif prefix == "object":
        p["primary_object"] = value  # claims come oldest first: the newest wins
    elif prefix == "surface":
        if value not in p["delivery_surface"]:
            p["delivery_surface"].append(value)
    elif prefix == "done when":
        _add_evidence(p, value)
    elif prefix in _LIST_FIELDS:
        group, key = _LIST_FIELDS[prefix]
        p[group][key].append(value)


def _add_evidence(p, value):
    requirement, sources = split_sources(value)
    p["completion_evidence"].append({"requirement": requirement, "acceptable_sources": sources or ["user"]})


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


def next_version(state, task_id, digest, current):
    """(version, is_new) of the task's publication of `digest`: a new one goes above the task's
    last publication, a recovery's floor and a file of ours at an unrecorded version (Guard may
    have seen either), so no (ref, version) ever comes back with other content."""
    task = state["tasks"][task_id]
    published = task.get("published")
    # every version the task recorded, not only the one `published` names: in a cache-backed state
    # that pointer is lifecycle a hand edit can move back to an older (still verified) publication
    recorded = max((int(v) for v in task.get("publications", {}) if v.isascii() and v.isdigit()), default=0)
    floor = max(published["version"] if published else 0, recorded, version_floor(state, task_id))
    if current["kind"] in ("ours", "unrecorded") and current["task_id"] == task_id:
        floor = max(floor, current["version"])  # Guard may have seen it: never reissued with other content
    if published and published["sha256"] == digest and published["version"] >= floor:
        return published["version"], False
    return floor + 1, True


class Publication:
    """One refresh decision: the event to append (if any) and what happens to the file.

    action is published | rewritten | unchanged | removed | absent | invalid | foreign | outside.
    """

    __slots__ = ("action", "path", "task_id", "version", "sha256", "reason", "draft", "document", "remove", "code",
                 "repaired")

    def __init__(self, action, path, *, task_id=None, version=None, sha256=None, reason=None,
                 draft=None, document=None, remove=False, code=None, repaired=None):
        self.action, self.path, self.task_id, self.version = action, path, task_id, version
        self.sha256, self.reason, self.draft, self.document, self.remove = sha256, reason, draft, document, remove
        self.code, self.repaired = code, repaired

    @property
    def writes(self):
        """Whether carrying it out touches the file (only the write itself can tell if it succeeds)."""
        return self.remove or self.document is not None

    def as_dict(self):
        return {k: getattr(self, k) for k in ("action", "path", "task_id", "version", "sha256", "reason", "code",
                                              "repaired") if getattr(self, k) is not None}


def plan_refresh(state, *, workspace, env, now=time.time, cwd=None):
    """Decide the publication for `state` (the state as it will be after the pending events).

    `workspace` is the project root (a realpath); `cwd` the hook payload's `cwd` as given, which
    Guard resolves EFG_CONTRACT_PATH against (the CLI has no payload: its cwd is the root)."""
    path, outside = guard_file(cwd or workspace, env, project_root=workspace)
    if outside is not None:
        return Publication("outside", path, reason=outside, code=ErrorCode.PROVIDER_PATH_OUTSIDE)
    not_a_directory = directory_problem(path)
    if not_a_directory is not None:
        return Publication("error", path, reason=not_a_directory, code=ErrorCode.PROVIDER_PATH_FOREIGN)
    task_id, reason = select_task(state)
    current = read_file_state(path, state)
    projection = code = None
    if task_id is not None:
        projection = projection_for(state["tasks"][task_id], project_root=workspace)
        if projection is None:
            reason = f"task {task_id[:8]} has no goal yet (`intent: goal ...`)"
            code = ErrorCode.PROJECTION_INCOMPLETE
    if projection is None:
        # A file naming our task at a version we never recorded (a recovery cut its event) is ours
        # to withdraw: left alone it would keep an old contract in force.
        mine = current["kind"] in ("ours", "unrecorded")
        action = "removed" if mine else {"foreign": "foreign"}.get(current["kind"], "absent")
        return Publication(action, path, task_id=task_id, reason=reason, remove=mine, code=code)
    return _plan_publish(path, current, state, state["tasks"][task_id], projection, now)


def _plan_publish(path, current, state, task, projection, now):
    task_id = task["task_id"]
    digest = document.projection_sha256(projection)
    published = task.get("published")
    version, is_new = next_version(state, task_id, digest, current)
    refs = list(task["claim_events"])
    doc = document.build_document(projection, contract_ref=f"intent:{task_id}", contract_version=version,
                                  source_message_refs=refs,
                                  updated_at=format_utc(now()))
    known = {"task_id": task_id, "version": version, "sha256": digest}
    # Never publish what Guard would refuse, and never withdraw for it either: the version Guard
    # enforces stays in force, and the receipt and `status` say so and why.
    enforced = (f"Guard still enforces v{published['version']}" if published
                else "Guard has no contract for this task yet")
    errors = acceptance.validate_provider_document(doc)
    if errors:
        return Publication("invalid", path, reason=f"{enforced}: the new contract would be invalid to Guard ("
                           + "; ".join(errors) + ")", code=ErrorCode.CONTRACT_INVALID, **known)
    rendered = document.render_document(doc)
    if len(rendered) > contract_file.MAX_DOCUMENT_BYTES:
        return Publication("too_large", path, code=ErrorCode.CONTRACT_TOO_LARGE, reason=(
            f"{enforced}: the contract would be {len(rendered) / 1024:.0f} KiB > "
            f"{contract_file.MAX_DOCUMENT_BYTES // 1024} KiB; drop or shorten claims"), **known)
    if current["kind"] == "foreign":
        return Publication("foreign", path, reason=foreign_reason(path, current), **known)
    repaired = f"repaired the Guard file: it was {current['damage']}" if current.get("damage") else None
    if is_new:
        draft = Draft("contract_published", task_id, "system", {
            "contract_ref": f"intent:{task_id}", "contract_version": version, "snapshot_sha256": digest,
            "source_message_refs": refs})
        return Publication("published", path, draft=draft, document=rendered, repaired=repaired, **known)
    if current["kind"] == "ours" and current["task_id"] == task_id and current["version"] == version \
            and not current.get("errors"):
        return Publication("unchanged", path, **known)
    # a damaged or older file of ours: the recorded (ref, version, hash) written back as it was
    return Publication("rewritten", path, document=rendered, repaired=repaired, **known)


def foreign_reason(path, current):
    """The true words for a file we must not overwrite."""
    return f"a file intent-loop did not write is at {path}; Guard reads that one ({current.get('why', 'not ours')})"


def directory_problem(path):
    """Why the Guard file's directory may not be written through (it is a link or not a directory:
    the write would go wherever it points), or None when it is a directory or missing."""
    directory = fast_os.path.dirname(path)
    try:
        st = fast_os.lstat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{directory} cannot be examined ({exc.strerror}); nothing is written"
    if stat.S_ISDIR(st.st_mode):
        return None
    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
    return f"{directory} is {kind}; intent-loop writes nothing through it (Guard still reads {path})"


def apply_file(publication, *, sync_later=None):
    """Write or withdraw the document (the caller holds the lock and has appended the event).

    `sync_later(sync)`: the file is renamed into place now, so Guard reads the new contract from
    this instant, and its syncs are left to `sync` (a hook's transaction runs it after the answer:
    storage.transaction.Transaction.sync_later); without it the file is written durably here."""
    if publication.remove:
        try:
            fast_os.unlink(publication.path)
        except FileNotFoundError:
            pass
    elif publication.document is not None:
        write_document(publication.path, publication.document, sync_later=sync_later)


def refresh(tx, *, workspace, env, now=time.time, cwd=None):
    """Publish, rewrite or withdraw the provider document inside a locked transaction."""
    publication = plan_refresh(tx.state, workspace=workspace, env=env, now=now, cwd=cwd)
    if publication.draft is not None:
        tx.append([publication.draft], request_id=f"publish:{publication.task_id}:{publication.version}",
                  fingerprint=publication.sha256)
    apply_file(publication)
    return publication.as_dict()


def write_document(path, data, *, sync_later=None):
    """Atomic replace in the document's own directory; add a .gitignore when we create it.
    With `sync_later` (see apply_file) the replace is atomic now and made durable by it."""
    directory = fast_os.path.dirname(path)
    try:
        st = fast_os.lstat(directory)
        if not stat.S_ISDIR(st.st_mode):
            raise IntentLoopError(ErrorCode.PROVIDER_PATH_FOREIGN, f"{directory} is not a directory; not touching it")
    except FileNotFoundError:
        try:
            fast_os.makedirs(directory, 0o755)
            replace_atomically(fast_os.path.join(directory, ".gitignore"), GITIGNORE, mode=0o644)
        except OSError as exc:
            raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED,
                                  f"cannot create {directory}: {exc.strerror}") from exc
    try:
        replace_atomically(path, data, mode=0o644, durable=sync_later is None)
        if sync_later is not None:
            sync_later(lambda: make_durable(path))
    except IntentLoopError as exc:
        if exc.code == ErrorCode.DURABILITY_UNCERTAIN:
            return
        raise IntentLoopError(ErrorCode.PROVIDER_WRITE_FAILED,
                              f"{exc.message}; the next refresh writes it again") from exc


def make_durable(path):
    """Sync a document already renamed into place, then its directory (atomic.replace_atomically's
    two syncs, made after the answer). A file replaced since then is synced as it now stands."""
    fd = fast_os.open(path, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
    try:
        if stat.S_ISREG(fast_os.fstat(fd).st_mode):
            platform.fsync_file(fd)
    finally:
        fast_os.close(fd)
    platform.fsync_directory(fast_os.path.dirname(path))

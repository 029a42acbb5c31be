"""What every hook call stands on: the project, session and state a handler works on
(HookContext, resolved once per call), the verified read with its rebuild after the answer, the
source references and request ids of what a hook records, and THE recording rule."""
from intent_loop.base.canonical import sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.hook.runtime import after_of, log_failure
from intent_loop.hook.seen_record import SeenRecord
from intent_loop.storage.paths import check_real_directory, project_paths, resolve_data_root, session_hash

# Only what every call needs is imported here; the ledger, command handling, views, publishing
# and redaction load on the paths that use them (each import is a slice of a ~10 ms budget).
# A project intent-loop has never written to has no state to read.
# A project never written to: REDUCER.initial()'s maps, typed here so that path (every Codex
# session in a folder intent-loop never recorded) imports no reducer; tests/hook/test_hook_modules.py
# pins it to REDUCER.initial().
NO_STATE = {"tasks": {}, "sessions": {}, "candidates": {}, "last_change": {"task_id": None, "seq": 0}}


def reducer():
    from intent_loop.intent.state import REDUCER

    return REDUCER


# About 40 ms of stdlib verification: more unverified ledger than this after the checkpoint (the
# cache was deleted or is of an old format) is not verified inside a hook's 2 s deadline. The hook
# answers without context and its after-answer child rebuilds the checkpoint (hook/deferred.py).
REBUILD_THRESHOLD = 4 << 20


def read_verified(paths, after):
    """The verified state; CACHE_REBUILDING when the checkpoint is far behind, with the rebuild
    queued on `after` (an AfterAnswer) to run once the answer is out, whatever the handler does."""
    from intent_loop.storage.reading import load_verified
    try:
        return load_verified(paths, reducer(), max_unverified=REBUILD_THRESHOLD)
    except IntentLoopError as exc:
        if exc.code == "CACHE_REBUILDING":
            from intent_loop.hook.deferred import rebuild_after_answer

            rebuild_after_answer(paths, reducer(), after)
        raise


def read_state(paths, after):
    return read_verified(paths, after).state


class HookContext:
    """The project, session and state a handler works on (resolved once per call)."""

    def __init__(self, payload, runtime):
        session_id, cwd = payload.get("session_id"), payload.get("cwd")
        if not isinstance(session_id, str) or not session_id or not isinstance(cwd, str):
            raise IntentLoopError(ErrorCode.INVALID_HOOK_PAYLOAD,
                                  "the hook's payload lacks a session_id or cwd string; nothing was recorded")
        self.env = runtime["env"]
        self.deadline = runtime["deadline"]
        self.after = after_of(runtime)  # what runs once the answer is out (hook/runtime.AfterAnswer)
        root, _how = resolve_data_root(self.env, executable=runtime.get("executable"))
        self.paths = project_paths(root, cwd)
        self.workspace = self.paths.root
        self.cwd = cwd  # as given: Guard resolves EFG_CONTRACT_PATH from it, not from its realpath
        self.session = session_hash(session_id)
        self.session_id = session_id  # Guard names its records by the id itself (guard/efg_runs.py)
        self.state = NO_STATE
        self.verified = None  # what a mutation continues from, so the cache is parsed once per call
        self.seen = SeenRecord(self.paths, self.session, cwd=cwd, env=self.env)  # what this session was told
        self._place = None
        if check_real_directory(self.paths.dir):
            self.verified = read_verified(self.paths, self.after)
            self.state = self.verified.state

    def log_guard(self, error):
        """Log a Guard file that could not be written (guard/publishing.py hands the error here)."""
        log_failure(self.env, "Guard", "provider_file", error)

    def linked_task(self):
        return self.state["tasks"].get(self.state["sessions"].get(self.session))

    def place(self):
        """Where this session stands in the continuity table, for the state this call read."""
        if self._place is None:
            from intent_loop.intent.continuity import Place

            self._place = Place(self.state, self.paths, self.session)
        return self._place

    def enforcement(self, *, session_start=False):
        """(verdict, tell_user, tell_model): what Guard enforces in this session
        (guard/enforcement.py), and who must hear it now.

        SessionStart looks afresh and writes nothing (its Guard hook may still be starting, so the
        verdict may be a prediction); the caller remembers it with the view of a linked session.
        A prompt looks again until the session holds a confirmed verdict the user was told of:
        the user hears it once a session and when the state or its cause changes, the model when
        it differs from what its header said."""
        told = None if session_start else self.seen.enforcement()
        if told is not None and told["confirmed"] and told["user"]:
            return told, False, False
        from intent_loop.guard.enforcement import observe

        verdict = observe(self.env, cwd=self.cwd, session_id=self.session_id, paths=self.paths,
                          confirm=not session_start, record=not session_start)
        if session_start:
            return verdict, False, False
        same = told is not None and (told["state"], told["cause"]) == (verdict["state"], verdict["cause"])
        self.seen.note_enforcement(verdict, user=True)
        return verdict, not (same and told["user"]), not same


def turn_of(payload):
    """The host's id of this turn: Codex's `turn_id`; Claude Code sends none, but a `prompt_id` per
    prompt, which its Stop repeats (docs/hosts.md). "" when neither is a string."""
    for field in ("turn_id", "prompt_id"):
        if isinstance(payload.get(field), str):
            return payload[field]
    return ""


def make_source_ref(kind, opaque_id, text, *, redaction=None):
    """A validated opaque host id is the source identity; else the hash of the REDACTED text
    (`redaction`: a version of the rules other than the current one, see with_former_ids)."""
    from intent_loop.intent.claims import is_opaque_id
    from intent_loop.redaction.redact import VERSION, has_secret, redact

    if is_opaque_id(opaque_id) and not has_secret(opaque_id):
        return {"kind": kind, "event_id": opaque_id}
    redacted = redact(text or "", version=redaction or VERSION)
    # surrogatepass: a prompt may hold a lone surrogate (its line is rejected); the hash must not fail
    return {"kind": kind, "sha256": sha256_hex(redacted.encode("utf-8", "surrogatepass"))}


def with_former_ids(request_id_under):
    """The ids a request had under the previous redaction rules when they differ from today's: a
    retry that spans an upgrade of the rules finds the request recorded before it (mutate's
    `former_request_ids`; docs/upgrading.md). Text the pre-filter clears redacts alike, so ordinary
    prompts pay nothing; only one version back: a retry spans seconds, not two upgrades."""
    from intent_loop.redaction.redact import VERSION

    current, former = request_id_under(VERSION), request_id_under(VERSION - 1)
    return current, (() if former == current else (former,))


def is_recording(ctx, task):
    """THE recording rule: a hook records this session's prompts and turns into `task` only while
    the task exists, is on, and is private nowhere for this session. The deferred writes ask it
    again under the lock (the task may have been turned off, made private or deleted between the
    hook's lock-free read and its write); a session that moved on to another task meanwhile still
    gets its observation recorded under the task it was made in."""
    from intent_loop.intent.private_mode import is_private_here

    return task is not None and task["mode"] == "on" and not is_private_here(ctx.paths, ctx.session, task)


def refresh_guard(ctx, deadline, *, resume=None, first=None):
    """Put the Guard file in line with the contract the ledger records, under the project lock:
    after a retried Stop, and after a command prompt whose lines were written but whose call did
    not finish (hook/handlers.py). What it found (a refusal, a repair) is told at the next prompt.
    `resume`: a Verified to continue from, never one a failed transaction left behind. `first(tx)`
    runs under the same lock before the refresh."""
    from intent_loop.guard import publishing
    from intent_loop.storage.transaction import Transaction

    with Transaction(ctx.paths, reducer(), deadline=deadline, resume=resume) as tx:
        if first is not None:
            first(tx)
        ctx.seen.note_guard(publishing.refresh_quietly(tx, workspace=ctx.workspace, env=ctx.env, cwd=ctx.cwd,
                                                       log=ctx.log_guard))

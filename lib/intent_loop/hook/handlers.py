"""What each Codex hook does with its payload: SessionStart, UserPromptSubmit, Stop.

Handlers return {"context": str?, "system_message": str?, "block_reason": str?}; hook.runtime
turns that into the one answer Codex accepts. Sessions with no linked task leave no trace.
"""

from intent_loop.errors import IntentLoopError
from intent_loop.storage import fast_os
from intent_loop.storage.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.storage.paths import check_real_directory, project_paths, resolve_data_root, session_hash

# Only what every call needs is imported here; the ledger, command handling, views, publishing
# and redaction load on the paths that use them (each import is a slice of a ~10 ms budget).
# A project intent-loop has never written to has no state to read.
SEEN_PREFIX = "v2.seen-"
SEEN_CAP = 64 << 10  # a seen record is a few hundred bytes; a bigger one is not ours to believe
NO_STATE = {"tasks": {}, "sessions": {}, "candidates": {}, "last_change": {"task_id": None, "seq": 0}}


def reducer():
    from intent_loop.intent.state import REDUCER

    return REDUCER

RESUME_HINT = ("intent-loop: task {short}{label} was the last one changed in this project and is not "
               "linked to this session; the user can type `intent: resume` to continue it.")


# About 40 ms of stdlib verification: more unverified ledger than this after the checkpoint (the
# cache was deleted or is of an old format) is not verified inside a hook's 2 s deadline. The hook
# answers without context and its after-answer child rebuilds the checkpoint (hook/deferred.py).
REBUILD_THRESHOLD = 4 << 20


def read_verified(paths):
    from intent_loop.storage.ledger import load_verified
    try:
        return load_verified(paths, reducer(), max_unverified=REBUILD_THRESHOLD)
    except IntentLoopError as exc:
        if exc.code == "CACHE_REBUILDING":
            from intent_loop.hook.deferred import rebuild_after_answer

            exc.after_answer = rebuild_after_answer(paths, reducer())
        raise


def read_state(paths):
    return read_verified(paths).state


class HookContext:
    """The project, session and state a handler works on (resolved once per call)."""

    def __init__(self, payload, runtime):
        session_id, cwd = payload.get("session_id"), payload.get("cwd")
        if not isinstance(session_id, str) or not session_id or not isinstance(cwd, str):
            raise ValueError("payload lacks session_id or cwd")
        self.env = runtime["env"]
        self.deadline = runtime["deadline"]
        root, _how = resolve_data_root(self.env, executable=runtime.get("executable"))
        self.paths = project_paths(root, cwd)
        self.workspace = self.paths.root
        self.cwd = cwd  # as given: Guard resolves EFG_CONTRACT_PATH from it, not from its realpath
        self.session = session_hash(session_id)
        self.state = NO_STATE
        self.verified = None  # what a mutation continues from, so the cache is parsed once per call
        self._seen_record = None  # the cache's seen record, read at most once per call
        if check_real_directory(self.paths.dir):
            self.verified = read_verified(self.paths)
            self.state = self.verified.state

    def linked_task(self):
        return self.state["tasks"].get(self.state["sessions"].get(self.session))

    def _seen_path(self):
        # Format 2 (with the sharded cache): a format-1 `seen-<session>.json` is never read; it is
        # removed when this session's record is first written again, or with the rest of cache/.
        return fast_os.path.join(self.paths.cache_dir, f"{SEEN_PREFIX}{self.session}.json")

    def _write_seen(self, record):
        try:  # a symlinked cache/ is never written through (isdir would follow it)
            real = check_real_directory(self.paths.cache_dir)
        except IntentLoopError:
            real = False
        if real:
            from intent_loop.storage.atomic import replace_atomically

            try:
                replace_atomically(self._seen_path(), canonical_bytes(record), durable=False)
            except IntentLoopError:
                return
            if self._seen_record is None or not self._seen_record:
                try:
                    fast_os.unlink(fast_os.path.join(self.paths.cache_dir, f"seen-{self.session}.json"))
                except OSError:
                    pass
            self._seen_record = record

    def remember_view(self, text, state):
        """Record (in the deletable cache) which view this session was shown, and as of which
        claim-changing event, so a later prompt with nothing new need not even render it."""
        record = {"view_sha256": sha256_hex(text.encode()), "change_seq": state["last_change"]["seq"]}
        announced = self._seen().get("proposals_seq")
        if announced is not None:
            record["proposals_seq"] = announced
        self._write_seen(record)

    def new_proposals(self, state):
        """The agent's proposals for this session's task the user has not been told about yet; they
        count as told from now on (the seen record: deleting the cache names them once more)."""
        task = state["tasks"].get(state["sessions"].get(self.session))
        newest = task.get("proposal_seq", 0) if task is not None else 0
        if not newest:
            return []
        told = self._seen().get("proposals_seq")
        told = told if type(told) is int else 0
        if newest <= told:
            return []
        record = self._seen()
        record["proposals_seq"] = newest
        self._write_seen(record)
        return sorted((c for c in state["candidates"].values() if c.get("kind") == "proposal"
                       and c["task_id"] == task["task_id"] and c["state"] == "open" and c["seq"] > told),
                      key=lambda c: (c["seq"], c["candidate_id"]))

    def note_unseen(self, items):
        """A prompt answered locally changed the task: the model has not seen the view since, so
        the seen record keeps its old view and gains what changed (for the next model prompt)."""
        record = self._seen()
        record["unseen"] = (record.get("unseen") if isinstance(record.get("unseen"), list) else []) + items
        self._write_seen(record)

    def unseen_changes(self):
        """What locally answered prompts changed, for the model. The record is a deletable cache,
        so only texts in the shapes change_items makes (fixed words, verbs, short ids) are used:
        a hand-edited record cannot put words into the model's context."""
        items = self._seen().get("unseen")
        if not isinstance(items, list) or not items:
            return []
        from intent_loop.hook.prompt_answer import is_change_item

        return [item for item in items if is_change_item(item)]

    def _seen(self):
        if self._seen_record is None:
            from intent_loop.storage.paths import read_capped

            try:  # a derived file: a link, FIFO or /dev/zero there is no record (never followed, never blocks)
                data = read_capped(self._seen_path(), SEEN_CAP)
                record = loads(data) if data is not None else {}
            except (OSError, ValueError, RecursionError, IntentLoopError):
                record = {}
            self._seen_record = record if isinstance(record, dict) else {}
        return dict(self._seen_record)

    def has_seen(self, text):
        return self._seen().get("view_sha256") == sha256_hex(text.encode())

    def has_seen_changes_up_to(self, state):
        """True when no claim-changing event happened since this session was shown its view."""
        return self._seen().get("change_seq") == state["last_change"]["seq"]


def _source(kind, opaque_id, text, *, redaction=None):
    """A validated opaque host id is the source identity; else the hash of the REDACTED text
    (`redaction`: a version of the rules other than the current one, see _former_ids)."""
    from intent_loop.intent.claims import is_opaque_id
    from intent_loop.redact import VERSION, has_secret, redact

    if is_opaque_id(opaque_id) and not has_secret(opaque_id):
        return {"kind": kind, "event_id": opaque_id}
    redacted = redact(text or "", version=redaction or VERSION)
    # surrogatepass: a prompt may hold a lone surrogate (its line is rejected); the hash must not fail
    return {"kind": kind, "sha256": sha256_hex(redacted.encode("utf-8", "surrogatepass"))}


def _former_ids(request_id_under):
    """The ids a request had under the previous redaction rules when they differ from today's: a
    retry that spans an upgrade of the rules finds the request recorded before it (mutate's
    `former_request_ids`; docs/upgrading.md). Text the pre-filter clears redacts alike, so ordinary
    prompts pay nothing; only one version back: a retry spans seconds, not two upgrades."""
    from intent_loop.redact import VERSION

    current, former = request_id_under(VERSION), request_id_under(VERSION - 1)
    return current, (() if former == current else (former,))


def _is_recording(ctx, task):
    from intent_loop.intent.private_mode import is_private_here

    return task is not None and task["mode"] == "on" and not is_private_here(ctx.paths, ctx.session, task)


# -- SessionStart --------------------------------------------------------------------------
def session_start(payload, runtime):
    """Read-only: re-inject the user's recorded intent, or hint that `intent: resume` exists."""
    ctx = HookContext(payload, runtime)
    if not ctx.state["tasks"]:
        return None
    from intent_loop.intent.session_view import session_context

    task_id, text = session_context(ctx.state, ctx.paths, ctx.session)
    if text is not None:
        ctx.remember_view(text, ctx.state)
        return {"context": text}
    newest = ctx.state["tasks"].get(ctx.state["last_change"]["task_id"])
    if payload.get("source") == "startup" and newest is not None and newest["task_id"] != task_id \
            and newest["mode"] == "on":
        from intent_loop.intent.views import task_label  # loaded already (session_view)

        return {"context": RESUME_HINT.format(short=newest["task_id"][:8], label=task_label(newest))}
    return None


# -- UserPromptSubmit ----------------------------------------------------------------------
def user_prompt_submit(payload, runtime):
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return None
    from intent_loop.intent.prompt_scan import has_command

    is_subagent = "agent_id" in payload or "agent_type" in payload
    if is_subagent or not has_command(prompt):
        return _observe_prompt(payload, runtime, prompt, actor="agent" if is_subagent else "user")
    return _run_prompt_commands(payload, runtime, prompt)


def _prompt_request_ids(ctx, payload, prompt):
    """SHA-256 of event, session hash, turn id and the hash of the redacted prompt: one per prompt,
    identical for Codex's retries, distinct for several prompts in one turn; then its former ids."""
    from intent_loop.redact import redact

    turn = payload.get("turn_id") if isinstance(payload.get("turn_id"), str) else ""

    def request_id_under(version):
        prompt_hash = sha256_hex(redact(prompt, version=version).encode("utf-8", "surrogatepass"))
        return "prompt:" + sha256_hex("\0".join(("UserPromptSubmit", ctx.session, turn, prompt_hash)).encode("utf-8"))

    return _former_ids(request_id_under)


def _observe_prompt(payload, runtime, prompt, *, actor):
    ctx = HookContext(payload, runtime)
    task = ctx.linked_task()
    if not _is_recording(ctx, task):
        return _unseen_notice(ctx) if actor == "user" and ctx.state["tasks"] else None
    task_id = task["task_id"]

    def record(deadline):  # after the answer (hook_runtime): nothing in it depends on this event
        from intent_loop.intent.tasks import Plan, observe
        from intent_loop.storage.transaction import mutate

        source = _source("agent_turn" if actor == "agent" else "user_event", payload.get("turn_id"), prompt)

        def plan(state):
            if not _is_still_recording(ctx, state, task_id):
                return []
            p = Plan(state, now="")
            observe(p, task_id=task_id, event_type="source_observed", session_hash=ctx.session,
                    source=source, char_count=len(prompt), actor=actor)
            return p.drafts

        request_id, former_ids = _prompt_request_ids(ctx, payload, prompt)
        mutate(ctx.paths, reducer(), request_id=request_id, former_request_ids=former_ids, operation="observe",
               params={"source": source, "actor": actor}, plan=plan, deadline=deadline, resume=ctx.verified)

    answer = {"after_answer": (ctx.paths, record)}
    if actor == "agent":
        return answer
    _announce_proposals(ctx, ctx.state, answer)
    if ctx.has_seen_changes_up_to(ctx.state) and not ctx.unseen_changes():
        return answer
    from intent_loop.intent.session_view import session_context  # only when something changed

    _task_id, text = session_context(ctx.state, ctx.paths, ctx.session)
    if text is not None and not ctx.has_seen(text):
        answer["context"] = _with_change_note(ctx, text)
        ctx.remember_view(text, ctx.state)
    return answer


def _announce_proposals(ctx, state, answer, items=None):
    """Name the agent's new proposals once, in the user's receipt line, with how to confirm them."""
    proposals = ctx.new_proposals(state)
    if not proposals:
        return
    from intent_loop.hook.prompt_answer import proposal_items, receipt_line

    if items is not None:  # a receipt being built: the proposals join its items
        items.extend(proposal_items(proposals))
        return
    answer["system_message"] = receipt_line(proposal_items(proposals))


def _unseen_notice(ctx):
    """A session that stopped recording in a prompt answered locally (`intent: private`, `off`)
    still owes the model the notice, once."""
    if not ctx.unseen_changes():
        return None
    from intent_loop.intent.session_view import session_context

    _task_id, text = session_context(ctx.state, ctx.paths, ctx.session)
    if text is None or ctx.has_seen(text):
        return None
    answer = {"context": _with_change_note(ctx, text)}
    ctx.remember_view(text, ctx.state)
    return answer


def _with_change_note(ctx, view):
    from intent_loop.hook.prompt_answer import change_note

    note = change_note(ctx.unseen_changes())
    return view if note is None else note + "\n" + view


def _is_still_recording(ctx, state, task_id):
    """Re-checked under the lock: the task may have been turned off, made private or deleted
    between the hook's lock-free read and its deferred write. A session that has moved on to
    another task meanwhile still gets this observation recorded under the task it was made in."""
    from intent_loop.intent.private_mode import is_private_here

    task = state["tasks"].get(task_id)
    return task is not None and task["mode"] == "on" and not is_private_here(ctx.paths, ctx.session, task)


def _run_prompt_commands(payload, runtime, prompt):
    from intent_loop.hook import prompt_answer
    from intent_loop.intent.prompt_commands import parse_prompt
    from intent_loop.ops import apply_commands

    commands = parse_prompt(prompt)
    # Whatever stops this call from here on (the hook's deadline included, which no except clause
    # below sees), the answer names the commands that were not recorded (hook.runtime uses it).
    runtime["on_failure"] = lambda exc: prompt_answer.failure_answer(exc, count=len(commands))
    try:
        ctx = HookContext(payload, runtime)
        source_ref = _source("user_event", payload.get("turn_id"), prompt)
        request_id, former_ids = _prompt_request_ids(ctx, payload, prompt)
        receipt = apply_commands.run_commands(
            ctx.paths, commands=commands, session_hash=ctx.session, source_ref=source_ref,
            request_id=request_id, former_request_ids=former_ids, deadline=ctx.deadline,
            workspace=ctx.workspace, env=ctx.env, observation={"char_count": len(prompt)}, resume=ctx.verified,
            cwd=ctx.cwd)
        # the state the commands produced, from their own transaction; reread only when nothing was
        # written in this call (all lines rejected, or a retry that returned the stored events)
        state = receipt.state if receipt.state is not None else read_state(ctx.paths)
    except (IntentLoopError, OSError) as exc:  # a failure never blocks: the prompt goes on, the user is told
        from intent_loop.hook.runtime import log_failure

        answer = prompt_answer.failure_answer(exc, count=len(commands))
        if getattr(exc, "after_answer", None) is not None:  # CACHE_REBUILDING: nothing written, rebuild now
            answer["after_answer"] = exc.after_answer
        else:
            log_failure(runtime["env"], "UserPromptSubmit", "commands", exc)
        return answer
    runtime["on_failure"] = lambda exc: _recorded_but_unanswered(exc, receipt)
    local_only = prompt_answer.is_local_only(prompt, commands)
    if local_only and not _is_steering(payload):
        return _local_answer(ctx, state, receipt)
    return _receipt_answer(ctx, state, receipt, steering=local_only)


def _recorded_but_unanswered(exc, receipt):
    """The commands were recorded but composing the answer failed: say so, and how to see them."""
    from intent_loop.hook import prompt_answer

    line = (f"{prompt_answer.PREFIX}the `intent:` lines were recorded, but the receipt could not be shown "
            f"({prompt_answer.failure_code(exc)}); `intent: show` shows them")
    return {"system_message": line, "context": line}


def _is_steering(payload):
    """A block would end the turn this message was typed into (see hook/transcript.py): such a
    message goes on to the model with the receipt line instead."""
    from intent_loop.hook.transcript import is_steering

    return is_steering(payload)


def _local_answer(ctx, state, receipt):
    """Block the prompt with the answer as its reason: the user reads it, no model turn is spent,
    and the view is NOT marked seen, so the next prompt that reaches the model carries it."""
    from intent_loop.hook import prompt_answer
    from intent_loop.intent.claim_verbs import HELP_TEXT

    shown = prompt_answer.show_text(state, ctx.paths, ctx.session) if receipt.show_view else None
    if receipt.events and not receipt.replayed and receipt.lines:
        ctx.note_unseen(prompt_answer.change_items(receipt))
    extra = []
    _announce_proposals(ctx, state, None, extra)
    return {"block_reason": prompt_answer.local_answer(receipt, shown=shown, help_text=HELP_TEXT, extra=extra)}


def _receipt_answer(ctx, state, receipt, *, steering=False):
    from intent_loop.hook import prompt_answer
    from intent_loop.ops import apply_commands

    parts = []
    if receipt.lines or receipt.rejected:
        entries = [(prompt_answer.numbered(text)[0], "- " + text) for text in receipt.lines]
        entries += [(line, f"- line {line}: rejected ({code}): {reason}")
                    for line, _verb, code, reason in receipt.rejected]
        entries.sort(key=lambda entry: entry[0])  # in the order the user typed them
        parts.append("intent-loop receipt:\n" + "\n".join(text for _line, text in entries))
    if receipt.help:
        from intent_loop.intent.claim_verbs import HELP_TEXT

        parts.append(HELP_TEXT)
    _task_id, view = apply_commands.session_context(state, ctx.paths, ctx.session)
    if view is not None and (receipt.events or receipt.show_view or not ctx.has_seen(view)):
        parts.append(_with_change_note(ctx, view))
        ctx.remember_view(view, state)
    answer = {"context": "\n\n".join(parts)} if parts else {}
    items = prompt_answer.receipt_items(receipt)
    _announce_proposals(ctx, state, answer, items)
    if steering:  # only management lines, typed while a turn ran: a block would have ended that turn
        items.append("typed while a turn ran, so it went on to the model; between turns it is answered here")
    elif receipt.show_view or receipt.help:
        items.append("`intent: show` and `intent: help` alone on a prompt answer here, at no model cost")
    message = prompt_answer.receipt_line(items)
    if message is not None:
        answer["system_message"] = message
    return answer or None


# -- Stop ----------------------------------------------------------------------------------
def stop(payload, runtime):
    """Record a hash-only result signal, then refresh the Guard provider document (both after the
    answer, which for Stop is always `{"continue":true}`)."""
    ctx = HookContext(payload, runtime)
    task = ctx.linked_task()
    if not _is_recording(ctx, task):
        return None
    task_id = task["task_id"]

    def record_and_publish(deadline):
        from intent_loop.intent.tasks import Plan, observe
        from intent_loop.ops import apply_commands
        from intent_loop.storage.transaction import Planned, Transaction, mutate

        message = payload.get("last_assistant_message")
        text = message if isinstance(message, str) else ""
        source = _source("agent_turn", payload.get("turn_id"), text)
        turn = payload.get("turn_id") if isinstance(payload.get("turn_id"), str) else ""

        def request_id_under(version):
            source_then = _source("agent_turn", payload.get("turn_id"), text, redaction=version)
            identity = source_then.get("event_id") or source_then["sha256"]
            return "stop:" + sha256_hex("\0".join(("Stop", ctx.session, turn, identity)).encode())

        request_id, former_ids = _former_ids(request_id_under)

        def plan(state):
            if not _is_still_recording(ctx, state, task_id):
                return []
            p = Plan(state, now="")
            observe(p, task_id=task_id, event_type="result_signal_observed", session_hash=ctx.session,
                    source=source, char_count=len(message) if isinstance(message, str) else 0, actor="agent")
            return Planned(p.drafts, detail=apply_commands.add_publication(p, workspace=ctx.workspace, env=ctx.env,
                                                                           cwd=ctx.cwd))

        def after_commit(tx, mutation):
            if mutation.detail is not None:
                apply_commands.apply_quietly(mutation.detail, env=ctx.env)

        mutation = mutate(ctx.paths, reducer(), request_id=request_id, former_request_ids=former_ids, operation="stop",
                          params={"source": source}, plan=plan, deadline=deadline,
                          after_commit=after_commit, resume=ctx.verified)
        if mutation.replayed:  # a retried Stop still makes sure the file is current
            with Transaction(ctx.paths, reducer(), deadline=deadline, resume=ctx.verified) as tx:
                apply_commands.refresh_quietly(tx, workspace=ctx.workspace, env=ctx.env, cwd=ctx.cwd)

    return {"after_answer": (ctx.paths, record_and_publish)}


HANDLERS = {"SessionStart": session_start, "UserPromptSubmit": user_prompt_submit, "Stop": stop}

"""What each Codex hook does with its payload: SessionStart, UserPromptSubmit, Stop.

Handlers return {"context": str?, "system_message": str?, "block_reason": str?}; hook.runtime
turns that into the one answer Codex accepts. Which task a session sees is the continuity table of
docs/hooks.md (intent/continuity.py): its own, else the workspace's current task. A session that
never typed a command writes nothing to the ledger.
"""

from intent_loop.base.canonical import sha256_hex
from intent_loop.errors import IntentLoopError
from intent_loop.hook.context import (
    HookContext,
    is_recording,
    make_source_ref,
    read_state,
    reducer,
    refresh_guard,
    with_former_ids,
)
from intent_loop.hook.runtime import after_of


# -- SessionStart --------------------------------------------------------------------------
def session_start(payload, runtime):
    """Give the session what the continuity table says (docs/hooks.md), whatever the source: its
    task's view, the current task's view with one header line for a session that has not typed a
    command, or the notice that the current task moved while it was away. Nothing is written
    before the answer; a linked session's Guard file is refreshed after it."""
    ctx = HookContext(payload, runtime)
    if not ctx.state["tasks"]:
        return None
    from intent_loop.intent.session_view import session_context

    place = ctx.place()
    _task_id, view = session_context(ctx.state, ctx.paths, ctx.session, place=place)
    notice = None
    if place.kind == "older" and not place.own_control:  # the receipt of its next prompt tells the user too
        from intent_loop.hook.prompt_answer import PREFIX  # only then: the receipts' module costs a start
        from intent_loop.intent.continuity import moved_notice

        notice = PREFIX + moved_notice(ctx.state, ctx.paths, place, known=place.linked)
    text = "\n".join(part for part in (notice, view) if part)
    from intent_loop.hook.exposure import exposure_notice

    answer = {"system_message": exposure_notice(payload, ctx.env, ctx.paths)}
    if text:
        answer["context"] = text
        if place.linked is not None:  # an unlinked session writes nothing, not even its seen record
            ctx.seen.remember_view(view or "", ctx.state)
    # a takeover between sessions (issue 33): one lstat against this session's last refresh decides,
    # so the steady state forks no after-answer child (its modules and the fork cost a start)
    if place.linked is not None and place.current is not None and ctx.seen.guard_changed():
        ctx.after.add(ctx.paths, _guard_repair_job(ctx))
    return answer


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

    return with_former_ids(request_id_under)


def _observe_prompt(payload, runtime, prompt, *, actor):
    ctx = HookContext(payload, runtime)
    task = ctx.linked_task()
    answer = {}
    if is_recording(ctx, task):  # only a linked session's prompts are observed
        ctx.after.add(ctx.paths, _observation_job(ctx, payload, prompt, actor=actor, task_id=task["task_id"]))
    if not ctx.state["tasks"]:
        return answer or None
    if actor == "agent":  # a subagent's prompt (written by the parent model): the view, read-only
        from intent_loop.intent.session_view import subagent_context

        text = subagent_context(ctx.state, ctx.paths, ctx.session, place=ctx.place())
        return {"context": text} if text is not None else None
    items = []
    news = ctx.seen.take_guard_news()
    if news is not None:
        from intent_loop.hook.prompt_answer import Pinned

        items.append(Pinned(news))
    if ctx.place().current is not None and ctx.seen.guard_changed():
        ctx.after.add(ctx.paths, _guard_repair_job(ctx))
    _announce_proposals(ctx, ctx.state, answer, items)
    _tell_what_changed(ctx, answer, items)
    if news is not None:
        from intent_loop.ops.receipts import add_restoration_note

        add_restoration_note(answer, news)
    if items:
        from intent_loop.hook.prompt_answer import receipt_line

        answer["system_message"] = receipt_line(items)
    return answer or None


def _guard_repair_job(ctx):
    """The Guard file is not as the last refresh left it (one lstat said so): refresh it under the
    lock after the answer (guard.provider.plan_refresh restores a takeover, repairs a damaged file
    of ours, leaves the user's); what the user must hear waits in the seen record."""
    return lambda deadline: refresh_guard(ctx, deadline)


def _observation_job(ctx, payload, prompt, *, actor, task_id):
    def record(deadline):  # after the answer (hook_runtime): nothing in it depends on this event
        from intent_loop.intent.tasks import Plan, observe
        from intent_loop.storage.transaction import mutate

        source = make_source_ref("agent_turn" if actor == "agent" else "user_event", payload.get("turn_id"), prompt)

        def plan(state):
            if not is_recording(ctx, state["tasks"].get(task_id)):
                return []
            p = Plan(state, now="")
            observe(p, task_id=task_id, event_type="source_observed", session_hash=ctx.session,
                    source=source, char_count=len(prompt), actor=actor)
            return p.drafts

        request_id, former_ids = _prompt_request_ids(ctx, payload, prompt)
        mutate(ctx.paths, reducer(), request_id=request_id, former_request_ids=former_ids, operation="observe",
               params={"source": source, "actor": actor}, plan=plan, deadline=deadline, resume=ctx.verified)

    return record


def moved_elsewhere(ctx, place, who):
    """The notice `who` is owed because the current task moved outside this session since it was
    last told, or None. A session linked before the seen record knew the current task (an upgrade)
    is told once when it is linked to an older task."""
    if place.own_control or place.kind == "empty":
        return None
    from intent_loop.intent.continuity import moved_notice

    known = ctx.seen.known_current(who)
    if known is None:
        return moved_notice(ctx.state, ctx.paths, place, known=place.linked) if place.kind == "older" else None
    if known == (place.current or ""):
        return None
    return moved_notice(ctx.state, ctx.paths, place, known=known or None)


def _tell_what_changed(ctx, answer, items):
    """A prompt without commands: the model gets the session's view again only when it changed since
    it last saw it, after the notice that the current task moved, if it did (the user reads that
    notice first in the receipt line)."""
    place = ctx.place()
    if place.kind == "unlinked" and not ctx.seen.has_record():
        # its SessionStart, which runs before the first prompt, has just injected the current view
        from intent_loop.intent.session_view import session_context

        _task_id, text = session_context(ctx.state, ctx.paths, ctx.session, place=place)
        ctx.seen.remember_view(text or "", ctx.state)
        ctx.seen.note_current(ctx.state)
        return
    for_user, for_model = moved_elsewhere(ctx, place, "user"), moved_elsewhere(ctx, place, "model")
    if for_user:
        items.insert(0, for_user)
    view = None
    unseen = ctx.seen.unseen_changes()
    if not ctx.seen.has_seen_changes_up_to(ctx.state) or unseen:  # only then: the views cost their imports
        from intent_loop.intent.session_view import session_context

        _task_id, text = session_context(ctx.state, ctx.paths, ctx.session, place=place)
        if text is not None and not ctx.seen.has_seen(text):
            view = _with_change_note(ctx, text)
            ctx.seen.remember_view(text, ctx.state)
        elif unseen:  # a change that left the view as it was (a dismissed proposal): the note alone
            from intent_loop.hook.prompt_answer import change_note

            view = change_note(unseen).replace(" The view below is current.", "")
            ctx.seen.remember_view(text or "", ctx.state)
    if for_model:
        from intent_loop.hook.prompt_answer import PREFIX

        for_model = PREFIX + for_model
    context = "\n".join(part for part in (for_model, view) if part)
    if context:
        answer["context"] = context
    ctx.seen.note_current(ctx.state)


def _announce_proposals(ctx, state, answer, items=None):
    """Name the agent's new proposals once, in the user's receipt line, with how to confirm them."""
    proposals = ctx.seen.new_proposals(state)
    if not proposals:
        return
    from intent_loop.hook.prompt_answer import proposal_items, receipt_line
    from intent_loop.intent.continuity import Place

    named = proposal_items(proposals, session_task=Place(state, ctx.paths, ctx.session).task_id)
    if items is not None:  # a receipt being built: the proposals join its items
        items.extend(named)
        return
    answer["system_message"] = receipt_line(named)


def _with_change_note(ctx, view):
    from intent_loop.hook.prompt_answer import change_note

    note = change_note(ctx.seen.unseen_changes())
    return view if note is None else note + "\n" + view


def _run_prompt_commands(payload, runtime, prompt):
    from intent_loop.hook import prompt_answer
    from intent_loop.intent.prompt_commands import parse_prompt
    from intent_loop.ops import apply_commands

    commands = parse_prompt(prompt)
    # Whatever stops this call from here on (the hook's deadline included, which no except clause
    # below sees), the answer names the commands that were not recorded, or that were written but
    # not confirmed once the transaction got that far (`watch`; hook.runtime uses on_failure).
    after = after_of(runtime)
    watch = runtime.get("commit_watch")
    ctx = None
    after.on_failure = lambda exc: _unfinished(exc, ctx, watch, count=len(commands))
    try:
        ctx = HookContext(payload, runtime)
        ctx.place()  # where the session stood BEFORE its commands (the transaction continues ctx.state)
        source_ref = make_source_ref("user_event", payload.get("turn_id"), prompt)
        request_id, former_ids = _prompt_request_ids(ctx, payload, prompt)
        receipt = apply_commands.run_commands(
            ctx.paths, commands=commands, session_hash=ctx.session, source_ref=source_ref,
            request_id=request_id, former_request_ids=former_ids, deadline=ctx.deadline,
            workspace=ctx.workspace, env=ctx.env, observation={"char_count": len(prompt)}, resume=ctx.verified,
            cwd=ctx.cwd, hand_over=lambda job: ctx.after.hand_over(ctx.paths, job), log_guard_failure=ctx.log_guard,
            watch=watch)
        # the state the commands produced, from their own transaction; reread only when nothing was
        # written in this call (all lines rejected, or a retry that returned the stored events)
        state = receipt.state if receipt.state is not None else read_state(ctx.paths, after)
    except (IntentLoopError, OSError) as exc:  # a failure never blocks: the prompt goes on, the user is told
        from intent_loop.hook.runtime import log_failure

        if after.rescue is None:  # not CACHE_REBUILDING (nothing written, and its rebuild is queued)
            log_failure(runtime["env"], "UserPromptSubmit", "commands", exc)
        return _unfinished(exc, ctx, watch, count=len(commands))
    after.on_failure = prompt_answer.recorded_answer
    local_only = prompt_answer.is_local_only(prompt, commands)
    explicit = any(getattr(c, "verb", None) in _CHOOSES_TASK and c.kind == "manage" for c in commands)
    if local_only and not _is_steering(payload):
        return _local_answer(ctx, state, receipt, explicit=explicit)
    return _receipt_answer(ctx, state, receipt, steering=local_only, explicit=explicit)


# Verbs by which the user chooses the current task knowingly: their receipts already say so.
_CHOOSES_TASK = ("new", "resume", "private", "off", "on")


def continuity_item(ctx, state, *, explicit):
    """The receipt's second item (after the Guard line): the current task moved in another session
    since this one was told, or this prompt's claim made this session's older task current again."""
    from intent_loop.intent.continuity import current_task_id

    place = ctx.place()  # as the session stood before its commands
    before, after = place.current, current_task_id(state)
    moved = moved_elsewhere(ctx, place, "user")
    if after == before or explicit:
        return moved
    if moved is not None or place.kind == "older":
        was = f"task {before[:8]}" if before else "no task"
        return f"task {after[:8]} is current again, so Guard follows it (the current task was {was}, changed in " \
               "another session)"
    return None


def _unfinished(exc, ctx, watch, *, count):
    """The answer to commands whose run failed: "NOT recorded" while nothing reached the ledger; once
    their lines were written (a sync that failed or outlasted the hook's time, a failure after it),
    "written, not confirmed", and the after-answer child does what the commit did not get to: the
    Guard file the ledger records (so Guard enforces this turn what the user typed) and the
    removal of a private control an interrupted `on` or `new` left (as an exact retry would)."""
    from intent_loop.hook import prompt_answer

    if ctx is None or watch is None or not watch.is_written:
        return prompt_answer.failure_answer(exc, count=count)

    def controls(tx):
        from intent_loop.intent.private_mode import repair_after_retry

        repair_after_retry(ctx.paths, ctx.session, tx.state)

    ctx.after.hand_over(ctx.paths, lambda deadline: refresh_guard(ctx, deadline, first=controls))
    return prompt_answer.unconfirmed_answer(exc, count=count)


def _is_steering(payload):
    """A block would end the turn this message was typed into (see hook/transcript.py): such a
    message goes on to the model with the receipt line instead."""
    from intent_loop.hook.transcript import is_steering

    return is_steering(payload)


def _local_answer(ctx, state, receipt, *, explicit):
    """Block the prompt with the answer as its reason: the user reads it, no model turn is spent,
    and the view is NOT marked seen, so the next prompt that reaches the model carries it (and the
    notice that the current task moved, which only the user has read so far)."""
    from intent_loop.hook import prompt_answer
    from intent_loop.intent.claim_verbs import HELP_TEXT

    shown = prompt_answer.show_text(state, ctx.paths, ctx.session, guard=_guard_status(ctx, state)) \
        if receipt.show_view else None
    notice = continuity_item(ctx, state, explicit=explicit)
    if receipt.events and not receipt.replayed and receipt.changes:
        ctx.seen.note_unseen(prompt_answer.change_items(receipt))
    extra = []
    _pending_guard_news(ctx, receipt, extra)
    _announce_proposals(ctx, state, None, extra)
    ctx.seen.note_current(state, model=False)
    return {"block_reason": prompt_answer.local_answer(receipt, shown=shown, help_text=HELP_TEXT, extra=extra,
                                                       notice=notice)}


def _pending_guard_news(ctx, receipt, items):
    """Guard news a Stop or a repair left, unless this prompt's Guard line is newer (returned, for the model)."""
    news = ctx.seen.take_guard_news()
    if news is not None and not (receipt.publication and receipt.publication.get("action") != "unchanged"):
        from intent_loop.hook.prompt_answer import Pinned

        items.insert(0, Pinned(news))
    if receipt.publication is not None:
        ctx.seen.note_guard()
    return news


def _guard_status(ctx, state):
    """The Guard line `intent: show` ends with, as `intent-loop status` prints it (nothing written)."""
    from intent_loop.guard.provider import plan_refresh
    from intent_loop.ops.receipts import guard_status

    decision = plan_refresh(state, workspace=ctx.workspace, env=ctx.env, cwd=ctx.cwd, paths=ctx.paths)
    return guard_status(decision.as_dict())


def _receipt_answer(ctx, state, receipt, *, steering=False, explicit=False):
    from intent_loop.hook import prompt_answer
    from intent_loop.ops import apply_commands

    notice = continuity_item(ctx, state, explicit=explicit)
    for_model = moved_elsewhere(ctx, ctx.place(), "model") if notice is None else notice
    parts = [prompt_answer.PREFIX + for_model] if for_model else []
    from intent_loop.ops.receipts import add_restoration_note, model_receipt

    model_copy = model_receipt(receipt.entries)
    if model_copy is not None:
        parts.append(model_copy)
    if receipt.help:
        from intent_loop.intent.claim_verbs import HELP_TEXT

        parts.append(HELP_TEXT)
    _task_id, view = apply_commands.session_context(state, ctx.paths, ctx.session)
    if view is not None and (receipt.events or receipt.show_view or not ctx.seen.has_seen(view)):
        parts.append(_with_change_note(ctx, view))
        ctx.seen.remember_view(view, state)
    answer = {"context": "\n\n".join(parts)} if parts else {}
    items = prompt_answer.receipt_items(receipt, notice=notice)
    add_restoration_note(answer, _pending_guard_news(ctx, receipt, items), receipt.publication)
    _announce_proposals(ctx, state, answer, items)
    ctx.seen.note_current(state)
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
    """The Stop handler (hook/turn_end.py), loaded only when called: hooks/stop.py imports it
    directly, so the Stop path does not load the prompt handlers, nor they the Stop's."""
    from intent_loop.hook.turn_end import stop as turn_end

    return turn_end(payload, runtime)


HANDLERS = {"SessionStart": session_start, "UserPromptSubmit": user_prompt_submit, "Stop": stop}

"""A prompt with `intent:` commands: run them in one transaction, then answer with the receipt.

A prompt made only of management commands is answered here (the one deliberate block: the user
reads the answer, no model turn is spent); any other goes on to the model with the receipt line
for the user and the model's copy of it, plus the view when it changed. Whatever stops the run,
the answer names the commands that were not recorded (docs/hooks.md).
"""
from intent_loop.base.host_process import host_of
from intent_loop.errors import IntentLoopError
from intent_loop.hook.context import HookContext, make_source_ref, read_state, refresh_guard, turn_of
from intent_loop.hook.runtime import after_of
from intent_loop.hook.telling import (
    announce_proposals,
    enforcement_news,
    moved_elsewhere,
    told_guard,
    with_change_note,
    with_told,
)


def run_prompt_commands(payload, runtime, prompt, *, request_ids):
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
        source_ref = make_source_ref("user_event", turn_of(payload), prompt)
        request_id, former_ids = request_ids(ctx, payload, prompt)
        receipt = apply_commands.run_commands(
            ctx.paths, commands=commands, session_hash=ctx.session, source_ref=source_ref,
            request_id=request_id, former_request_ids=former_ids, deadline=ctx.deadline,
            workspace=ctx.workspace, env=ctx.env, observation={"char_count": len(prompt)}, resume=ctx.verified,
            cwd=ctx.cwd, hand_over=lambda job: ctx.after.hand_over(ctx.paths, job), log_guard_failure=ctx.log_guard,
            watch=watch, host=host_of(ctx.env, payload))
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

    extra, told = [], {}
    verdict = enforcement_news(ctx, told)  # the model's copy waits: the view is not marked seen
    if told.get("user"):
        extra.append(told["user"].removeprefix(prompt_answer.PREFIX))
    shown = prompt_answer.show_text(state, ctx.paths, ctx.session, guard=_guard_status(ctx, state, verdict)) \
        if receipt.show_view else None
    notice = continuity_item(ctx, state, explicit=explicit)
    if receipt.events and not receipt.replayed and receipt.changes:
        ctx.seen.note_unseen(prompt_answer.change_items(receipt))
    _pending_guard_news(ctx, receipt, extra)
    announce_proposals(ctx, state, None, extra)
    ctx.seen.note_current(state, model=False)
    return {"block_reason": prompt_answer.local_answer(receipt, shown=shown, help_text=HELP_TEXT, extra=extra,
                                                       notice=notice, enforcement=verdict)}


def _pending_guard_news(ctx, receipt, items):
    """Guard news a Stop or a repair left, unless this prompt's Guard line is newer (returned, for the model)."""
    news = ctx.seen.take_guard_news()
    if news is not None and not (receipt.publication and receipt.publication.get("action") != "unchanged"):
        from intent_loop.hook.prompt_answer import Pinned

        items.insert(0, Pinned(news))
    if receipt.publication is not None:
        ctx.seen.note_guard()
    return news


def _guard_status(ctx, state, verdict):
    """The Guard line `intent: show` ends with, as `intent-loop status` prints it (nothing written)."""
    from intent_loop.guard.provider import plan_refresh
    from intent_loop.ops.receipts import guard_status

    decision = plan_refresh(state, workspace=ctx.workspace, env=ctx.env, cwd=ctx.cwd, paths=ctx.paths)
    return guard_status(decision.as_dict(), verdict)


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
    from intent_loop.ops.receipts import refused_rule_note

    refused = refused_rule_note(receipt.entries)  # an exec user hears of it only through the model
    if refused is not None:
        parts.insert(0, refused)
    if receipt.help:
        from intent_loop.intent.claim_verbs import HELP_TEXT

        parts.append(HELP_TEXT)
    told = {}
    verdict = enforcement_news(ctx, told)
    _task_id, view = apply_commands.session_context(state, ctx.paths, ctx.session, guard=told_guard(ctx))
    if view is not None and (receipt.events or receipt.show_view or not ctx.seen.has_seen(view)):
        parts.append(with_change_note(ctx, view))
        ctx.seen.remember_view(view, state)
    elif told.get("context"):  # the view is not given again: the changed Guard sentence alone
        parts.append(told["context"])
    answer = {"context": "\n\n".join(parts)} if parts else {}
    items = prompt_answer.receipt_items(receipt, notice=notice, enforcement=verdict)
    add_restoration_note(answer, _pending_guard_news(ctx, receipt, items), receipt.publication)
    announce_proposals(ctx, state, answer, items)
    ctx.seen.note_current(state)
    if steering:  # only management lines, typed while a turn ran: a block would have ended that turn
        items.append("typed while a turn ran, so it went on to the model; between turns it is answered here")
    elif receipt.show_view or receipt.help:
        items.append("`intent: show` and `intent: help` alone on a prompt answer here, at no model cost")
    message = with_told(prompt_answer.receipt_line(items), told)
    if message is not None:
        answer["system_message"] = message
    return answer or None

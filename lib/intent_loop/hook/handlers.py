"""What each Codex hook does with its payload: SessionStart, UserPromptSubmit, Stop.

Handlers return {"context": str?, "system_message": str?, "block_reason": str?}; hook.runtime
turns that into the one answer Codex accepts. Which task a session sees is the continuity table of
docs/hooks.md (intent/continuity.py): its own, else the workspace's current task. A session that
never typed a command writes nothing to the ledger.
"""

from intent_loop.base.canonical import sha256_hex
from intent_loop.hook.context import (
    HookContext,
    is_recording,
    make_source_ref,
    reducer,
    refresh_guard,
    turn_of,
    with_former_ids,
)


# -- SessionStart --------------------------------------------------------------------------
def session_start(payload, runtime):
    """Give the session what the continuity table says (docs/hooks.md), whatever the source: its
    task's view, the current task's view with one header line for a session that has not typed a
    command, or the notice that the current task moved while it was away. Nothing is written
    before the answer; a linked session's Guard file is refreshed after it."""
    ctx = HookContext(payload, runtime)
    if not ctx.state["tasks"]:  # nothing here: only a second store holding this folder is worth a word
        return _other_stores_only(ctx, payload)
    from intent_loop.intent.session_view import session_context

    place = ctx.place()
    compacted = payload.get("source") == "compact"  # the same session, told already
    verdict = (compacted and ctx.seen.enforcement()) or ctx.enforcement(session_start=True)[0]
    from intent_loop.ops.enforcement_words import enforcement_header

    _task_id, view = session_context(ctx.state, ctx.paths, ctx.session, place=place,
                                     guard=enforcement_header(verdict["state"]))
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
            if not compacted:  # what its header said of Guard; the user hears it at the first prompt
                ctx.seen.note_enforcement(verdict, user=False, write=False)
            ctx.seen.remember_view(view or "", ctx.state)
    # a takeover between sessions (issue 33): one lstat against this session's last refresh decides,
    # so the steady state forks no after-answer child (its modules and the fork cost a start)
    if place.linked is not None and place.current is not None and ctx.seen.guard_changed():
        ctx.after.add(ctx.paths, _guard_repair_job(ctx))
    return answer


def _other_stores_only(ctx, payload):
    """SessionStart's answer in a folder this store knows nothing of: None, unless another store the
    environment names holds it (a CODEX_HOME set for one host only), which the user must hear."""
    from intent_loop.base.data_root import other_stores

    if payload.get("source") == "compact":
        return None
    stores = other_stores(ctx.env, ctx.paths.data_root, ctx.paths.project_id)
    if not stores:
        return None
    from intent_loop.hook.exposure import exposure_notice

    return {"system_message": exposure_notice(payload, ctx.env, ctx.paths, stores=stores)}


# -- UserPromptSubmit ----------------------------------------------------------------------
def user_prompt_submit(payload, runtime):
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        return None
    from intent_loop.intent.prompt_scan import has_command, injected_by

    is_subagent = "agent_id" in payload or "agent_type" in payload
    injected = None if is_subagent else injected_by(payload, prompt)
    if injected is not None:  # the host wrote it: observed as the agent's, its commands never run
        return _observe_prompt(payload, runtime, prompt, actor="agent", injected=injected,
                               had_commands=has_command(prompt))
    if is_subagent or not has_command(prompt):
        return _observe_prompt(payload, runtime, prompt, actor="agent" if is_subagent else "user")
    from intent_loop.hook.command_prompt import run_prompt_commands

    return run_prompt_commands(payload, runtime, prompt, request_ids=_prompt_request_ids)


def _prompt_request_ids(ctx, payload, prompt):
    """SHA-256 of event, session hash, turn id (context.turn_of) and the hash of the redacted prompt: one per prompt,
    identical for Codex's retries, distinct for several prompts in one turn; then its former ids."""
    from intent_loop.redaction.redact import redact

    turn = turn_of(payload)

    def request_id_under(version):
        prompt_hash = sha256_hex(redact(prompt, version=version).encode("utf-8", "surrogatepass"))
        return "prompt:" + sha256_hex("\0".join(("UserPromptSubmit", ctx.session, turn, prompt_hash)).encode("utf-8"))

    return with_former_ids(request_id_under)


def _observe_prompt(payload, runtime, prompt, *, actor, injected=None, had_commands=False):
    """A prompt whose lines are not run: the user's without commands, a subagent's, or one the host
    wrote (`injected`: its mark), which goes on as the user's session does, and, when it held
    `intent:` lines, tells the user and the model that they were not recorded, and why."""
    ctx = HookContext(payload, runtime)
    task = ctx.linked_task()
    answer = {}
    if is_recording(ctx, task):  # only a linked session's prompts are observed
        ctx.after.add(ctx.paths, _observation_job(ctx, payload, prompt, actor=actor, task_id=task["task_id"]))
    note = None
    if injected is not None and had_commands:
        from intent_loop.hook.prompt_answer import PREFIX, not_typed_note

        note = not_typed_note(injected)
    if not ctx.state["tasks"]:
        if note:  # the model too: it must not take them for recorded
            answer["context"] = answer["system_message"] = PREFIX + note
        return answer or None
    from intent_loop.hook.telling import announce_proposals, enforcement_news, told_guard, with_told

    if actor == "agent" and injected is None:  # a subagent's prompt (written by the parent model): read-only
        from intent_loop.intent.session_view import subagent_context

        text = subagent_context(ctx.state, ctx.paths, ctx.session, place=ctx.place(), guard=told_guard(ctx))
        return {"context": text} if text is not None else None
    items = []
    news = ctx.seen.take_guard_news()
    if news is not None or note:
        from intent_loop.hook.prompt_answer import Pinned

        items += [Pinned(text) for text in (note, news) if text]
    if ctx.place().current is not None and ctx.seen.guard_changed():
        ctx.after.add(ctx.paths, _guard_repair_job(ctx))
    told = {}
    enforcement_news(ctx, told)  # first: a view built below carries the verdict's sentence
    announce_proposals(ctx, ctx.state, answer, items)
    _tell_what_changed(ctx, answer, items)
    if note:  # first in the model's context: it must not take them for recorded
        answer["context"] = "\n".join(p for p in (PREFIX + note, answer.get("context")) if p)
    if told.get("context"):
        answer["context"] = "\n".join(p for p in (answer.get("context"), told["context"]) if p)
    if news is not None:
        from intent_loop.ops.receipts import add_restoration_note

        add_restoration_note(answer, news)
    if items or told.get("user"):
        from intent_loop.hook.prompt_answer import receipt_line

        answer["system_message"] = with_told(receipt_line(items), told)
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

        source = make_source_ref("agent_turn" if actor == "agent" else "user_event", turn_of(payload), prompt)

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


def _tell_what_changed(ctx, answer, items):
    from intent_loop.hook.telling import moved_elsewhere, told_guard, with_change_note

    """A prompt without commands: the model gets the session's view again only when it changed since
    it last saw it, after the notice that the current task moved, if it did (the user reads that
    notice first in the receipt line)."""
    place = ctx.place()
    if place.kind == "unlinked" and not ctx.seen.has_record():
        # its SessionStart, which runs before the first prompt, has just injected the current view
        from intent_loop.intent.session_view import session_context

        _task_id, text = session_context(ctx.state, ctx.paths, ctx.session, place=place, guard=told_guard(ctx))
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

        _task_id, text = session_context(ctx.state, ctx.paths, ctx.session, place=place, guard=told_guard(ctx))
        if text is not None and not ctx.seen.has_seen(text):
            view = with_change_note(ctx, text)
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


# -- Stop ----------------------------------------------------------------------------------
def stop(payload, runtime):
    """The Stop handler (hook/turn_end.py), loaded only when called: hooks/stop.py imports it
    directly, so the Stop path does not load the prompt handlers, nor they the Stop's."""
    from intent_loop.hook.turn_end import stop as turn_end

    return turn_end(payload, runtime)


HANDLERS = {"SessionStart": session_start, "UserPromptSubmit": user_prompt_submit, "Stop": stop}

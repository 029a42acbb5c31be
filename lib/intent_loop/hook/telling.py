"""What a session is told, once: that the current task moved elsewhere, the agent's new proposals,
what locally answered prompts changed, and what Guard enforces in this session (the verdict the
session holds, and the explanation the user hears once a session and when it changes). The prompt
paths share these (hook/handlers.py, hook/command_prompt.py); the seen record remembers what was told.
"""


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


def told_guard(ctx):
    """The view header's Guard sentence for what this session was last told (None: never told)."""
    told = ctx.seen.enforcement()
    if told is None:
        return None
    from intent_loop.ops.enforcement_words import enforcement_header

    return enforcement_header(told["state"])


def enforcement_news(ctx, told):
    """Until this session holds a confirmed verdict on Guard the user was told of, look again
    (ctx.enforcement): the user's explanation goes to `told["user"]` (a line of its own after the
    receipt line, which it must not crowd out), and the model's header sentence, when it changed,
    to `told["context"]` (one line, not the whole view again). Returns the verdict."""
    verdict, tell_user, tell_model = ctx.enforcement()
    if tell_user or tell_model:
        from intent_loop.ops.enforcement_words import enforcement_explained, enforcement_header

        if tell_user:
            told["user"] = "intent-loop: " + enforcement_explained(verdict)
        if tell_model:
            told["context"] = "intent-loop: " + enforcement_header(verdict["state"])
    return verdict


def with_told(message, told):
    """A receipt line (or None) with the explanation of Guard's state after it, when there is one."""
    return "\n".join(line for line in (message, told.get("user")) if line) or None


def announce_proposals(ctx, state, answer, items=None):
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


def with_change_note(ctx, view):
    from intent_loop.hook.prompt_answer import change_note

    note = change_note(ctx.seen.unseen_changes())
    return view if note is None else note + "\n" + view

"""The Stop hook: record a hash-only result signal for the session's task and refresh the Guard
file, both after the answer (which for Stop is always `{"continue":true}`)."""
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


def stop(payload, runtime):
    """Record a hash-only result signal, then refresh the Guard provider document (both after the
    answer, which for Stop is always `{"continue":true}`)."""
    ctx = HookContext(payload, runtime)
    task = ctx.linked_task()
    if not is_recording(ctx, task):
        return None
    task_id = task["task_id"]

    def record_and_publish(deadline):
        from intent_loop.guard import publishing
        from intent_loop.intent.tasks import Plan, observe
        from intent_loop.storage.transaction import Planned, mutate

        message = payload.get("last_assistant_message")
        text = message if isinstance(message, str) else ""
        turn = turn_of(payload)
        source = make_source_ref("agent_turn", turn, text)

        def request_id_under(version):
            source_then = make_source_ref("agent_turn", turn, text, redaction=version)
            identity = source_then.get("event_id") or source_then["sha256"]
            return "stop:" + sha256_hex("\0".join(("Stop", ctx.session, turn, identity)).encode())

        request_id, former_ids = with_former_ids(request_id_under)

        def plan(state):
            if not is_recording(ctx, state["tasks"].get(task_id)):
                return []
            p = Plan(state, now="")
            observe(p, task_id=task_id, event_type="result_signal_observed", session_hash=ctx.session,
                    source=source, char_count=len(message) if isinstance(message, str) else 0, actor="agent")
            return Planned(p.drafts, detail=publishing.add_publication(p, workspace=ctx.workspace, env=ctx.env,
                                                                           cwd=ctx.cwd, paths=ctx.paths))

        def after_commit(tx, mutation):
            if mutation.detail is not None:  # a refusal or a repair found here is told at the next prompt
                ctx.seen.note_guard(publishing.apply_quietly(mutation.detail, log=ctx.log_guard))

        mutation = mutate(ctx.paths, reducer(), request_id=request_id, former_request_ids=former_ids, operation="stop",
                          params={"source": source}, plan=plan, deadline=deadline,
                          after_commit=after_commit, resume=ctx.verified)
        if mutation.replayed:  # a retried Stop still makes sure the file is current
            refresh_guard(ctx, deadline, resume=ctx.verified)

    ctx.after.add(ctx.paths, record_and_publish)
    return None

"""The read tools: status, the snapshot, open proposals and candidates, the portable export.

Which task a call reads is the hooks' continuity rule (docs/hooks.md): the session's own task, else
the workspace's current task it follows (a thread Codex opened after `/clear`, a subagent's), else
nothing. A private session reads only what it recorded in this process's memory, as the hooks show
it nothing; another session's private task is named as such and shows nothing.
"""
from intent_loop.intent.claim_records import full_record, light_active
from intent_loop.intent.session_view import OFF_NOTICE, PRIVATE_NOTICE
from intent_loop.mcp import arguments as arg

MAX_CLAIM_OBJECTS = 200  # records in one snapshot result; the text view has its own character bound
CLAIM_FIELDS = ("claim_id", "statement", "role", "epistemic_status", "facets", "scope", "confidence")


def claim_object(record, **extra):
    claim = record["claim"]
    out = {key: claim[key] for key in CLAIM_FIELDS if key in claim}
    out["provenance"] = record["provenance"]
    out.update(extra)
    return out


def open_candidates(state, *, task_id=None):
    rows = sorted((c for c in state["candidates"].values() if c["state"] == "open"
                   and (task_id is None or c.get("task_id") == task_id)), key=lambda c: (c["seq"], c["candidate_id"]))
    return [{"candidate_id": c["candidate_id"], "kind": c.get("kind", "long_term"), "statement": c["statement"],
             "facets": c["facets"], "task_id": c.get("task_id"),
             "confirm": f"the user types `intent: confirm {c['candidate_id'][:8]}`"} for c in rows]


def intent_get_snapshot(call):
    arg.check_names(call.args, ("task_id", "max_chars"))
    max_chars = arg.snapshot_chars(call.args.get("max_chars"))
    task_id = call.resolve_task(required=False)
    if task_id is None:
        from intent_loop.mcp.results import NO_TASK_MESSAGE

        return {"text": "", "claims": [], "proposals": [], "note": NO_TASK_MESSAGE}
    task = call.state["tasks"][task_id]
    if call.private_to_another_session(task_id):
        return {"text": f"task {task_id[:8]} is private to another session: nothing of it is shown",
                "claims": [], "proposals": [], "private": True}
    if call.is_private(task_id):
        records = call.memory.records(call.binding.session)
        lines = [PRIVATE_NOTICE] + [f"- [{r['claim']['claim_id'][:8]}] {r['claim']['statement']} "
                                    f"({r['claim']['epistemic_status']}, in memory only)" for r in records]
        return {"text": _clipped("\n".join(lines), max_chars), "claims": [claim_object(r) for r in records],
                "proposals": [], "private": True}
    if task["mode"] == "off":
        return {"text": OFF_NOTICE, "claims": [], "proposals": [], "mode": "off"}
    from intent_loop.intent.views import compact_view, durable_records

    # chosen by their facts, so only the claims returned are read whole (intent/claim_records.py)
    records = [(r, False) for r in light_active(task)] + [(r, True) for r in durable_records(call.state, task_id)]
    objects = [claim_object(full_record(task, r), durable=durable) for r, durable in records[:MAX_CLAIM_OBJECTS]]
    result = {"text": compact_view(call.state, task_id, max_chars=max_chars), "claims": objects,
              "proposals": open_candidates(call.state, task_id=task_id), "mode": task["mode"]}
    if len(records) > MAX_CLAIM_OBJECTS:
        result["claims_omitted"] = len(records) - MAX_CLAIM_OBJECTS
    return result


def _clipped(text, limit):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def intent_status(call):
    arg.check_names(call.args, ())
    paths, state = call.paths, call.state
    task_id = call.resolve_task(required=False)
    result = {"data_root": paths.data_root, "data_root_source": call.binding.data_root_source,
              "project_root": paths.root, "project_id": paths.project_id, "tasks": len(state["tasks"]),
              "session_known": call.binding.session is not None, "linked_task": None,
              "open_candidates": len(open_candidates(state)), "guard": _guard_state(call),
              "enforcement": _enforcement(call), "hooks": _hooks_state(call)}
    if task_id is not None:
        task = state["tasks"][task_id]
        private = call.is_private(task_id)
        # The label only when the user typed it: an imported graph's label is a stranger's words
        # (state.label_source), and `label_source` says whose words a label is.
        by = task.get("label_by") if task.get("label") else None
        linked = {"task_id": task_id, "mode": "private" if private else task["mode"],
                  "label": task["label"] if by == "user" else None, "label_source": by}
        if private:
            linked["in_memory_records"] = len(call.memory.records(call.binding.session))
        else:
            counts = {}
            for record in light_active(task):  # counted from their facts, never read whole
                status = record["claim"]["epistemic_status"]
                counts[status] = counts.get(status, 0) + 1
            linked["active_claims"] = counts
            linked["open_proposals"] = len(open_candidates(state, task_id=task_id))
        result["linked_task"] = linked
    return result


def _hooks_state(call):
    """Whether Codex has run the hooks of the install this server belongs to: it starts servers
    without hook trust, so it can see what the hooks cannot say about themselves."""
    import sys

    from intent_loop.launch import hook_runs

    return hook_runs.own_state(call.paths.data_root, sys.argv[0] if sys.argv else None)


def _enforcement(call):
    """What Guard enforces, as the hooks last saw it: Codex gives this server none of EFG_MODE. Under
    Claude Code (which passes its own variables to the server) nothing does, whatever Codex saw."""
    from intent_loop.base.host_process import on_claude_code
    from intent_loop.guard.enforcement import reported
    from intent_loop.ops.enforcement_words import enforcement_summary

    seen = {"state": "other_host", "cause": None} if on_claude_code(call.env) else reported(call.paths)
    return dict(seen or {"state": None}, summary=enforcement_summary(seen))


def _guard_state(call):
    from intent_loop.guard import provider

    path = provider.provider_path(call.paths.root, call.env)
    found = provider.read_file_state(path, call.state)
    found.pop("errors", None)
    return dict(found, path=path)


def intent_list_candidates(call):
    arg.check_names(call.args, ())
    return {"candidates": open_candidates(call.state)}


def intent_export(call):
    arg.check_names(call.args, ("task_id",))
    from intent_loop.ops.graph_export import export_graph

    task_id = call.resolve_task(required=True)
    if call.is_private(task_id):
        from intent_loop.errors import ErrorCode, IntentLoopError

        raise IntentLoopError(ErrorCode.TASK_PRIVATE, "a private task records nothing and cannot be exported")
    return {"graph": export_graph(call.state, task_id)}

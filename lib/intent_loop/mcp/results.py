"""A write's result, rebuilt from the events it appended: an exact retry returns the same result
from the stored events, so nothing about a write has to be remembered outside the ledger."""

# What a read or write of "the session's task" answers when there is none (mcp/tools.py, reads.py).
NO_TASK_MESSAGE = ("no task to read or add to: the workspace has no current task, or it is private or off; the "
                   "user types `intent: goal ...` to start one")


def summarize(events, *, replayed):
    result = {"events": [e["event_type"] for e in events], "replayed": replayed, "claim_ids": [],
              "proposal_ids": []}
    for event in events:
        etype, payload = event["event_type"], event["payload"]
        if etype in ("claim_added", "claim_replaced"):
            result["claim_ids"].append(payload["claim"]["claim_id"])
            if etype == "claim_replaced":
                result["superseded"] = payload["supersedes"]
        elif etype == "graph_imported":
            result["claim_ids"].extend(c["claim_id"] for c in payload["claims"])
        elif etype == "proposal_added":
            result["proposal_ids"].append(payload["candidate_id"])
        elif etype == "task_started":
            result["started_task"] = event["task_id"]
            result["linked"] = "host_session_hash" in payload
        elif etype == "claim_invalidated":
            result.setdefault("invalidated", []).append(payload["claim_id"])
        elif etype == "candidate_dismissed":
            result["withdrawn"] = payload["candidate_id"]
        elif etype == "mode_set":
            result["mode"] = payload["mode"]
    if len(result["claim_ids"]) == 1:
        result["claim_id"] = result["claim_ids"][0]
    if result["proposal_ids"]:
        ids = " ".join(p[:8] for p in result["proposal_ids"])
        result["confirm"] = (f"recorded as a proposal, not as the user's words: the user confirms by typing "
                             f"`intent: confirm {ids}` (or `intent: dismiss {ids}`)")
    return result

"""The project state as a pure fold over verified ledger events (the reducer cached in cache/)."""
from intent_loop.intent.claims import is_direct_user_explicit

MAX_CLAIM_EVENT_REFS = 20
# Events that change what a task asks for; the newest of them picks the default task.
CLAIM_CHANGING = frozenset(("task_started", "claim_added", "claim_replaced", "claim_invalidated",
                            "candidate_confirmed", "graph_imported", "mode_set"))
PROMOTION_TASKS = 3
# The agent's own events (the MCP server's: starts, proposals, evidence, inferences, unknowns,
# disputes, imports, mode changes) never pick the default task, so they never move which task
# Guard publishes nor withdraw its file: only what the user typed does (issue 13's safety rule).
AGENT_ACTOR = "agent"


def signal_key(statement, facets):
    """A repeated signal is the same normalized statement with the same facets."""
    return " ".join(statement.casefold().split()) + "|" + ",".join(sorted(facets))


class ProjectReducer:
    """Folds events into {tasks, sessions, candidates, signals}; JSON-serializable throughout."""

    version = "project-state-1"

    def initial(self):
        return {"seq": 0, "tasks": {}, "sessions": {}, "candidates": {}, "signals": {},
                "last_change": {"task_id": None, "seq": 0}}

    def apply(self, state, event):
        state["seq"] += 1
        handler = getattr(self, "_on_" + event["event_type"], None)
        task = state["tasks"].get(event["task_id"])
        if handler is not None:
            handler(state, event, event["payload"])
            task = state["tasks"].get(event["task_id"])
        if task is not None:
            task["last_seq"] = state["seq"]
            if event["event_type"] in CLAIM_CHANGING and event["actor"] != AGENT_ACTOR:
                task["changed_seq"] = state["seq"]
                task["changed_at"] = event["occurred_at"]
                state["last_change"] = {"task_id": task["task_id"], "seq": state["seq"]}

    # -- tasks and sessions ---------------------------------------------------------------
    def _on_task_started(self, state, event, payload):
        task = {
            "task_id": event["task_id"], "mode": payload.get("mode", "on"), "label": payload.get("label"),
            "created_at": event["occurred_at"], "changed_at": event["occurred_at"], "changed_seq": state["seq"],
            "last_seq": state["seq"], "claims": {}, "published": None, "claim_events": [],
            "observations": {}, "publications": {},
        }
        state["tasks"][event["task_id"]] = task
        for claim in payload.get("initial_claims", []):
            self._add_claim(state, task, claim, event, provenance="direct")
        if payload.get("host_session_hash"):
            state["sessions"][payload["host_session_hash"]] = event["task_id"]

    def _on_session_linked(self, state, event, payload):
        session = payload["host_session_hash"]
        if payload.get("action") == "detach":
            if state["sessions"].get(session) == event["task_id"]:
                del state["sessions"][session]
        else:
            state["sessions"][session] = event["task_id"]

    def _on_mode_set(self, state, event, payload):
        task = state["tasks"][event["task_id"]]
        if event["actor"] == AGENT_ACTOR:  # Guard keeps the mode the user set (guard_mode)
            task.setdefault("guard_mode", task["mode"])
        else:
            task.pop("guard_mode", None)
        task["mode"] = payload["mode"]

    # -- claims --------------------------------------------------------------------------
    def _add_claim(self, state, task, claim, event, *, provenance):
        task["claims"][claim["claim_id"]] = {
            "claim": claim, "state": "active", "seq": state["seq"], "event_id": event["event_id"],
            "provenance": provenance, "ended_by": None, "actor": event["actor"],
        }
        refs = task["claim_events"]
        if event["actor"] != AGENT_ACTOR and (not refs or refs[-1] != event["event_id"]):
            refs.append(event["event_id"])
            del refs[:-MAX_CLAIM_EVENT_REFS]
        if claim["scope"] == "task" and provenance == "direct" and is_direct_user_explicit(claim):
            key = signal_key(claim["statement"], claim["facets"])
            seen = state["signals"].setdefault(key, [])
            if task["task_id"] not in seen and len(seen) < PROMOTION_TASKS:
                seen.append(task["task_id"])

    def _end_claim(self, task, claim_id, how, event):
        record = task["claims"].get(claim_id)
        if record is not None and record["state"] == "active":
            record["state"] = how
            record["ended_by"] = event["event_id"]

    def _on_claim_added(self, state, event, payload):
        self._add_claim(state, state["tasks"][event["task_id"]], payload["claim"], event, provenance="direct")

    def _on_claim_replaced(self, state, event, payload):
        task = state["tasks"][event["task_id"]]
        for old in payload["supersedes"]:
            self._end_claim(task, old, "superseded", event)
        self._add_claim(state, task, payload["claim"], event, provenance="direct")

    def _on_claim_invalidated(self, state, event, payload):
        task = state["tasks"][event["task_id"]]
        self._end_claim(task, payload["claim_id"], "invalidated", event)
        if event["actor"] != AGENT_ACTOR:
            refs = task["claim_events"]
            refs.append(event["event_id"])
            del refs[:-MAX_CLAIM_EVENT_REFS]

    def _on_graph_imported(self, state, event, payload):
        task = state["tasks"][event["task_id"]]
        for claim in payload["claims"]:
            self._add_claim(state, task, claim, event, provenance="import")
        for claim_id in payload.get("superseded", []):
            self._end_claim(task, claim_id, "superseded", event)

    # -- long-term promotion ---------------------------------------------------------------
    def _on_candidate_added(self, state, event, payload):
        state["candidates"][payload["candidate_id"]] = {
            "candidate_id": payload["candidate_id"], "statement": payload["statement"],
            "facets": payload["facets"], "signal_key": payload["signal_key"], "state": "open",
            "task_count": payload["task_count"], "seq": state["seq"],
        }

    def _on_proposal_added(self, state, event, payload):
        """A claim the agent proposed as the user's words: a candidate of the task, in the same id
        space as the long-term candidates, until the user types `intent: confirm <id>`."""
        state["candidates"][payload["candidate_id"]] = {
            "candidate_id": payload["candidate_id"], "statement": payload["statement"],
            "facets": payload["facets"], "signal_key": "proposal:" + payload["candidate_id"], "state": "open",
            "task_count": 0, "seq": state["seq"], "kind": "proposal", "task_id": event["task_id"],
            "scope": payload["scope"],
        }
        state["tasks"][event["task_id"]]["proposal_seq"] = state["seq"]

    def _on_candidate_confirmed(self, state, event, payload):
        state["candidates"][payload["candidate_id"]]["state"] = "confirmed"
        task = state["tasks"][event["task_id"]]
        self._add_claim(state, task, payload["claim"], event, provenance="candidate")

    def _on_candidate_dismissed(self, state, event, payload):
        state["candidates"][payload["candidate_id"]]["state"] = "dismissed"

    # -- observations and publications -----------------------------------------------------
    def _on_source_observed(self, state, event, payload):
        counts = state["tasks"][event["task_id"]]["observations"]
        counts["source_observed"] = counts.get("source_observed", 0) + 1

    def _on_result_signal_observed(self, state, event, payload):
        counts = state["tasks"][event["task_id"]]["observations"]
        counts["result_signal_observed"] = counts.get("result_signal_observed", 0) + 1

    def _on_contract_published(self, state, event, payload):
        task = state["tasks"][event["task_id"]]
        task["publications"][str(payload["contract_version"])] = payload["snapshot_sha256"]
        task["published"] = {
            "contract_ref": payload["contract_ref"], "version": payload["contract_version"],
            "sha256": payload["snapshot_sha256"], "event_id": event["event_id"],
            "published_at": event["occurred_at"],
        }


def active_claims(task):
    """Active claim records of a task, in ledger order."""
    records = [r for r in task["claims"].values() if r["state"] == "active"]
    records.sort(key=lambda r: (r["seq"], r["claim"]["claim_id"]))
    return records


def is_hook_visible(record):
    """Only direct user-explicit claims may become text the model sees."""
    return record["provenance"] in ("direct", "candidate") and is_direct_user_explicit(record["claim"])


def newest_task_id(state):
    """The task with the most recent claim-changing event (the default task)."""
    return state["last_change"]["task_id"]


# The one reducer every reader and writer folds the ledger with. It keeps no state of its own
# (the folded state lives in the dicts it is handed), so one instance is shared by all callers.
REDUCER = ProjectReducer()

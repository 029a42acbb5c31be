"""The project state as a pure fold over verified ledger events (the reducer cached in cache/)."""
from intent_loop.base.canonical import sha256_hex
from intent_loop.intent.claim_records import claim_order, is_hook_visible, omitted_kind  # noqa: F401 (their readers)
from intent_loop.intent.claims import is_direct_user_explicit
from intent_loop.intent.event_types import AGENT_ACTOR, CHANGES_INTENT, MAX_CLAIM_EVENT_REFS, label_source

# Events that change what a task asks for (intent/event_types.py); the newest picks the default task.
CLAIM_CHANGING = CHANGES_INTENT
PROMOTION_TASKS = 3


def makes_current(event):
    """`intent: resume [<id>]` typed by the user: a `session_linked` attach marked `current`, which
    makes its task the workspace's current one (intent/continuity.py). Links written before the
    marker existed, and every join or detach, leave the current task where it was."""
    payload = event["payload"]
    return (event["event_type"] == "session_linked" and payload.get("current") is True
            and payload.get("action") == "attach")


def signal_key(statement, facets):
    """A repeated signal is the same normalized statement with the same facets."""
    return " ".join(statement.casefold().split()) + "|" + ",".join(sorted(facets))


def signal_digest(key):
    """How state["signals"] is keyed: a digest of the signal key, so no statement text is a key
    (the state is cached, and the cache must hold positions and lifecycle only)."""
    return sha256_hex(key.encode("utf-8"))[:32]


class ProjectReducer:
    """Folds events into {tasks, sessions, candidates, signals, durable, modes, contract_floors};
    JSON-serializable throughout.

    `contract_floors` maps a task id to the highest Guard version a recovery found published for
    it outside what the ledger kept (`contract_version_floor`): its next publication continues
    above it, so Guard never sees a version again with other content.

    `durable` maps each active long-term claim to its task and `modes` each task that is not "on"
    to its mode, so the hook view finds the durable rules of other tasks without reading them all.

    `apply` takes the event's ledger position (offset, length of the line without its LF) when
    the caller knows it (every fold of verified lines does): claims, labels, candidates and
    publications remember where their text is, so the cache stores that pointer instead of the
    text (intent/state_cache.py). Plans fold drafts without a position; their scratch state is
    never cached.
    """

    # 3: contract_floors; 4: hidden claims in their own shard (claim_records.py); 5: a private task never
    # becomes the current task (caches of 4 are rebuilt from the ledger)
    version = "project-state-5"
    wants_position = True  # fold_lines passes each line's (offset, length)

    def initial(self):
        return {"seq": 0, "tasks": {}, "sessions": {}, "candidates": {}, "signals": {},
                "last_change": {"task_id": None, "seq": 0}, "durable": {}, "modes": {}, "contract_floors": {}}

    def apply(self, state, event, position=None):
        state["seq"] += 1
        at = None if position is None else [position[0], position[1]]
        handler = getattr(self, "_on_" + event["event_type"], None)
        tasks = state["tasks"]
        task = tasks.get(event["task_id"])
        if handler is not None:
            handler(state, event, event["payload"], at)
            task = tasks.get(event["task_id"])
        if task is not None:
            if hasattr(tasks, "mark"):  # a cache-backed map: this task's shard changed
                tasks.mark(task["task_id"])
            task["last_seq"] = state["seq"]
            if event["actor"] != AGENT_ACTOR and (event["event_type"] in CLAIM_CHANGING or makes_current(event)):
                task["changed_seq"] = state["seq"]
                task["changed_at"] = event["occurred_at"]
                # a private task is one session's (issue 35 item 8): it never becomes the workspace's
                # current task, so `intent: private` leaves what Guard enforces for the others as it was
                if task["mode"] != "private":
                    state["last_change"] = {"task_id": task["task_id"], "seq": state["seq"]}

    # -- the cache: a small root, shards, and text read back from the ledger (intent/state_cache.py)
    def cache_split(self, state):
        from intent_loop.intent import state_cache

        return state_cache.split(state)

    def cache_join(self, root, store, *, paths, checkpoint):
        from intent_loop.intent import cache_source

        return cache_source.join(self, root, store, paths=paths, checkpoint=checkpoint)

    def cache_same_encoding(self, cached_state, fresh_state):
        from intent_loop.intent import state_cache

        return state_cache.same_encoding(cached_state, fresh_state)

    def cache_plain(self, state, *, strict=False):
        from intent_loop.intent import state_cache

        return state_cache.plain(state, strict=strict)

    # -- tasks and sessions ---------------------------------------------------------------
    def _on_task_started(self, state, event, payload, at):
        task = {
            "task_id": event["task_id"], "mode": payload.get("mode", "on"), "label": payload.get("label"),
            "created_at": event["occurred_at"], "changed_at": event["occurred_at"], "changed_seq": state["seq"],
            "last_seq": state["seq"], "claims": {}, "published": None, "claim_events": [],
            "observations": {}, "publications": {}, "refs": {},
        }
        if task["label"] is not None:
            task["refs"]["label"] = _ref(at, event)
            task["label_by"] = label_source(event)
        state["tasks"][event["task_id"]] = task
        if task["mode"] != "on":
            state["modes"][event["task_id"]] = task["mode"]
        for index, claim in enumerate(payload.get("initial_claims", [])):
            self._add_claim(state, task, claim, event, at, provenance="direct", where=("initial_claims", index))
        if payload.get("host_session_hash"):
            state["sessions"][payload["host_session_hash"]] = event["task_id"]

    def _on_session_linked(self, state, event, payload, at):
        session = payload["host_session_hash"]
        if payload.get("action") == "detach":
            if state["sessions"].get(session) == event["task_id"]:
                del state["sessions"][session]
        else:
            state["sessions"][session] = event["task_id"]

    def _on_mode_set(self, state, event, payload, at):
        task = state["tasks"][event["task_id"]]
        if event["actor"] == AGENT_ACTOR:  # Guard keeps the mode the user set (guard_mode)
            task.setdefault("guard_mode", task["mode"])
        else:
            task.pop("guard_mode", None)
        task["mode"] = payload["mode"]
        if payload["mode"] == "on":
            state["modes"].pop(event["task_id"], None)
        else:
            state["modes"][event["task_id"]] = payload["mode"]

    # -- claims --------------------------------------------------------------------------
    def _add_claim(self, state, task, claim, event, at, *, provenance, where=("claim",)):
        task["claims"][claim["claim_id"]] = {
            "claim": claim, "state": "active", "seq": state["seq"], "event_id": event["event_id"],
            "provenance": provenance, "ended_by": None, "actor": event["actor"], "at": _ref(at, event, *where),
        }
        if len(where) == 2:  # one of an event's several claims: keep their order (claim_order)
            task["claims"][claim["claim_id"]]["index"] = where[1]
        if claim["scope"] == "long_term":  # durable rules carry across tasks: found without a scan
            state["durable"][claim["claim_id"]] = task["task_id"]
        refs = task["claim_events"]
        if event["actor"] != AGENT_ACTOR and (not refs or refs[-1] != event["event_id"]):
            refs.append(event["event_id"])
            del refs[:-MAX_CLAIM_EVENT_REFS]
        if claim["scope"] == "task" and provenance == "direct" and is_direct_user_explicit(claim):
            key = signal_key(claim["statement"], claim["facets"])
            seen = state["signals"].setdefault(signal_digest(key), [])
            if task["task_id"] not in seen and len(seen) < PROMOTION_TASKS:
                seen.append(task["task_id"])

    def _end_claim(self, state, task, claim_id, how, event):
        record = task["claims"].get(claim_id)
        if record is not None and record["state"] == "active":
            record["state"] = how
            record["ended_by"] = event["event_id"]
            state["durable"].pop(claim_id, None)

    def _on_claim_added(self, state, event, payload, at):
        self._add_claim(state, state["tasks"][event["task_id"]], payload["claim"], event, at, provenance="direct")

    def _on_claim_replaced(self, state, event, payload, at):
        task = state["tasks"][event["task_id"]]
        for old in payload["supersedes"]:
            self._end_claim(state, task, old, "superseded", event)
        self._add_claim(state, task, payload["claim"], event, at, provenance="direct")

    def _on_claim_invalidated(self, state, event, payload, at):
        task = state["tasks"][event["task_id"]]
        self._end_claim(state, task, payload["claim_id"], "invalidated", event)
        if event["actor"] != AGENT_ACTOR:
            refs = task["claim_events"]
            refs.append(event["event_id"])
            del refs[:-MAX_CLAIM_EVENT_REFS]

    def _on_graph_imported(self, state, event, payload, at):
        task = state["tasks"][event["task_id"]]
        for index, claim in enumerate(payload["claims"]):
            self._add_claim(state, task, claim, event, at, provenance="import", where=("claims", index))
        for claim_id in payload.get("superseded", []):
            self._end_claim(state, task, claim_id, "superseded", event)

    # -- long-term promotion ---------------------------------------------------------------
    def _on_candidate_added(self, state, event, payload, at):
        state["candidates"][payload["candidate_id"]] = {
            "candidate_id": payload["candidate_id"], "statement": payload["statement"],
            "facets": payload["facets"], "signal_key": payload["signal_key"], "state": "open",
            "task_count": payload["task_count"], "seq": state["seq"], "at": _ref(at, event),
        }

    def _on_proposal_added(self, state, event, payload, at):
        """A claim the agent proposed as the user's words: a candidate of the task, in the same id
        space as the long-term candidates, until the user types `intent: confirm <id>`."""
        state["candidates"][payload["candidate_id"]] = {
            "candidate_id": payload["candidate_id"], "statement": payload["statement"],
            "facets": payload["facets"], "signal_key": "proposal:" + payload["candidate_id"], "state": "open",
            "task_count": 0, "seq": state["seq"], "kind": "proposal", "task_id": event["task_id"],
            "scope": payload["scope"], "at": _ref(at, event),
        }
        state["tasks"][event["task_id"]]["proposal_seq"] = state["seq"]

    def _on_candidate_confirmed(self, state, event, payload, at):
        state["candidates"][payload["candidate_id"]]["state"] = "confirmed"
        task = state["tasks"][event["task_id"]]
        self._add_claim(state, task, payload["claim"], event, at, provenance="candidate")

    def _on_candidate_dismissed(self, state, event, payload, at):
        state["candidates"][payload["candidate_id"]]["state"] = "dismissed"

    # -- observations and publications -----------------------------------------------------
    def _on_source_observed(self, state, event, payload, at):
        counts = state["tasks"][event["task_id"]]["observations"]
        counts["source_observed"] = counts.get("source_observed", 0) + 1

    def _on_result_signal_observed(self, state, event, payload, at):
        counts = state["tasks"][event["task_id"]]["observations"]
        counts["result_signal_observed"] = counts.get("result_signal_observed", 0) + 1

    def _on_contract_published(self, state, event, payload, at):
        task = state["tasks"][event["task_id"]]
        task["publications"][str(payload["contract_version"])] = payload["snapshot_sha256"]
        task["published"] = {
            "contract_ref": payload["contract_ref"], "version": payload["contract_version"],
            "sha256": payload["snapshot_sha256"], "event_id": event["event_id"],
            "published_at": event["occurred_at"],
        }
        task["refs"]["published"] = _ref(at, event)

    def _on_contract_restored(self, state, event, payload, at):
        """Our publication written back over a file changed outside intent-loop (guard/provider.py):
        counted, so `status` can say how often; the file and what was found are in the event."""
        counts = state["tasks"][event["task_id"]]["observations"]
        counts["contract_restored"] = counts.get("contract_restored", 0) + 1

    def _on_contract_version_floor(self, state, event, payload, at):
        """Written by `recover --apply` (project-level, task_id null): {"intent:<task id>": version}."""
        floors = state["contract_floors"]
        for ref, version in payload["floors"].items():
            task_id = ref[len("intent:"):]
            floors[task_id] = max(floors.get(task_id, 0), version)


def version_floor(state, task_id):
    """The version a task's next publication must exceed besides its own (0 when none)."""
    return state.get("contract_floors", {}).get(task_id, 0)


def active_claims(task):
    """Active claim records of a task, in ledger order."""
    records = [r for r in task["claims"].values() if r["state"] == "active"]
    records.sort(key=claim_order)
    return records


def _ref(at, event, *where):
    """Where an event's text lies in the ledger: [offset, length, event_id, payload path...]."""
    return None if at is None else [*at, event["event_id"], *where]


# The one reducer every reader and writer folds the ledger with. It keeps no state of its own
# (the folded state lives in the dicts it is handed), so one instance is shared by all callers.
REDUCER = ProjectReducer()

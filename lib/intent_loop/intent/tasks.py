"""Planning mutations of tasks and claims under the lifecycle rules (pure: state in, drafts out)."""
from intent_loop.base.canonical import sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.intent.claim_records import light_records
from intent_loop.intent.state import PROMOTION_TASKS, REDUCER, signal_digest, signal_key
from intent_loop.storage.ledger import Draft, format_uuid, new_uuid4

MAX_INITIAL_CLAIMS = 12
MODES = ("on", "off", "private")


def derived_task_id(project_id, request_id):
    """A UUIDv5-shaped id from project and request id, so an exact retry names the same task."""
    raw = bytearray(bytes.fromhex(sha256_hex(f"intent-loop-task-v1\0{project_id}\0{request_id}".encode()))[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50
    raw[8] = (raw[8] & 0x3F) | 0x80
    return format_uuid(bytes(raw))


class Plan:
    """Drafts of one mutation plus a scratch copy of the state they would produce.

    Later steps of a multi-command mutation see the effects of earlier ones (a task started by
    the first command receives the claims of the next) without touching the real state.
    """

    def __init__(self, state, *, now, host=None):
        from intent_loop.intent.plan_copy import scratch  # copies only what the plan touches

        self.state = scratch(state)
        self.drafts = []
        self.now = now
        self.host = host  # the hook's host ("codex", "claude-code"), kept on a session's link: None off hooks

    def add(self, draft):
        self.drafts.append(draft)
        fake = {"event_type": draft.event_type, "task_id": draft.task_id, "payload": draft.payload,
                "actor": draft.actor, "event_id": draft.event_id, "occurred_at": self.now}
        REDUCER.apply(self.state, fake)

    def task(self, task_id):
        task = self.state["tasks"].get(task_id)
        if task is None:
            raise IntentLoopError(ErrorCode.TASK_NOT_FOUND,
                                  f"no task {task_id} in this project; see `intent-loop status`")
        return task


def user_claim(plan, *, statement, facets, scope, source_ref):
    """A direct user-explicit claim with a library-made id (no model-generated UUIDs)."""
    return claims_mod.new_claim(claim_id=new_uuid4(), statement=statement, facets=facets, scope=scope,
                                source_ref=source_ref, valid_from=plan.now)


def start_task(plan, *, task_id, mode="on", label=None, session_hash=None, initial_claims=(), started_by=None,
               spill=False):
    """Plan a `task_started` with at most 12 initial claims. More fail TOO_MANY_INITIAL_CLAIMS, except
    for a typed prompt (`spill`): its claims past the 12th follow as `claim_added` events of the same
    request, since a prompt's lines cannot be handed back to the user to retry one by one."""
    if mode not in MODES:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"mode is one of {', '.join(MODES)}")
    if mode == "off" and (label or initial_claims):
        raise IntentLoopError(ErrorCode.TASK_OFF, "an off task takes no label and no claims")
    if task_id in plan.state["tasks"]:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"task {task_id} already exists")
    if label is not None and (not label.strip() or len(label) > claims_mod.MAX_LABEL or "\n" in label):
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT,
                              f"a task label is one line of 1-{claims_mod.MAX_LABEL} characters")
    if len(initial_claims) > MAX_INITIAL_CLAIMS and not spill:
        raise IntentLoopError(ErrorCode.TOO_MANY_INITIAL_CLAIMS, (
            f"a task starts with at most {MAX_INITIAL_CLAIMS} initial claims (got {len(initial_claims)}); "
            "start it with fewer and add the rest afterwards"))
    payload = {"mode": mode, "initial_claims": list(initial_claims[:MAX_INITIAL_CLAIMS])}
    if label is not None:
        payload["label"] = label
    if started_by is not None:  # "import": the label is the imported file's words (state.label_source)
        payload["started_by"] = started_by
    if session_hash is not None:
        payload["host_session_hash"] = session_hash
        if plan.host is not None:  # the session starting it is linked by this event: its host too
            payload["host"] = plan.host
        _detach_previous(plan, session_hash)
    plan.add(Draft("task_started", task_id, "user", payload))
    for claim in initial_claims[MAX_INITIAL_CLAIMS:]:
        plan.add(Draft("claim_added", task_id, "user", {"claim": claim}))
    for claim in initial_claims:
        _propose_candidates(plan, task_id, claim)
    return task_id


def _detach_previous(plan, session_hash):
    previous = plan.state["sessions"].get(session_hash)
    if previous is not None:
        plan.add(Draft("session_linked", previous, "system",
                       {"host_session_hash": session_hash, "action": "detach"}))


def link_session(plan, *, task_id, session_hash, make_current=False):
    """Link the session to the task. `make_current` (`intent: resume`): the link is also the user's
    choice of the workspace's current task (state.makes_current), written even when the session is
    linked already, unless the task is current already."""
    plan.task(task_id)
    linked = plan.state["sessions"].get(session_hash) == task_id
    is_current = plan.state["last_change"]["task_id"] == task_id
    if linked and (not make_current or is_current):
        return False
    if not linked:
        _detach_previous(plan, session_hash)
    payload = {"host_session_hash": session_hash, "action": "attach"}
    if plan.host is not None:  # which host the session runs in, for `log` (no raw session id: seed 000)
        payload["host"] = plan.host
    if make_current and not is_current:
        payload["current"] = True
    plan.add(Draft("session_linked", task_id, "user", payload))
    return True


def _writable_task(plan, task_id):
    task = plan.task(task_id)
    if task["mode"] == "off":
        raise IntentLoopError(ErrorCode.TASK_OFF, "this task is off; `intent: on` re-enables it")
    if task["mode"] == "private":
        raise IntentLoopError(ErrorCode.TASK_PRIVATE, "this task is private; nothing is recorded until `intent: on`")
    return task


def add_claim(plan, *, task_id, claim, actor="user"):
    _writable_task(plan, task_id)
    claims_mod.check_claim(claim)
    plan.add(Draft("claim_added", task_id, actor, {"claim": claim}))
    _propose_candidates(plan, task_id, claim)


def _active_record(task, claim_id):
    record = task["claims"].get(claim_id)
    if record is None or record["state"] != "active":
        raise IntentLoopError(ErrorCode.CLAIM_NOT_FOUND,
                              f"no active claim {claim_id[:8]} in this task; `intent: show` lists them")
    return record


def check_may_displace(record, new_claim, *, direct_user):
    """The protection matrix: who may supersede or invalidate what."""
    old = record["claim"]
    if record["provenance"] in ("direct", "candidate") and claims_mod.is_direct_user_explicit(old):
        if not direct_user or (new_claim is not None and not claims_mod.is_direct_user_explicit(new_claim)):
            raise IntentLoopError(
                ErrorCode.PROTECTED_CLAIM,
                f"claim {old['claim_id'][:8]} is the user's own words; "
                "only a direct user statement can replace or drop it",
            )
    if new_claim is not None:
        kinds = {old["epistemic_status"], new_claim["epistemic_status"]}
        if "inferred" in kinds and kinds & {"unknown", "disputed"}:
            raise IntentLoopError(ErrorCode.PROTECTED_CLAIM,
                                  "unknown and disputed records are never merged with an inference")


def replace_claims(plan, *, task_id, old_ids, claim, direct_user=True, actor="user"):
    task = _writable_task(plan, task_id)
    if not old_ids:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "name at least one claim to replace")
    for old_id in old_ids:
        check_may_displace(_active_record(task, old_id), claim, direct_user=direct_user)
    claims_mod.check_claim(claim)
    claim = dict(claim, supersedes=list(old_ids))
    plan.add(Draft("claim_replaced", task_id, actor, {"claim": claim, "supersedes": list(old_ids)}))
    return claim


def invalidate_claim(plan, *, task_id, claim_id, direct_user=True, actor="user"):
    task = _writable_task(plan, task_id)
    check_may_displace(_active_record(task, claim_id), None, direct_user=direct_user)
    plan.add(Draft("claim_invalidated", task_id, actor, {"claim_id": claim_id}))


def set_mode(plan, *, task_id, mode):
    if mode not in MODES:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"mode is one of {', '.join(MODES)}")
    if plan.task(task_id)["mode"] == mode:
        return False
    plan.add(Draft("mode_set", task_id, "user", {"mode": mode}))
    return True


_ID_CHARS = frozenset("0123456789abcdef-")


def resolve_prefix(ids, prefix, *, what, not_found, where, min_length=1):
    """The one id in `ids` that starts with `prefix` (case-insensitive), or a specific error."""
    prefix = prefix.lower()
    if len(prefix) < min_length:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"give at least {min_length} characters of the {what} id")
    if len(prefix) > 36 or not _ID_CHARS.issuperset(prefix):
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT,
                              f"a {what} id is {min_length}-36 hex digits (dashes allowed), as {where} shows it")
    matches = [i for i in ids if i.startswith(prefix)]
    if not matches:
        raise IntentLoopError(not_found, f"no {what} starts with {prefix}; {where} lists them")
    if len(matches) > 1:
        raise IntentLoopError(ErrorCode.AMBIGUOUS_ID, f"{prefix} matches {len(matches)} {what}s; give more characters")
    return matches[0]


def resolve_claim(task, prefix, *, active_only=True, state=None):
    """A claim id from a unique prefix of at least 4 characters. `state`: where none matches, a
    claim active in another task of the project is named with its task and how to get there."""
    ids = [r["claim"]["claim_id"] for r in light_records(task) if r["state"] == "active" or not active_only]
    try:
        return resolve_prefix(ids, prefix, what="active claim" if active_only else "claim",
                              not_found=ErrorCode.CLAIM_NOT_FOUND, where="`intent: show`", min_length=4)
    except IntentLoopError as exc:
        elsewhere = _task_holding(state, task, prefix) if exc.code == ErrorCode.CLAIM_NOT_FOUND else None
        if elsewhere is None:
            raise
        raise IntentLoopError(ErrorCode.CLAIM_NOT_FOUND,
                              f"claim {prefix.lower()} is active in task {elsewhere[:8]}, not in this one; "
                              f"`intent: resume {elsewhere[:8]}` makes that task current, then try again") from None


def _task_holding(state, task, prefix):
    """The one other task of `state` with an active claim starting with `prefix`, or None."""
    if state is None:
        return None
    prefix = prefix.lower()
    found = {other_id for other_id, other in state["tasks"].items() if other_id != task["task_id"]
             and any(r["state"] == "active" and r["claim"]["claim_id"].startswith(prefix)
                     for r in light_records(other))}
    return found.pop() if len(found) == 1 else None


def resolve_task(state, prefix):
    return resolve_prefix(state["tasks"], prefix, what="task", not_found=ErrorCode.TASK_NOT_FOUND,
                          where="`intent-loop status`")


# -- long-term promotion -------------------------------------------------------------------
def _propose_candidates(plan, task_id, claim):
    """A signal seen in >= 3 distinct tasks becomes a candidate (never a claim) until confirmed.

    Only the claim just added can have made its signal due: a signal grows only when a claim with
    its words is added to another task, which checks it then. So this reads one signal bucket,
    not every claim of the task (issue 23: at 2,000 claims that scan cost 48 ms per command)."""
    record = plan.state["tasks"][task_id]["claims"].get(claim["claim_id"])
    if record is None or record["state"] != "active":
        return
    key = signal_key(claim["statement"], claim["facets"])
    if len(plan.state["signals"].get(signal_digest(key), ())) < PROMOTION_TASKS:
        return
    if any(c["signal_key"] == key for c in plan.state["candidates"].values()):
        return
    plan.add(Draft("candidate_added", task_id, "system", {
        "candidate_id": new_uuid4(), "statement": claim["statement"], "facets": claim["facets"],
        "signal_key": key, "task_count": len(plan.state["signals"][signal_digest(key)]),
    }))


def resolve_candidate(state, prefix):
    """An open candidate from a unique id prefix of at least 4 characters."""
    ids = [cid for cid, c in state["candidates"].items() if c["state"] == "open"]
    candidate_id = resolve_prefix(ids, prefix, what="candidate", not_found=ErrorCode.CANDIDATE_NOT_FOUND,
                                  where="`intent-loop candidate list`", min_length=4)
    return state["candidates"][candidate_id]


def is_proposal(candidate):
    """A claim the agent proposed (MCP) rather than a statement repeated across three tasks."""
    return candidate.get("kind") == "proposal"


def confirm_candidate(plan, *, task_id, candidate_id, source_ref):
    """Only an explicit user confirmation turns a candidate into an explicit claim of `task_id`, the
    confirming session's task: a long-term one, or an agent's proposal with its scope. Never into
    the task the agent proposed it in, which may not be the one Guard enforces (docs/mcp.md)."""
    candidate = plan.state["candidates"].get(candidate_id)
    if candidate is None or candidate["state"] != "open":
        raise IntentLoopError(ErrorCode.CANDIDATE_NOT_FOUND, "no open candidate with that id")
    scope = candidate["scope"] if is_proposal(candidate) else "long_term"
    _writable_task(plan, task_id)
    claim = user_claim(plan, statement=candidate["statement"], facets=candidate["facets"],
                       scope=scope, source_ref=source_ref)
    if not is_proposal(candidate):
        claim["last_confirmed"] = plan.now
    plan.add(Draft("candidate_confirmed", task_id, "user", {"candidate_id": candidate_id, "claim": claim}))
    return claim


def dismiss_candidate(plan, *, task_id, candidate_id, actor="user"):
    candidate = plan.state["candidates"].get(candidate_id)
    if candidate is None or candidate["state"] != "open":
        raise IntentLoopError(ErrorCode.CANDIDATE_NOT_FOUND, "no open candidate with that id")
    if is_proposal(candidate):
        task_id = candidate["task_id"]
    plan.add(Draft("candidate_dismissed", task_id, actor, {"candidate_id": candidate_id}))


def observe(plan, *, task_id, event_type, session_hash, source, char_count, actor):
    """A hash-only observation: who, which opaque id or redacted-text hash, how long; never text."""
    plan.task(task_id)
    plan.add(Draft(event_type, task_id, actor, {
        "host_session_hash": session_hash, "source": source, "char_count": char_count,
    }))

"""A synthetic year of history written straight to a ledger (sealed lines, no CLI calls).

300 tasks with 10 claims each (3,000; every 10th long-term, every 12th later replaced, every 15th
dropped), 7,300 sessions each linked to a task with a prompt observation and a Stop signal, and a
contract published every 10 sessions of a task. Deterministic in shape, not in ids (Draft picks
random ids). Importable by any build of lib/ that has Draft, seal and new_claim, so the cache
benchmark can run the same history through the previous cache format and this one.
"""
import hashlib
import os

from intent_loop.intent import claims as claims_mod
from intent_loop.storage import ledger, sealing
from intent_loop.storage import paths as paths_mod

TASKS = 300
CLAIMS_PER_TASK = 10
SESSIONS = 7300
WORDS = ("parser", "login", "redirect", "cache", "schema", "migration", "tests", "docs", "retry", "index",
         "timeline", "export", "import", "guard", "hook", "ledger", "session", "deadline", "lock", "shard")


def _ts(n):
    day, rest = divmod(n, 86400 // 30)
    return f"2026-{1 + day // 28 % 12:02d}-{1 + day % 28:02d}T{rest // 120 % 24:02d}:{rest // 2 % 60:02d}:00.000Z"


def _statement(t, c):
    words = " ".join(WORDS[(t * 7 + c * 3 + k) % len(WORDS)] for k in range(9))
    return f"keep the {words} working for task {t} rule {c}"


def session_of(n):
    return hashlib.sha256(f"bench-session-{n}".encode()).hexdigest()


def build(data_root, workspace):
    """Write the ledger; returns (ProjectPaths, [task ids], {session hash: task id})."""
    paths = paths_mod.project_paths(data_root, workspace)
    paths_mod.ensure_project_layout(paths)
    prev, lines, n = None, [], 0
    task_ids, links = [], {}

    def put(event_type, task_id, actor, payload):
        nonlocal prev, n
        n += 1
        draft = ledger.Draft(event_type, task_id, actor, dict(payload, request_fingerprint="0" * 64))
        event, line = sealing.seal(draft, project_id=paths.project_id, request_id=f"year:{n}", prev_hash=prev,
                                   occurred_at=_ts(n))
        prev = event["event_hash"]
        lines.append(line)
        return event

    active = {}
    for t in range(TASKS):
        task_id = ledger.new_uuid4()
        task_ids.append(task_id)
        source = {"kind": "user_event", "event_id": f"turn-{t}-0"}
        initial = [claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement=f"ship task {t}: " + _statement(t, 0),
                                        facets=["outcome"], scope="task", source_ref=source, valid_from=_ts(n))]
        put("task_started", task_id, "user", {"mode": "on", "label": f"task {t} {WORDS[t % len(WORDS)]}",
                                              "initial_claims": initial})
        active[task_id] = [initial[0]["claim_id"]]
        for c in range(1, CLAIMS_PER_TASK):
            scope = "long_term" if c % 10 == 5 and t % 10 == 0 else "task"
            claim = claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement="must: " + _statement(t, c),
                                         facets=["hard_constraint"], scope=scope, source_ref=source,
                                         valid_from=_ts(n))
            put("claim_added", task_id, "user", {"claim": claim})
            active[task_id].append(claim["claim_id"])
    for s in range(SESSIONS):
        task_id = task_ids[s % TASKS]
        session = session_of(s)
        links[session] = task_id
        put("session_linked", task_id, "user", {"host_session_hash": session, "action": "attach"})
        for event_type, actor, kind in (("source_observed", "user", "user_event"),
                                        ("result_signal_observed", "agent", "agent_turn")):
            put(event_type, task_id, actor, {"host_session_hash": session, "char_count": 120,
                                             "source": {"kind": kind, "event_id": f"turn-{s}"}})
        k = s // TASKS
        if k and k % 10 == 0:
            put("contract_published", task_id, "system", {
                "contract_ref": f"intent:{task_id}", "contract_version": k // 10,
                "snapshot_sha256": hashlib.sha256(f"{task_id}{k}".encode()).hexdigest()})
        if s < TASKS and s % 12 == 0:  # a replacement in some tasks
            old = active[task_id][-1]
            claim = claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement="must: " + _statement(s, 99),
                                         facets=["hard_constraint"], scope="task",
                                         source_ref={"kind": "user_event", "event_id": f"turn-{s}"},
                                         valid_from=_ts(n), supersedes=[old])
            put("claim_replaced", task_id, "user", {"claim": claim, "supersedes": [old]})
            active[task_id][-1] = claim["claim_id"]
        elif s < TASKS and s % 15 == 0:
            put("claim_invalidated", task_id, "user", {"claim_id": active[task_id].pop()})
    with open(paths.ledger, "wb") as fh:
        fh.write(b"".join(lines))
        os.fsync(fh.fileno())
    return paths, task_ids, links

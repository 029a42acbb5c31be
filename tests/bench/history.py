"""A synthetic year of project history, written as sealed ledger events in seconds.

    python3 tests/bench/history.py --events N --out DIR [--workspace PATH]

Builds `DIR/root` (an intent-loop data root) holding one project for the workspace `DIR/ws`
(or PATH) whose ledger has exactly N events, then checks it with the production verifier and
leaves the cache (checkpoint, request index) as the hooks would. Scaled to N, it holds what a
person doing 200 turns a day in one repository has after a year at 100,000 events: about 300
tasks, 3,000 claims, 2,000 linked sessions, one prompt observation and one Stop signal per
turn (each its own request, with Codex's 36-character turn ids), and a contract version
every 10 Stops.

Nothing here runs a hook or takes the lock per event: every event is sealed with the production
code (`storage.sealing.seal`, `storage.ledger.Draft`) in the payload shapes the real handlers
write (`intent/tasks.py`, `hook/handlers.py`, `guard/provider.py`, `ops/apply_commands.py`),
folded with the production reducer as it goes (a publication's digest is the real projection's),
and the whole ledger is written once. Each request looks like the one its handler appends:

    task start    task_started (2 initial claims, the session) + source_observed + contract_published
    claim prompt  claim_added + source_observed + contract_published      (`intent: must ...`)
    link prompt   session_linked (attach) + source_observed               (`intent: resume` elsewhere)
    prompt        source_observed                                          (a linked plain prompt)
    Stop          result_signal_observed [+ contract_published every 10th Stop]

A real Stop publishes only when the projection changed; here every 10th does (the issue's
"a contract version every 10 Stops"), so the digest may repeat while the version grows: the
storage cost is the same. The first event of every request carries `request_event_count`
(`storage.ledger.REQUEST_EVENT_COUNT`, the all-or-nothing marker of issue 11), as appends write it.

Other benchmarks import `build(data_root, workspace, events, session=...)`. A 100,000-event
history (83 MB) is built and verified in about 13 s on the 2-core development VM, so it is not
cached: a benchmark builds the one it changes.
"""
import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "lib") not in sys.path:
    sys.path.insert(0, str(ROOT / "lib"))

from intent_loop.base import timestamps  # noqa: E402
from intent_loop.base.canonical import sha256_hex  # noqa: E402
from intent_loop.guard import document, provider  # noqa: E402
from intent_loop.intent import claims as claims_mod  # noqa: E402
from intent_loop.intent.state import REDUCER
from intent_loop.storage import ledger, reading, sealing  # noqa: E402
from intent_loop.storage import paths as paths_mod  # noqa: E402
from intent_loop.storage.atomic import replace_atomically  # noqa: E402

YEAR_AT = 100_000  # the ledger size the shape below is a year of
TASKS_PER_YEAR, CLAIMS_PER_YEAR, SESSIONS_PER_YEAR = 300, 3_000, 2_000
STOPS_PER_VERSION = 10
INITIAL_CLAIMS = 2

# Statements as the `intent:` grammar stores them (field prefix, facets), varied per claim.
STATEMENTS = (
    ("must: keep the public API of {mod} unchanged", ["hard_constraint"]),
    ("must not: touch the database migrations under {mod}/migrations", ["hard_constraint"]),
    ("scope include: src/{mod}/", ["hard_constraint"]),
    ("scope exclude: vendor/{mod}/", ["hard_constraint"]),
    ("done when: the {mod} test suite passes on CI", ["success_signal"]),
    ("ask: before adding a dependency to {mod}", ["hard_constraint"]),
    ("Prefer small commits that each explain why {mod} changed", ["soft_constraint"]),
    ("forbid: action:network", ["hard_constraint"]),  # an action Guard 0.2.2 knows: every publication is valid
)
OUTCOME = "Fix the login redirect loop in {mod} without logging users out"  # a task's goal


def turn_id(label):
    """A Codex-style turn id (UUIDv7 layout, 36 characters), deterministic per label."""
    raw = hashlib.sha256(f"turn-{label}".encode()).hexdigest()
    return f"{raw[:8]}-{raw[8:12]}-7{raw[13:16]}-a{raw[17:20]}-{raw[20:32]}"


def session_of(index):
    """The stored session hash of synthetic session `index` (what paths.session_hash makes)."""
    return paths_mod.session_hash(f"bench-session-{index:06d}")


def request_count_field():
    """The name of issue 11's per-request event count, which every append writes."""
    return ledger.REQUEST_EVENT_COUNT


def _spread(total, parts, index):
    """The `index`th of `parts` near-equal integer shares of `total`."""
    return total * (index + 1) // parts - total * index // parts


class _Writer:
    """Seals requests in order, folds them with the production reducer, stops at exactly N events."""

    def __init__(self, paths, events, start_time):
        self.paths, self.limit = paths, events
        self.state = REDUCER.initial()
        self.prev, self.lines, self.count = None, [], 0
        self.start_time, self.step = start_time, 365 * 86400 / max(events, 1)
        self.count_field = request_count_field()
        self.stops = 0

    @property
    def room(self):
        return self.limit - self.count

    def now(self):
        return timestamps.format_utc(self.start_time + self.count * self.step)

    def request(self, request_id, fingerprint, drafts, *, publish=None):
        """Seal one request (its drafts, then with `publish` a task id, the contract_published the
        handler plans on the state those drafts produce) when it fits; False when it does not."""
        total = len(drafts) + (publish is not None)
        if not total or total > self.room:
            return False
        occurred_at = self.now()
        drafts = list(drafts)
        for index in range(total):
            draft = drafts[index] if index < len(drafts) else self.publication(publish)
            if index == 0:
                extra = {"request_fingerprint": fingerprint}
                if self.count_field:
                    extra[self.count_field] = total
                draft.payload = dict(draft.payload, **extra)
            event, line = sealing.seal(draft, project_id=self.paths.project_id, request_id=request_id,
                                       prev_hash=self.prev, occurred_at=occurred_at)
            REDUCER.apply(self.state, event)
            self.prev = event["event_hash"]
            self.lines.append(line)
            self.count += 1
        return True

    def publication(self, task_id):
        """The contract_published draft a publishing handler adds (guard/provider.py's shape)."""
        task = self.state["tasks"][task_id]
        projection = provider.projection_for(task, project_root="/work/bench-project")
        digest = document.projection_sha256(projection) if projection is not None else sha256_hex(b"none")
        version = task["published"]["version"] + 1 if task["published"] else 1
        return ledger.Draft("contract_published", task_id, "system", {
            "contract_ref": f"intent:{task_id}", "contract_version": version, "snapshot_sha256": digest,
            "source_message_refs": list(task["claim_events"])})


def _observation(task_id, session, kind, event_type, actor, turn, chars):
    return ledger.Draft(event_type, task_id, actor, {
        "host_session_hash": session, "source": {"kind": kind, "event_id": turn}, "char_count": chars})


def _claim(number, turn, now, *, outcome=False):
    text, facets = (OUTCOME, ["outcome"]) if outcome else STATEMENTS[number % len(STATEMENTS)]
    return claims_mod.new_claim(claim_id=ledger.new_uuid4(), statement=text.format(mod=f"module{number % 97}"),
                                facets=facets, scope="task", source_ref={"kind": "user_event", "event_id": turn},
                                valid_from=now)


def _prompt_id(session, turn):
    return "prompt:" + sha256_hex(f"UserPromptSubmit\0{session}\0{turn}\0bench".encode())


def _commands_fingerprint(session, text):
    return sealing.request_fingerprint("commands", {"session": session, "commands": [text]})


def _plain_turn(w, task_id, session, turn_label):
    """One turn: a prompt observation request, then a Stop request (publishing every 10th)."""
    turn = turn_id(turn_label)
    source = {"kind": "user_event", "event_id": turn}
    w.request(_prompt_id(session, turn), sealing.request_fingerprint("observe", {"source": source, "actor": "user"}),
              [_observation(task_id, session, "user_event", "source_observed", "user", turn, 120)])
    agent_source = {"kind": "agent_turn", "event_id": turn}
    w.stops += 1
    publish = task_id if w.stops % STOPS_PER_VERSION == 0 and w.room >= 2 else None
    w.request("stop:" + sha256_hex(f"Stop\0{session}\0{turn}\0{turn}".encode()),
              sealing.request_fingerprint("stop", {"source": agent_source}),
              [_observation(task_id, session, "agent_turn", "result_signal_observed", "agent", turn, 900)],
              publish=publish)


MIN_EVENTS = 3  # a task start request: every other event belongs to a task


def generate(paths, events, *, session=None, start_time=None):
    """The sealed lines (bytes) of an `events`-event history; `session` (a stored session hash)
    is linked to the newest task, so hooks run with it meet a linked task with claims."""
    if events < MIN_EVENTS:
        raise ValueError(f"a history has at least {MIN_EVENTS} events")
    w = _Writer(paths, events, time.time() - 365 * 86400 if start_time is None else start_time)
    scale = events / YEAR_AT
    n_tasks = max(1, round(TASKS_PER_YEAR * scale))
    n_claims = max(n_tasks * INITIAL_CLAIMS, round(CLAIMS_PER_YEAR * scale))
    n_sessions = max(n_tasks, round(SESSIONS_PER_YEAR * scale))
    # Events that are not plain turns: a start request (3), a claim prompt (3), a link prompt (2).
    fixed = n_tasks * 3 + (n_claims - n_tasks * INITIAL_CLAIMS) * 3 + (n_sessions - n_tasks) * 2
    turn_events = max(0, events - fixed)
    n_turns = int(turn_events / (2 + 1 / STOPS_PER_VERSION))
    session_no, claim_no, turn_no = 0, 0, 0
    for t in range(n_tasks):
        last = t == n_tasks - 1
        task_id = tasks_id(paths.project_id, t)
        sessions = [session_of(session_no + k) for k in range(_spread(n_sessions, n_tasks, t))]
        session_no += len(sessions)
        if last and session is not None:
            sessions[-1] = session  # the bench's own session: linked to the newest task last
        extra_claims = _spread(n_claims - n_tasks * INITIAL_CLAIMS, n_tasks, t)
        turns = _spread(n_turns, n_tasks, t)
        # the task's life: started, then claims, links and turns interleaved evenly
        turn = turn_id(f"start-{t}")
        now = w.now()
        initial = [_claim(claim_no + k, turn, now, outcome=k == 0) for k in range(INITIAL_CLAIMS)]
        claim_no += INITIAL_CLAIMS
        start = ledger.Draft("task_started", task_id, "user", {
            "mode": "on", "initial_claims": initial, "host_session_hash": sessions[0], "label": f"task {t}"})
        drafts = [start, _observation(task_id, sessions[0], "user_event", "source_observed", "user", turn, 80)]
        w.request(_prompt_id(sessions[0], turn), _commands_fingerprint(sessions[0], f"start {t}"), drafts,
                  publish=task_id)
        steps = (["claim"] * extra_claims + ["link"] * (len(sessions) - 1))
        plan = _interleave(steps, turns)
        current = sessions[0]
        link_index = 1
        for step in plan:
            if w.room <= 0:
                break
            if step == "turn":
                _plain_turn(w, task_id, current, f"{t}-{turn_no}")
                turn_no += 1
            elif step == "claim":
                turn = turn_id(f"claim-{claim_no}")
                claim = _claim(claim_no, turn, w.now())
                claim_no += 1
                drafts = [ledger.Draft("claim_added", task_id, "user", {"claim": claim}),
                          _observation(task_id, current, "user_event", "source_observed", "user", turn, 60)]
                w.request(_prompt_id(current, turn), _commands_fingerprint(current, claim["statement"]), drafts,
                          publish=task_id)
            else:
                current = sessions[link_index]
                link_index += 1
                turn = turn_id(f"link-{current}")
                w.request(_prompt_id(current, turn), _commands_fingerprint(current, f"resume {t}"), [
                    ledger.Draft("session_linked", task_id, "user", {"host_session_hash": current, "action": "attach"}),
                    _observation(task_id, current, "user_event", "source_observed", "user", turn, 40)])
    # what is left (rounding, and small sizes) is filled with plain prompts in the newest task
    while w.room > 0:
        turn = turn_id(f"fill-{w.count}")
        fingerprint = sealing.request_fingerprint("observe", {"source": {"kind": "user_event", "event_id": turn},
                                                              "actor": "user"})
        w.request(_prompt_id(current, turn), fingerprint,
                  [_observation(task_id, current, "user_event", "source_observed", "user", turn, 120)])
    if session is not None and w.state["sessions"].get(session) != task_id:
        raise SystemExit("history: the bench session did not end up linked to the newest task")
    return b"".join(w.lines), w.count


def tasks_id(project_id, index):
    from intent_loop.intent.tasks import derived_task_id

    return derived_task_id(project_id, f"bench-task-{index}")


def _interleave(steps, turns):
    """`turns` turns with the other steps spread evenly between them (links before the claims
    they precede, as a session resumes a task and then adds to it)."""
    if not steps:
        return ["turn"] * turns
    out, every = [], (turns + 1) / (len(steps) + 1)
    order = sorted(steps, key=lambda s: s == "claim")  # interleave claims and links alternately
    mixed = [x for pair in zip(order[: len(order) // 2], order[len(order) // 2:], strict=False) for x in pair]
    mixed += order[2 * (len(order) // 2):]
    next_at, k = every, 0
    for i in range(turns):
        while k < len(mixed) and i + 1 >= next_at:
            out.append(mixed[k])
            k += 1
            next_at += every
        out.append("turn")
    out.extend(mixed[k:])
    return out


def build(data_root, workspace, events, *, session=None, verify=True, warm_cache=True):
    """Write the history into the project of `workspace` under `data_root`; returns its paths."""
    os.makedirs(workspace, exist_ok=True)
    paths = paths_mod.project_paths(str(data_root), str(workspace))
    paths_mod.ensure_project_layout(paths)
    data, count = generate(paths, events, session=session)
    replace_atomically(paths.ledger, data)
    if verify:  # the production verifier, from the first byte
        verified = reading.verify_all(paths, REDUCER)
        if verified.count != events or verified.torn_tail:
            raise SystemExit(f"history: the verifier saw {verified.count} events, expected {events}")
    if warm_cache:
        warm(paths)
    return paths


def warm(paths, reducer=REDUCER):
    """Leave the cache as hooks leave it: a checkpoint at the end, a complete request index."""
    reading.load_verified(paths, reducer)
    from intent_loop.storage import transaction

    with transaction.Transaction(paths, reducer, deadline=time.monotonic() + 120) as tx:
        tx.find_request("bench-index-warmup")
    from intent_loop.storage import maintenance

    for _paths, job in maintenance.take_maintenance():  # the index rebuild a hook's child would run
        job(time.monotonic() + 120)
    # The daily scrub ran today, as it has on any project used daily: without the stamp every
    # measured hook's child (restored to this cache) would verify the whole chain again.
    from intent_loop.storage.cache import cache_upkeep

    with open(os.path.join(paths.cache_dir, cache_upkeep.SCRUB_STAMP), "wb"):
        pass


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--out", required=True, help="directory for root/ (and ws/ unless --workspace)")
    parser.add_argument("--workspace", help="the project's workspace path (default OUT/ws)")
    parser.add_argument("--session", help="a Codex session id to link to the newest task")
    args = parser.parse_args(argv)
    if args.events < MIN_EVENTS:
        parser.error(f"--events must be at least {MIN_EVENTS}")
    out = Path(args.out).resolve()
    workspace = Path(args.workspace).resolve() if args.workspace else out / "ws"
    started = time.perf_counter()
    session = paths_mod.session_hash(args.session) if args.session else None
    paths = build(out / "root", workspace, args.events, session=session)
    state = reading.load_verified(paths, REDUCER).state
    claims = sum(len(t["claims"]) for t in state["tasks"].values())
    versions = sum(len(t["publications"]) for t in state["tasks"].values())
    print(f"history: {args.events} events, {os.path.getsize(paths.ledger) / 1e6:.1f} MB ledger, "
          f"{len(state['tasks'])} tasks, {claims} claims, {len(state['sessions'])} linked sessions, "
          f"{versions} contract versions, marker field {request_count_field() or 'none'}; "
          f"built and verified in {time.perf_counter() - started:.1f} s")
    print(f"data root {out / 'root'}  workspace {workspace}  project {paths.project_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

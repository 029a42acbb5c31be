"""`intent-loop log`: the project's history in words, newest first, one line an event.

Read backwards from the end of the ledger as `timeline` reads it (each line verified by itself and
chained to the next), so its cost follows what it prints, not the ledger's size. Words come from
the events alone (the statements as stored, already redacted); hash-only observations collapse
into counts ("12 prompts, 11 turns").
"""
from intent_loop.cli.common import add_task_option, current_project, finish_command, load_checkpointed, pick_task
from intent_loop.errors import ErrorCode, IntentLoopError

DEFAULT_COUNT = 50
_OBSERVATIONS = {"source_observed": "prompt", "result_signal_observed": "turn"}
# The host a session ran in, kept on its link event by the hooks (base/host_process.HOSTS); a link
# written before 0.3.0, or by the command line or the MCP server, names none.
HOST_WORDS = {"codex": " in Codex", "claude-code": " in Claude Code"}


def register(subparsers):
    p = subparsers.add_parser("log", help="what happened, in words, newest first",
                              description="The newest events of the project (or of one task) in words, newest "
                                          "first, one line each: who did what, when, in which session; the "
                                          "statements as stored (redacted); hash-only observations as counts.")
    p.add_argument("-n", type=int, default=DEFAULT_COUNT, metavar="N", dest="count",
                   help=f"read the newest N events (default {DEFAULT_COUNT})")
    p.add_argument("--since", metavar="RFC3339", help="only events at or after this time")
    add_task_option(p, default="every task")
    finish_command(p, cmd_log)


def cmd_log(args, console):
    from intent_loop.cli.timeline import _Filter, _newest  # the timeline's verified backwards read

    if args.count < 0:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "-n takes a number of events, 0 or more")
    paths = current_project(console)
    args.until, args.actor, args.event_type = None, None, None
    matches = _Filter(args, None, None)  # --since is parsed before anything is read
    verified = load_checkpointed(paths)
    if args.task:
        matches.task_id = pick_task(verified.state, args.task)
    lines = list(entries(reversed(_newest(paths, verified, matches, args.count))))
    if args.json:
        console.json({"project_id": paths.project_id, "entries": lines})
        return 0
    if not lines:
        console.out("nothing happened yet in this project" if not args.task else "nothing happened in that task")
    for line in lines:
        session = f"  (session {line['session']})" if line["session"] else ""
        console.out(f"{line['when'][:19].replace('T', ' ')}  {line['what']}{session}")
    return 0


def entries(events):
    """{when, what, task, session, events} per line, newest first; runs of observations of one
    task collapse into one line of counts."""
    run = None
    for event in events:
        kind = _OBSERVATIONS.get(event["event_type"])
        if kind is not None:
            if run is not None and run["task"] == event["task_id"]:
                run["counts"][kind] = run["counts"].get(kind, 0) + 1
                run["events"] += 1
                continue
            if run is not None:
                yield _observed(run)
            run = {"when": event["occurred_at"], "task": event["task_id"], "counts": {kind: 1}, "events": 1}
            continue
        if run is not None:
            yield _observed(run)
            run = None
        what = describe(event)
        if what is not None:
            session = event["payload"].get("host_session_hash")
            yield {"when": event["occurred_at"], "what": what, "task": event["task_id"],
                   "session": session[:8] if isinstance(session, str) else None, "events": 1}
    if run is not None:
        yield _observed(run)


def _observed(run):
    parts = [f"{count} {kind}{'s' if count != 1 else ''}" for kind, count in sorted(run["counts"].items())]
    return {"when": run["when"], "what": ", ".join(parts) + f" (task {run['task'][:8]})", "task": run["task"],
            "session": None, "events": run["events"]}


def _who(event):
    return "you" if event["actor"] == "user" else "the agent" if event["actor"] == "agent" else event["actor"]


def _claim(claim):
    """`goal: Fix the login redirect loop [68af2273]`: the verb, the text as stored, the short id."""
    from intent_loop.intent.views import claim_line

    short, _sep, words = claim_line(claim).partition("] ")
    return f"{words} {short}]"


def describe(event):
    """The words for one event, or None for one that says nothing to a person (a detach)."""
    etype, payload, who, task = event["event_type"], event["payload"], _who(event), (event["task_id"] or "")[:8]
    if etype == "task_started":
        where = HOST_WORDS.get(payload.get("host"), "")
        by = "imported" if payload.get("started_by") == "import" else f"{who}{where} started"
        label = f' "{payload["label"]}"' if payload.get("label") else ""
        mode = f" ({payload['mode']})" if payload.get("mode", "on") != "on" else ""
        claims = payload.get("initial_claims", [])
        first = ", with " + "; ".join(_claim(c) for c in claims[:3]) if claims else ""
        # every claim's id, so `intent: drop` or `approve` can name it (the README sends exec users here)
        more = f" and {len(claims) - 3} more: " + " ".join(f"[{c['claim_id'][:8]}]" for c in claims[3:]) \
            if len(claims) > 3 else ""
        return f"{by} task {task}{label}{mode}{first}{more}"
    if etype == "claim_added":
        claim = payload["claim"]
        if event["actor"] == "user":
            return f"you: {_claim(claim)}"
        return f"the agent recorded {claim.get('epistemic_status', 'a claim')}: {_claim(claim)}"
    if etype == "claim_replaced":
        olds = ", ".join(f"[{c[:8]}]" for c in payload.get("supersedes", []))
        return f"{who} replaced {olds} with {_claim(payload['claim'])}"
    if etype == "claim_invalidated":
        return f"{who} dropped [{payload['claim_id'][:8]}]"
    if etype == "graph_imported":
        ids = " ".join(f"[{c['claim_id'][:8]}]" for c in payload.get("claims", []) if isinstance(c, dict)
                       and isinstance(c.get("claim_id"), str))
        return f"{who} imported {len(payload.get('claims', []))} claims into task {task}" + (f": {ids}" if ids else "")
    if etype == "proposal_added":
        return f"the agent proposed {payload['statement']} [{payload['candidate_id'][:8]}] (not your words)"
    if etype == "candidate_added":
        return f"candidate [{payload['candidate_id'][:8]}] (seen in {payload.get('task_count')} tasks): " \
               f"{payload['statement']}"
    if etype == "candidate_confirmed":
        return f"you confirmed [{payload['candidate_id'][:8]}] as {_claim(payload['claim'])}"
    if etype == "candidate_dismissed":
        return f"{who} dismissed [{payload['candidate_id'][:8]}]"
    if etype == "session_linked":
        if payload.get("action") == "detach":
            return None
        where = HOST_WORDS.get(payload.get("host"), "")
        return f"you made task {task} current (intent: resume){where}" if payload.get("current") else \
            f"a session{where} joined task {task}"
    if etype == "mode_set":
        return f"{who} turned task {task} {payload['mode']}"
    if etype == "contract_published":
        return f"Guard contract v{payload['contract_version']} published (task {task})"
    if etype == "contract_restored":
        from intent_loop.ops.receipts import restored_history

        return restored_history(payload, task)
    if etype == "contract_version_floor":
        return "recovery kept the Guard versions published before the cut: " + ", ".join(
            f"{ref[len('intent:'):][:8]} v{version}" for ref, version in sorted(payload.get("floors", {}).items()))
    from intent_loop.intent.event_types import TABLE

    row = TABLE.get(etype)  # the observations, and a type newer than this build
    return row.words if row is not None else etype.replace("_", " ")

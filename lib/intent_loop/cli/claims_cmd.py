"""Claim commands from the terminal: claim add|replace|drop, candidate list|confirm|dismiss, private|off|on.

Each mutation is a direct user action with a fresh request id `cli:<uuid>`; the Guard file is
refreshed inside the same locked transaction.
"""
import time

from intent_loop.base.timestamps import format_utc
from intent_loop.cli.common import (
    USER_ONLY,
    current_project,
    deadline,
    finish_command,
    load_state,
    pick_task,
    show_group_help,
)
from intent_loop.guard.publishing import add_publication, apply_quietly
from intent_loop.intent import private_mode, tasks
from intent_loop.intent.claim_text import build_claim
from intent_loop.intent.claim_verbs import CLAIM_VERBS, verb_for_claim
from intent_loop.intent.state import REDUCER
from intent_loop.storage.ledger import new_uuid4
from intent_loop.storage.transaction import Planned, mutate


def register(subparsers):
    p = subparsers.add_parser("claim", help="add, replace or drop a claim (as the `intent:` verbs do)",
                              description="Record what you ask for from the terminal; the same validation and "
                                          "receipts as `intent:` lines in a prompt.")
    sub = p.add_subparsers(dest="claim_command", metavar="ACTION")
    a = sub.add_parser("add", help="record a claim: VERB TEXT...",
                       description=f"VERB is one of: {', '.join(CLAIM_VERBS)}. Without a task, a goal starts one.")
    a.add_argument("verb", metavar="VERB")
    a.add_argument("text", nargs="+", metavar="TEXT")
    finish_command(a, cmd_claim_add, task=True)
    r = sub.add_parser("replace", help="replace an active claim: ID TEXT...",
                       description="Supersede the claim with a new one of the same kind.")
    r.add_argument("claim", metavar="ID")
    r.add_argument("text", nargs="+", metavar="TEXT")
    finish_command(r, cmd_claim_replace, task=True, user_only=USER_ONLY)
    d = sub.add_parser("drop", help="invalidate an active claim: ID", description="The claim stays in the history.")
    d.add_argument("claim", metavar="ID")
    finish_command(d, cmd_claim_drop, task=True, user_only=USER_ONLY)
    show_group_help(p)

    p = subparsers.add_parser("candidate", help="long-term candidates: list, confirm or dismiss",
                              description="A statement repeated in three tasks becomes a candidate; only your "
                                          "confirmation turns it into a durable claim.")
    sub = p.add_subparsers(dest="candidate_command", metavar="ACTION")
    lst = sub.add_parser("list", help="open candidates", description="Open candidates with their task counts.")
    finish_command(lst, cmd_candidate_list)
    for name, func, text in (("confirm", cmd_candidate_confirm, "make a candidate a durable claim of the task"),
                             ("dismiss", cmd_candidate_dismiss, "never propose this candidate again")):
        c = sub.add_parser(name, help=text, description=text)
        c.add_argument("candidate", metavar="ID")
        finish_command(c, func, task=True, user_only=USER_ONLY)
    show_group_help(p)

    for mode, text in (("private", "record and show nothing for the task until `on`"),
                       ("off", "switch intent-loop off for the task"),
                       ("on", "record and show the task again")):
        m = subparsers.add_parser(mode, help=text, description=f"Set the task's mode to {mode}: {text}.")
        finish_command(m, cmd_mode, task=True, mode=mode, user_only=USER_ONLY)


def _run(console, *, operation, params, step, publish=True, also=None):
    """One locked mutation: `step(plan, state) -> info dict`; returns (info, events, publication).
    `also(paths, info)` runs under the same lock after the events (a control-file change)."""
    paths = current_project(console, writes=True)
    request_id = f"cli:{new_uuid4()}"

    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(time.time()))
        info = step(the_plan, request_id)
        publication = None
        if publish and the_plan.drafts:  # the contract version goes into the same ledger write as the change
            publication = add_publication(the_plan, workspace=paths.root, env=console.env, paths=paths)
        return Planned(the_plan.drafts, detail=(info, publication))

    def after_commit(tx, mutation):
        info, publication = mutation.detail
        if also is not None:
            also(paths, info)
        return apply_quietly(publication) if mutation.events and publication is not None else None

    mutation = mutate(paths, REDUCER, request_id=request_id, operation=operation, params=params,
                      plan=plan, deadline=deadline(), after_commit=after_commit)
    return mutation.detail[0], mutation.events, mutation.committed


def _source_ref(request_id):
    return {"kind": "user_event", "event_id": request_id}


def _receipt(console, args, info, events, publication, line):
    result = dict(info, ok=True, events=[e["event_type"] for e in events], publication=publication)
    if args.json:
        console.json(result)
        return 0
    console.out(line)
    from intent_loop.ops.receipts import guard_text

    guard = guard_text(publication) if publication and publication.get("action") != "absent" else None
    if guard is not None:  # the same Guard line a prompt's receipt starts with
        console.out(guard)
    return 0


def _task_for(plan, option):
    if option:
        return tasks.resolve_task(plan.state, option)
    return pick_task(plan.state, None)


def cmd_claim_add(args, console):
    facet, scope, statement = build_claim(args.verb, " ".join(args.text))  # validate before locking
    from intent_loop.cli.main import is_agent_shell

    if is_agent_shell(console.env):
        return _propose(args, console, {"statement": statement, "facets": [facet], "scope": scope,
                                        "verb": args.verb.lower()})
    project_id = current_project(console, writes=True).project_id

    def step(plan, request_id):
        claim = tasks.user_claim(plan, statement=statement, facets=[facet], scope=scope,
                                 source_ref=_source_ref(request_id))
        if args.task or plan.state["last_change"]["task_id"] is not None:
            task_id = _task_for(plan, args.task)
            tasks.add_claim(plan, task_id=task_id, claim=claim)
            started = False
        else:
            task_id = tasks.derived_task_id(project_id, request_id)
            tasks.start_task(plan, task_id=task_id, initial_claims=[claim])
            started = True
        return {"task_id": task_id, "claim_id": claim["claim_id"], "started_task": started}

    info, events, publication = _run(console, operation="cli.claim.add",
                                     params={"verb": args.verb.lower(), "statement": statement, "task": args.task},
                                     step=step)
    from intent_loop.ops.receipts import Entry

    started = f" (started task {info['task_id'][:8]})" if info["started_task"] else f" in task {info['task_id'][:8]}"
    recorded = Entry(0, args.verb.lower(), "recorded", [info["claim_id"]]).text()  # the prompt receipt's words
    return _receipt(console, args, info, events, publication, recorded + started)


def _propose(args, console, fields):
    """`claim add` run by the agent's shell: the agent's proposal, confirmed only by the user's typing."""
    from intent_loop.intent.claims import check_proposal_text
    from intent_loop.storage.ledger import Draft
    from intent_loop.storage.paths import session_hash

    check_proposal_text(fields["statement"])  # shown whole before the user confirms it
    thread = console.env.get("CODEX_THREAD_ID")
    session = session_hash(thread) if thread else None

    def step(plan, request_id):
        linked = plan.state["sessions"].get(session) if session and not args.task else None
        task_id = linked or _task_for(plan, args.task)  # the agent's own session's task first
        proposal_id = new_uuid4()
        plan.add(Draft("proposal_added", task_id, "agent", dict(
            fields, candidate_id=proposal_id, source_ref={"kind": "agent_turn", "event_id": request_id})))
        return {"task_id": task_id, "proposal_id": proposal_id, "proposed": True}

    info, events, _publication = _run(console, operation="cli.claim.propose", params=dict(fields, task=args.task),
                                      step=step, publish=False)
    short = info["proposal_id"][:8]
    return _receipt(console, args, info, events, None,
                    f"recorded as the agent's proposal [{short}], not as the user's words (this shell is the "
                    f"agent's); the user confirms it by typing `intent: confirm {short}`")


def cmd_claim_replace(args, console):
    text = " ".join(args.text)

    def step(plan, request_id):
        task_id = _task_for(plan, args.task)
        task = plan.task(task_id)
        old_id = tasks.resolve_claim(task, args.claim)
        old = task["claims"][old_id]["claim"]
        verb = verb_for_claim(old["statement"], old["facets"], old["scope"])
        facet, scope, statement = build_claim(verb, text)
        claim = tasks.user_claim(plan, statement=statement, facets=[facet], scope=scope,
                                 source_ref=_source_ref(request_id))
        tasks.replace_claims(plan, task_id=task_id, old_ids=[old_id], claim=claim)
        return {"task_id": task_id, "claim_id": claim["claim_id"], "replaced": old_id}

    info, events, publication = _run(console, operation="cli.claim.replace",
                                     params={"claim": args.claim, "text": text, "task": args.task}, step=step)
    return _receipt(console, args, info, events, publication,
                    f"replaced [{info['replaced'][:8]}] with [{info['claim_id'][:8]}] in task {info['task_id'][:8]}")


def cmd_claim_drop(args, console):
    def step(plan, request_id):
        task_id = _task_for(plan, args.task)
        claim_id = tasks.resolve_claim(plan.task(task_id), args.claim)
        tasks.invalidate_claim(plan, task_id=task_id, claim_id=claim_id)
        return {"task_id": task_id, "claim_id": claim_id}

    info, events, publication = _run(console, operation="cli.claim.drop",
                                     params={"claim": args.claim, "task": args.task}, step=step)
    return _receipt(console, args, info, events, publication,
                    f"dropped [{info['claim_id'][:8]}] from task {info['task_id'][:8]}")


def cmd_candidate_list(args, console):
    state = load_state(current_project(console))
    rows = sorted((c for c in state["candidates"].values() if c["state"] == "open"),
                  key=lambda c: (c["seq"], c["candidate_id"]))
    rows = [{"candidate_id": c["candidate_id"], "statement": c["statement"], "facets": c["facets"],
             "task_count": c["task_count"]} for c in rows]
    if args.json:
        console.json({"candidates": rows})
        return 0
    if not rows:
        console.out("no open candidates")
    for c in rows:
        console.out(f"[{c['candidate_id'][:8]}] {c['statement']} (seen in {c['task_count']} tasks)")
    return 0


def cmd_candidate_confirm(args, console):
    def step(plan, request_id):
        candidate = tasks.resolve_candidate(plan.state, args.candidate)
        task_id = _task_for(plan, args.task)
        claim = tasks.confirm_candidate(plan, task_id=task_id, candidate_id=candidate["candidate_id"],
                                        source_ref=_source_ref(request_id))
        return {"task_id": task_id, "candidate_id": candidate["candidate_id"], "claim_id": claim["claim_id"]}

    info, events, publication = _run(console, operation="cli.candidate.confirm",
                                     params={"candidate": args.candidate, "task": args.task}, step=step)
    return _receipt(console, args, info, events, publication,
                    f"confirmed candidate [{info['candidate_id'][:8]}] as durable claim [{info['claim_id'][:8]}]")


def cmd_candidate_dismiss(args, console):
    def step(plan, request_id):
        candidate = tasks.resolve_candidate(plan.state, args.candidate)
        task_id = _task_for(plan, args.task)
        tasks.dismiss_candidate(plan, task_id=task_id, candidate_id=candidate["candidate_id"])
        return {"task_id": task_id, "candidate_id": candidate["candidate_id"]}

    info, events, publication = _run(console, operation="cli.candidate.dismiss",
                                     params={"candidate": args.candidate, "task": args.task}, step=step)
    return _receipt(console, args, info, events, publication, f"dismissed candidate [{info['candidate_id'][:8]}]")


def cmd_mode(args, console):
    def step(plan, request_id):
        task_id = _task_for(plan, args.task)
        changed = tasks.set_mode(plan, task_id=task_id, mode=args.mode)
        return {"task_id": task_id, "mode": args.mode, "changed": changed}

    def release_controls(paths, info):  # `on` for a task ends every session's private control of it
        if args.mode == "on":
            info["controls_released"] = private_mode.release_task_controls(paths, info["task_id"])

    info, events, publication = _run(console, operation="cli.mode", params={"mode": args.mode, "task": args.task},
                                     step=step, also=release_controls)
    verb = "is now" if info["changed"] else "was already"
    return _receipt(console, args, info, events, publication, f"task {info['task_id'][:8]} {verb} {args.mode}")


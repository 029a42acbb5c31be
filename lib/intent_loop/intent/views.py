"""Read-only views of a task: the full snapshot, the manual compact view and the hook view."""
import time

from intent_loop.errors import IntentLoopError
from intent_loop.intent.claim_records import (
    claim_order,
    full_record,
    hidden_summary,
    is_hook_visible,
    light_active,
    shown_active,
)
from intent_loop.intent.claim_verbs import verb_for_claim
from intent_loop.intent.claims import split_prefix
from intent_loop.intent.state import active_claims

HOOK_BUDGET = 2000
COMPACT_RECORDS = 40
COMPACT_CHARS = 6000
STALE_AFTER_DAYS = 90


# What stands for a label that is not the user's words wherever the model reads it (state.label_source).
LABEL_STAND_INS = {"import": "(imported task)", "agent": "(task started by the agent)"}


def task_label(task, *, for_user=False):
    """` "<label>"` for a label the user typed (`intent: new <label>`), else its stand-in: an
    imported graph's label or the agent's (MCP) never reaches hook context as the user's words.
    `for_user` (the CLI's own output) shows such a label too, with where it came from."""
    label = task.get("label")
    if not label:
        return ""
    by = task.get("label_by", "agent")  # unknown provenance is not the user's
    if by == "user":
        return f' "{label}"'
    stand_in = LABEL_STAND_INS.get(by, LABEL_STAND_INS["agent"])
    return f' "{label}" {stand_in}' if for_user else f" {stand_in}"


def claim_line(claim):
    """`[1a2b3c4d] must not: ...`; unprefixed statements get their verb as a label."""
    statement = claim["statement"]
    if split_prefix(statement)[0] is None:
        statement = f"{_label_for(claim)}: {statement}"
    return f"[{claim['claim_id'][:8]}] {statement}"


def _label_for(claim):
    """The verb that records such a claim, or its first facet for kinds no verb makes."""
    try:
        return verb_for_claim(claim["statement"], claim["facets"], claim["scope"])
    except IntentLoopError:
        return claim["facets"][0]


SCOPE_WORDS = {"task": "for this task", "long_term": "for every later task too"}


def proposal_text(candidate, *, session_task=None):
    """An agent's proposal as the user must read it before confirming: its id, verb, full text and
    scope (never clipped: a proposal is at most claims.MAX_PROPOSAL_CHARS), and, when the agent
    proposed it for another task than the session's, that it joins the session's task."""
    short = candidate["candidate_id"][:8]
    claim = {"claim_id": candidate["candidate_id"], "statement": candidate["statement"],
             "facets": candidate["facets"], "scope": candidate.get("scope", "long_term")}
    line = claim_line(claim).split("] ", 1)[1]  # `must: keep the API` (the verb for an unprefixed one)
    where = SCOPE_WORDS.get(claim["scope"], claim["scope"])
    if session_task is not None and candidate.get("task_id") not in (None, session_task):
        where += f"; proposed for task {candidate['task_id'][:8]}, it would join task {session_task[:8]}"
    return f"agent proposes [{short}] {line} ({where}): `intent: confirm {short}` makes it yours"


def durable_records(state, task_id, *, omitted=None):
    """Active long-term claims of the project's other tasks: durable rules carry across tasks.
    `omitted` (a dict): only those a hook may show, the others counted into it by kind without
    reading them (the root's index says which they are: intent/state_cache.py)."""
    from intent_loop.intent.state_cache import durable_kind, durable_record

    modes = state.get("modes", {})
    out = []
    for claim_id, owner in sorted(state["durable"].items()):
        if owner == task_id or modes.get(owner, "on") != "on":
            continue
        if omitted is not None:
            kind = durable_kind(state, owner, claim_id)
            if kind:
                omitted[kind] = omitted.get(kind, 0) + 1
            if kind != "":
                continue
        record = durable_record(state, owner, claim_id)
        if record is not None and record["state"] == "active" and record["claim"]["scope"] == "long_term":
            if omitted is None or is_hook_visible(record):
                out.append(record)
    out.sort(key=claim_order)
    return out


def hook_view(state, task_id, *, budget=HOOK_BUDGET, guard=None):
    """What a hook may inject: only direct user-explicit claims as text, the rest as counts. The
    claims it does not show are counted from the task's summary (intent/claim_records.py), never read.
    `guard`: the header's sentence on what Guard blocks in this session (ops.enforcement_words.enforcement_header)."""
    task = state["tasks"][task_id]
    omitted = dict(hidden_summary(task)["omitted"])
    visible = shown_active(task) + durable_records(state, task_id, omitted=omitted)
    header = (f"intent-loop: the user's own recorded intent for task {task_id[:8]}{task_label(task)}. "
              "These are the user's words from `intent:` commands; they stay in force until the user changes them, "
              "and you follow them yourself." + (f" {guard}" if guard else ""))
    lines = [header]
    footer = _omitted_line(omitted)
    candidates = ("- " + claim_line(r["claim"]) + (" (durable)" if r["claim"]["scope"] == "long_term" else "")
                  for r in visible)
    shown = _append_within(lines, candidates, used=len(header) + len(footer) + 1, limit=budget - 60)
    if shown < len(visible):
        lines.append(f"- ... {len(visible) - shown} more claims omitted; `intent-loop show` lists them")
    if footer:
        lines.append(footer)
    return "\n".join(lines)


def _append_within(lines, candidates, *, used, limit, max_lines=None):
    """Append candidate lines (each costing its length plus a newline) while the total stays within
    `limit` and fewer than `max_lines` were taken; returns how many were appended."""
    shown = 0
    for line in candidates:
        if (max_lines is not None and shown >= max_lines) or used + len(line) + 1 > limit:
            break
        lines.append(line)
        used += len(line) + 1
        shown += 1
    return shown


def _omitted_line(omitted):
    if not omitted:
        return ""
    parts = ", ".join(f"{count} {kind}" for kind, count in sorted(omitted.items()))
    return f"Not shown as text (not the user's own words): {parts}."


def is_stale(record, *, now=None):
    """An inferred long-term claim with no confirmation for 90 days is stale until reviewed."""
    claim = record["claim"]
    if claim["scope"] != "long_term" or claim["epistemic_status"] != "inferred":
        return False
    stamp = claim.get("last_confirmed") or claim.get("valid_from")
    return _age_days(stamp, now) > STALE_AFTER_DAYS


def _age_days(stamp, now):
    from intent_loop.base.timestamps import parse_epoch  # only on this rare path

    then = parse_epoch(stamp)
    if then is None:
        return 0
    return ((now if now is not None else time.time()) - then) / 86400


def snapshot(state, task_id, *, now=None):
    """The current projection: active claims by facet and status, conflicts, unknowns, sources."""
    task = state["tasks"][task_id]
    records = active_claims(task)
    grouped = {}
    for record in records:
        claim = record["claim"]
        for facet in claim["facets"]:
            grouped.setdefault(facet, {}).setdefault(claim["epistemic_status"], []).append(claim)
    return {
        "task": {k: task.get(k) for k in ("task_id", "mode", "label", "label_by", "created_at", "changed_at")},
        "active": grouped,
        "disagreements": [r["claim"] for r in records if _is_conflict(r)],
        "unknowns": [r["claim"] for r in records if r["claim"]["epistemic_status"] == "unknown"],
        "sources": sorted({_source_key(r["claim"]["source_ref"]) for r in records}),
        "stale_long_term": [r["claim"]["claim_id"] for r in records if is_stale(r, now=now)],
        "durable": [r["claim"] for r in durable_records(state, task_id)],
        "candidates": [c for c in state["candidates"].values() if c["state"] == "open"],
        "published": task.get("published"),
    }


def _is_conflict(record):
    claim = record["claim"]
    return claim["epistemic_status"] == "disputed" or "disagreement" in claim["facets"]


def _source_key(source_ref):
    return f"{source_ref['kind']}:{source_ref.get('event_id') or source_ref.get('sha256')}"


def history(task):
    """Every claim ever recorded in the task, active or not (the audit view), in ledger order."""
    records = sorted(task["claims"].values(), key=claim_order)
    return [dict(r["claim"], state=r["state"], provenance=r["provenance"]) for r in records]


def compact_view(state, task_id, *, max_records=COMPACT_RECORDS, max_chars=COMPACT_CHARS, now=None,
                 for_user=False):
    """The manual compact snapshot: deterministic, and within `max_records` claim lines and
    `max_chars` characters in all (header, count lines and stale line included).

    Conflicts (disputed claims and disagreements) come first. One that does not fit is never
    dropped silently, since a view that kept one side of a disagreement would resolve it: the
    view then says how many more disagreements there are and where they are
    (`+K more disagreements: intent-loop show --all`). `for_user`: the CLI's own output, which may
    show a label that is not the user's words with where it came from (task_label).
    """
    task = state["tasks"][task_id]
    own = light_active(task)  # chosen by their facts: only the lines printed read their words
    records = [r for r in own + durable_records(state, task_id) if not is_stale(r, now=now)]
    stale = sum(1 for r in own if is_stale(r, now=now))
    conflicts = [r for r in records if _is_conflict(r)]
    rest = [r for r in records if not _is_conflict(r)]
    header = f"task {task_id[:8]}{task_label(task, for_user=for_user)} ({task['mode']}): {len(records)} active claims"
    stale_line = f"{stale} stale long-term inferred claims left out until reviewed" if stale else None
    # Room for the lines that may follow the claims, at their longest (every count at its total),
    # so the caps hold whatever they end up saying.
    tail = [_more_conflicts(len(conflicts)) if conflicts else None, _more_rest(len(rest)) if rest else None,
            stale_line]
    reserve = sum(len(line) + 1 for line in tail if line is not None)
    lines = [header]
    limit = max_chars - reserve
    used = len(header)
    shown_conflicts = _append_within(lines, ("! " + _describe(full_record(task, r)) for r in conflicts), used=used,
                                     limit=limit, max_lines=max_records)
    used = sum(len(line) for line in lines) + len(lines) - 1
    shown = _append_within(lines, ("- " + _describe(full_record(task, r)) for r in rest), used=used, limit=limit,
                           max_lines=max_records - shown_conflicts)
    if shown_conflicts < len(conflicts):
        lines.append(_more_conflicts(len(conflicts) - shown_conflicts))
    if shown < len(rest):
        lines.append(_more_rest(len(rest) - shown))
    if stale_line:
        lines.append(stale_line)
    text = "\n".join(lines)
    # A budget below the header and count lines themselves (`show --max-chars 30`) still holds.
    return text if len(text) <= max_chars else text[:max(max_chars - 1, 0)] + "…"[:max_chars]


def _more_conflicts(count):
    return f"+{count} more disagreements: intent-loop show --all"


def _more_rest(count):
    return f"... {count} more omitted (`intent-loop show --all`)"


def _describe(record):
    claim = record["claim"]
    tags = [claim["epistemic_status"]]
    if record["provenance"] == "import":
        tags.append("imported")
    if claim["scope"] != "task":
        tags.append(claim["scope"])
    if "confidence" in claim:
        tags.append(f"confidence {claim['confidence']}")
    return f"{claim_line(claim)} ({', '.join(tags)})"

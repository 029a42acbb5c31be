"""Seed 000's views and claim rules that worked without a test (issue 14): the compact snapshot's
hard caps (conflicts included), 90-day staleness of long-term inferences, the snapshot's sections,
the 160-character excerpt limit, "at least one of event_id or sha256", and the hook's source
identity (a validated host id, else the hash of the redacted text)."""
import json

import pytest

from helpers import mcp_client
from helpers.dist import requires_dist
from helpers.mcp_client import run_hook
from intent_loop.base.canonical import sha256_hex
from intent_loop.base.timestamps import parse_epoch
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.intent import views
from intent_loop.intent.state import REDUCER
from intent_loop.redaction.redact import redact
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading

TASK = "11111111-2222-5333-8444-555555555555"
NOW = parse_epoch("2026-06-01T00:00:00.000Z")
_ids = iter(range(1, 10**6))


def _id():
    return f"00000000-0000-4000-8000-{next(_ids):012d}"


def fold(*events):
    state = REDUCER.initial()
    for event_type, payload, actor in events:
        REDUCER.apply(state, {"event_type": event_type, "task_id": TASK, "payload": payload, "actor": actor,
                              "event_id": _id(), "occurred_at": "2026-05-01T00:00:00.000Z", "request_id": _id()})
    return state


def started(*claims, label=None):
    payload = {"mode": "on", "initial_claims": list(claims)}
    if label is not None:
        payload["label"] = label
    return ("task_started", payload, "user")


def user(statement, facet="hard_constraint", **fields):
    fields.setdefault("source_ref", {"kind": "user_event", "event_id": "turn-1"})
    return claims_mod.new_claim(claim_id=_id(), statement=statement, facets=[facet], scope=fields.pop("scope", "task"),
                                valid_from=fields.pop("valid_from", "2026-05-01T00:00:00.000Z"), **fields)


def disputed(n):
    return claims_mod.new_claim(claim_id=_id(), statement=f"the user and the tests disagree about point {n:02d}: "
                                + "x" * 200, facets=["disagreement"], scope="task", role="system",
                                epistemic_status="disputed", source_ref={"kind": "tool_result", "event_id": f"t{n}"},
                                valid_from="2026-05-01T00:00:00.000Z")


def inferred(statement, *, valid_from, last_confirmed=None, scope="long_term"):
    claim = claims_mod.new_claim(claim_id=_id(), statement=statement, facets=["soft_constraint"], scope=scope,
                                 role="agent", epistemic_status="inferred", confidence=0.6,
                                 source_ref={"kind": "agent_turn", "sha256": "a" * 64}, valid_from=valid_from)
    claim["last_confirmed"] = last_confirmed
    return claim


def added(claim, actor="agent"):
    return ("claim_added", {"claim": claim}, actor)


# -- the compact view's caps --------------------------------------------------------------------
def test_fifty_disputes_stay_within_five_records_and_a_thousand_characters():
    """The issue's case: 13,005 characters before, as conflicts bypassed both caps."""
    state = fold(started(user("goal: ship the parser", "outcome")), *(added(disputed(n)) for n in range(50)),
                 added(inferred("old habit", valid_from="2025-01-01T00:00:00.000Z")))
    view = views.compact_view(state, TASK, max_records=5, max_chars=1000, now=NOW)
    lines = view.split("\n")
    assert len(view) <= 1000, len(view)
    shown = [line for line in lines if line.startswith(("! ", "- "))]
    assert 1 <= len(shown) <= 5
    conflicts = [line for line in shown if line.startswith("! ")]
    more = [line for line in lines if "more disagreements" in line]
    assert more == [f"+{50 - len(conflicts)} more disagreements: intent-loop show --all"]
    assert lines[0].startswith(f"task {TASK[:8]}") and lines[-1].startswith("1 stale long-term")
    assert ("goal: ship the parser" in view) != ("... 1 more omitted" in view)  # shown or counted


@pytest.mark.parametrize("max_records,max_chars", [(1, 200), (3, 400), (5, 1000), (40, 6000), (2, 10_000),
                                                   (40, 30), (0, 500)])
def test_every_budget_holds_with_header_and_stale_line(max_records, max_chars):
    state = fold(started(*(user(f"must: requirement {n} " + "y" * (n * 7)) for n in range(12)), label="caps"),
                 *(added(disputed(n)) for n in range(20)),
                 added(inferred("stale one", valid_from="2025-01-01T00:00:00.000Z")))
    view = views.compact_view(state, TASK, max_records=max_records, max_chars=max_chars, now=NOW)
    records = [line for line in view.split("\n") if line.startswith(("! ", "- "))]
    assert len(view) <= max_chars and len(records) <= max_records
    if max_chars < 200:  # below the fixed lines themselves: clipped, nothing more to say
        assert view.endswith("…")
        return
    conflicts = sum(1 for line in records if line.startswith("! "))
    rest = len(records) - conflicts
    if conflicts < 20:
        assert f"+{20 - conflicts} more disagreements: intent-loop show --all" in view
    if rest < 12:
        assert f"... {12 - rest} more omitted" in view
    assert "stale long-term inferred claims left out" in view


def test_conflicts_come_first_and_none_is_dropped_unsaid():
    state = fold(started(user("goal: a", "outcome")), *(added(disputed(n)) for n in range(3)))
    view = views.compact_view(state, TASK, now=NOW)
    lines = view.split("\n")
    assert [line[:2] for line in lines[1:]] == ["! ", "! ", "! ", "- "]
    assert "more disagreements" not in view


# -- staleness ----------------------------------------------------------------------------------
def test_long_term_inferences_go_stale_after_ninety_days_without_confirmation():
    fresh = inferred("fresh", valid_from="2026-04-01T00:00:00.000Z")
    old = inferred("old", valid_from="2026-02-01T00:00:00.000Z")  # 120 days before NOW
    confirmed = inferred("confirmed", valid_from="2025-01-01T00:00:00.000Z", last_confirmed="2026-05-01T00:00:00.000Z")
    task_scoped = inferred("task scoped", valid_from="2025-01-01T00:00:00.000Z", scope="task")
    explicit = user("always old rule", "soft_constraint", scope="long_term", valid_from="2025-01-01T00:00:00.000Z")
    state = fold(started(explicit), *(added(c) for c in (fresh, old, confirmed, task_scoped)))
    stale = {r["claim"]["statement"]: views.is_stale(r, now=NOW) for r in state["tasks"][TASK]["claims"].values()}
    assert stale == {"fresh": False, "old": True, "confirmed": False, "task scoped": False, "always old rule": False}
    # the boundary: 90 days is not yet stale, 91 is
    ninety = inferred("ninety", valid_from="2026-03-03T00:00:00.000Z")
    record = {"claim": ninety}
    assert not views.is_stale(record, now=parse_epoch("2026-06-01T00:00:00.000Z"))
    assert views.is_stale(record, now=parse_epoch("2026-06-02T00:00:01.000Z"))
    view = views.compact_view(state, TASK, now=NOW)
    assert "old" not in view.replace("always old rule", "") and "1 stale long-term inferred claims left out" in view
    assert views.snapshot(state, TASK, now=NOW)["stale_long_term"] == [old["claim_id"]]


# -- the snapshot's sections ----------------------------------------------------------------------
def test_the_snapshot_has_every_section():
    goal = user("ship the parser", "outcome")
    must = user("must: keep the API", source_ref={"kind": "user_event", "sha256": "b" * 64})
    unknown = claims_mod.new_claim(claim_id=_id(), statement="which database?", facets=["unknown"], scope="task",
                                   role="agent", epistemic_status="unknown",
                                   source_ref={"kind": "agent_turn", "event_id": "turn-2"},
                                   valid_from="2026-05-01T00:00:00.000Z")
    dispute = disputed(1)
    old = inferred("old", valid_from="2025-01-01T00:00:00.000Z")
    state = fold(started(goal, must, label="sections"), added(unknown), added(dispute), added(old))
    snap = views.snapshot(state, TASK, now=NOW)
    assert set(snap) == {"task", "active", "disagreements", "unknowns", "sources", "stale_long_term", "durable",
                         "candidates", "published"}
    assert snap["task"]["label"] == "sections" and snap["task"]["label_by"] == "user"
    assert [c["claim_id"] for c in snap["active"]["outcome"]["explicit"]] == [goal["claim_id"]]
    assert [c["claim_id"] for c in snap["active"]["hard_constraint"]["explicit"]] == [must["claim_id"]]
    assert [c["claim_id"] for c in snap["active"]["unknown"]["unknown"]] == [unknown["claim_id"]]
    assert [c["claim_id"] for c in snap["active"]["disagreement"]["disputed"]] == [dispute["claim_id"]]
    assert [c["claim_id"] for c in snap["active"]["soft_constraint"]["inferred"]] == [old["claim_id"]]
    assert [c["claim_id"] for c in snap["disagreements"]] == [dispute["claim_id"]]
    assert [c["claim_id"] for c in snap["unknowns"]] == [unknown["claim_id"]]
    assert snap["sources"] == sorted({"user_event:turn-1", "user_event:" + "b" * 64, "agent_turn:turn-2",
                                      "tool_result:t1", "agent_turn:" + "a" * 64})
    assert snap["stale_long_term"] == [old["claim_id"]]


def test_several_claims_of_one_event_keep_their_order():
    claims = [user(f"must: rule {n}") for n in range(12)]
    state = fold(started(*claims))
    assert [r["claim"]["claim_id"] for r in views.active_claims(state["tasks"][TASK])] == [c["claim_id"]
                                                                                          for c in claims]


# -- source references ----------------------------------------------------------------------------
def _with_source(**source_ref):
    return {"claim_id": _id(), "statement": "ship it", "role": "user", "epistemic_status": "explicit",
            "source_ref": dict(kind="user_event", **source_ref), "scope": "task",
            "valid_from": "2026-05-01T00:00:00.000Z", "last_confirmed": None, "supersedes": [],
            "facets": ["outcome"]}


def test_a_source_ref_needs_an_event_id_or_a_sha256():
    claims_mod.check_claim(_with_source(event_id="turn-1"))
    claims_mod.check_claim(_with_source(sha256="c" * 64))
    claims_mod.check_claim(_with_source(event_id="turn-1", sha256="c" * 64))
    for bad in ({}, {"excerpt": "only an excerpt"}, {"event_id": None, "sha256": None}):
        with pytest.raises(IntentLoopError) as info:
            claims_mod.check_claim(_with_source(**bad))
        assert info.value.code == ErrorCode.INVALID_CLAIM


def test_an_excerpt_is_at_most_160_characters():
    assert claims_mod.MAX_EXCERPT == 160
    claims_mod.check_claim(_with_source(event_id="turn-1", excerpt="e" * 160))
    with pytest.raises(IntentLoopError) as info:
        claims_mod.check_claim(_with_source(event_id="turn-1", excerpt="e" * 161))
    assert info.value.code == ErrorCode.INVALID_CLAIM and "160" in info.value.message


# -- the hook's source identity (built binaries) --------------------------------------------------
env = mcp_client.env
ws = mcp_client.ws


def _ledger_events(env, ws):
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    reading.verify_all(project, REDUCER)
    with open(project.ledger, "rb") as fh:
        return [json.loads(line) for line in fh.read().splitlines()]


@requires_dist
@pytest.mark.parametrize("turn_id,kept", [
    ("019b-turn-7", True),                       # a valid opaque host id is the identity
    ("turn with spaces", False),                 # not an opaque id: the redacted text's hash
    ("x" * 201, False),                          # too long to be one
    ("ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", False),  # holds a credential: never stored
])
def test_the_source_of_a_typed_claim_is_the_host_id_or_the_redacted_texts_hash(env, ws, turn_id, kept):
    prompt = "intent: goal ship the parser\nmy token is ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    run_hook("UserPromptSubmit", env, cwd=ws, session_id="019b0000-0000-7000-8000-00000000b001", prompt=prompt,
             turn_id=turn_id)
    events = _ledger_events(env, ws)
    [start] = [e for e in events if e["event_type"] == "task_started"]
    [observed] = [e for e in events if e["event_type"] == "source_observed"]
    expected = ({"kind": "user_event", "event_id": turn_id} if kept else
                {"kind": "user_event", "sha256": sha256_hex(redact(prompt).encode("utf-8"))})
    assert start["payload"]["initial_claims"][0]["source_ref"] == expected
    assert observed["payload"]["source"] == expected
    raw = b"".join(json.dumps(e).encode() for e in events)
    assert b"Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2" not in raw and (kept or turn_id.encode() not in raw)

"""Every event type the ledger holds, in one table: where its claims are, whose words they become,
whether it changes what the user asked for (and so which task is current and what Guard
publishes), what deleting a claim does to it, and how the timeline words it.

A new event type is one row here, then the places the table's test names
(tests/intent/test_event_types.py): the reducer's `_on_<type>` handler (intent/state.py), the words of
`intent-loop history` (cli/history.py), what an MCP write returns for it (mcp/results.py) and
`docs/storage.md`. The other readers derive their sets from this table.
"""


# The agent's own events (the MCP server's: starts, proposals, evidence, inferences, unknowns,
# disputes, imports, mode changes) never pick the default task, so they never move which task
# Guard publishes nor withdraw its file: only what the user typed does (issue 13's safety rule).
AGENT_ACTOR = "agent"
MAX_CLAIM_EVENT_REFS = 20  # the claim-changing event ids a task keeps (the Guard document's source refs)


class EventType:
    """One row. `claims`: the payload field holding the claims it adds ("claim" one claim, the
    others a list), None for none. `provenance`: whose words those claims are ("direct" typed,
    "candidate" a confirmed proposal or candidate, "import" a file's). `changes_intent`: a user's
    event of this type makes its task the current one (the agent's never do: state.AGENT_ACTOR).
    `republishes`: a command plan holding one rewrites the Guard file. `on_claim_deletion`: what
    `intent-loop delete --claim` does to such an event (ops/ledger_rewrite.py): "dropped" (the
    event goes when it names the claim), "rewritten" (the claim leaves its payload, or the event
    becomes another type), "kept". `words`: what the timeline says it is."""

    __slots__ = ("name", "claims", "provenance", "changes_intent", "republishes", "on_claim_deletion", "words")

    def __init__(self, name, *, claims=None, provenance=None, changes_intent=False, republishes=False,
                 on_claim_deletion="kept", words):
        self.name, self.claims, self.provenance = name, claims, provenance
        self.changes_intent, self.republishes = changes_intent, republishes
        self.on_claim_deletion, self.words = on_claim_deletion, words


TABLE = {t.name: t for t in (
    EventType("task_started", claims="initial_claims", provenance="direct", changes_intent=True, republishes=True,
              on_claim_deletion="rewritten", words="a task began, with its first claims"),
    EventType("session_linked", republishes=True, words="a session joined, left or resumed a task"),
    EventType("mode_set", changes_intent=True, republishes=True, words="a task turned on, off or private"),
    EventType("claim_added", claims="claim", provenance="direct", changes_intent=True, republishes=True,
              on_claim_deletion="dropped", words="a claim was recorded"),
    EventType("claim_replaced", claims="claim", provenance="direct", changes_intent=True, republishes=True,
              on_claim_deletion="rewritten", words="a claim replaced others"),
    EventType("claim_invalidated", changes_intent=True, republishes=True, on_claim_deletion="dropped",
              words="a claim was dropped"),
    EventType("graph_imported", claims="claims", provenance="import", changes_intent=True,
              on_claim_deletion="rewritten", words="a graph file's claims were imported"),
    EventType("candidate_added", words="a statement seen in three tasks became a candidate"),
    EventType("proposal_added", words="the agent proposed a claim for the user to confirm"),
    EventType("candidate_confirmed", claims="claim", provenance="candidate", changes_intent=True, republishes=True,
              on_claim_deletion="rewritten", words="the user confirmed a candidate or proposal"),
    EventType("candidate_dismissed", words="a candidate or proposal was dismissed"),
    EventType("source_observed", words="a prompt was observed (its hash and length only)"),
    EventType("result_signal_observed", words="a turn's end was observed (its hash and length only)"),
    EventType("contract_published", words="a Guard contract version was published"),
    EventType("contract_version_floor", words="recovery kept the Guard versions published before a cut"),
    EventType("contract_restored", words="a Guard file changed outside intent-loop was put back"),
)}

# Derived sets, for the readers that ask one question of every event.
CLAIM_SOURCES = {t.name: (t.claims, t.provenance) for t in TABLE.values() if t.claims is not None}
CHANGES_INTENT = frozenset(t.name for t in TABLE.values() if t.changes_intent)
REPUBLISHES = frozenset(t.name for t in TABLE.values() if t.republishes)


def label_source(event):
    """Who wrote the label of this `task_started` event, from the event alone (its actor, payload
    and request id), so a cache-backed state derives it exactly as a fold does while the cache
    keeps only the label's ledger position (intent/state_cache.py).

    "import": the label of an imported graph (`started_by: "import"`; ledgers written before that
    marker: the `import:` request id). "agent": the agent's (actor agent, or any `started_by`
    other than import, such as the MCP server's "mcp"). "user": what is left, a start of actor user
    with no `started_by`, which only `intent: new <label>` typed in a prompt writes.
    """
    payload = event["payload"]
    request_id = event.get("request_id")
    if payload.get("started_by") == "import" or (isinstance(request_id, str) and request_id.startswith("import:")):
        return "import"
    if event["actor"] == "user" and payload.get("started_by") is None:
        return "user"
    return "agent"

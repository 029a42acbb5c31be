"""A cache-backed task's claims, split by what a hook may show, so the hook paths never read the rest.

Issue 23: one import of 2,000 claims made every hook read and re-check 2,000 claims (and their
0.7 MiB ledger line) to say "2000 imported", and every prompt with a command copy them twice.
The views are capped, so the cost is now set by what they show:

- the task's shard (`t-<task_id>`) holds the rows of its *shown* claims, the ones a hook may
  show as text (state.is_hook_visible: the user's own typing, or a proposal the user confirmed),
  and a summary of the rest: `{"count", "omitted": {kind: active count}, "agent": active count}`;
- the *hidden* claims (imports, the agent's inferences and evidence, unknowns, disputes) sit in
  a second shard, `h-<task_id>`, read only by what needs them (`show`, export, history, a drop by
  id, the MCP reads, a plan that ends one). Its rows also carry each claim's *facts* (provenance,
  actor, role, status, source kind, scope, facets, dates, confidence), so `show` picks the 40
  lines it prints without reading the words of the other claims.

What stays true of the cache (state_cache.py): the words come only from verified ledger lines.
A shown row is resolved when its shard loads and must be a claim a hook may show; a hidden row
is resolved when something reads its words, and its facts must then be the event's own, and it
must not be one a hook may show (a cache that moved a claim across is damaged: the state is
folded from the ledger). Facts and the summary only choose and count, like the lifecycle the
cache already keeps: a damaged one can hide a claim or miscount, never put words in anyone's mouth.
"""
from intent_loop.intent.claims import is_direct_user_explicit

# A hidden row's facts: [provenance, actor, role, status, source kind, scope, facets, valid_from,
# last_confirmed, confidence]
PROVENANCES = ("direct", "candidate", "import")


def claim_order(record):
    """Ledger order: by event, then by place in the event (a task started with several typed claims
    lists them in `initial_claims`, an import in `claims`), the claim id breaking any tie."""
    return record["seq"], record.get("index", 0), record["claim"]["claim_id"]


def is_hook_visible(record):
    """Only direct user-explicit claims may become text the model sees."""
    return record["provenance"] in ("direct", "candidate") and is_direct_user_explicit(record["claim"])


def omitted_kind(record):
    """How a hook counts a claim it does not show: "imported", else its epistemic status."""
    if record["provenance"] == "import":
        return "imported"
    return record["claim"]["epistemic_status"]


def facts_of(record):
    """The facts a hidden row keeps beside its position (what choosing and counting read)."""
    claim = record["claim"]
    return [record["provenance"], record["actor"], claim["role"], claim["epistemic_status"],
            claim["source_ref"]["kind"], claim["scope"], claim["facets"], claim.get("valid_from"),
            claim.get("last_confirmed"), claim.get("confidence")]


def row_of(record):
    return [record["state"], record["seq"], record["ended_by"], record["at"]]


def summary_of(records):
    """What the shown shard says of the hidden claims: their number and the active ones by kind."""
    omitted, agent = {}, 0
    for record in records:
        if record["state"] == "active":
            kind = omitted_kind(record)
            omitted[kind] = omitted.get(kind, 0) + 1
            agent += record["actor"] == "agent"
    return {"count": len(records), "omitted": omitted, "agent": agent}


def light_record(claim_id, row):
    """A hidden claim as its row and facts tell it, without its words (claim["statement"] and the
    source's ids are absent, so no caller can mistake it for the claim); ValueError on a bad row."""
    state, seq, ended_by, at, facts = row
    (provenance, actor, role, status, source_kind, scope, facets, valid_from, last_confirmed,
     confidence) = facts
    # one test per field, no generators: `show` builds one of these per hidden claim
    if not (provenance in PROVENANCES and type(actor) is str and type(role) is str and type(status) is str
            and type(source_kind) is str and type(scope) is str and type(facets) is list
            and (valid_from is None or type(valid_from) is str)
            and (last_confirmed is None or type(last_confirmed) is str)
            and (confidence is None or type(confidence) in (int, float))):
        raise ValueError("facts")
    for facet in facets:
        if type(facet) is not str:
            raise ValueError("facts")
    claim = {"claim_id": claim_id, "role": role, "epistemic_status": status, "source_ref": {"kind": source_kind},
             "scope": scope, "facets": facets, "valid_from": valid_from, "last_confirmed": last_confirmed}
    if confidence is not None:
        claim["confidence"] = confidence
    record = {"claim": claim, "state": state, "seq": seq, "event_id": at[2], "provenance": provenance,
              "ended_by": ended_by, "actor": actor, "at": at}
    if len(at) == 5:
        record["index"] = at[4]
    return record


class Refolded(Exception):
    """A hidden row or shard failed its check: `claims` is the task's claims as the ledger's fold
    has them (the source recovered the whole state), to be taken instead of the hidden rows."""

    def __init__(self, claims):
        super().__init__("refolded")
        self.claims = claims


class DerivedViews:
    """keys, values, items and the plain dict canonical JSON writes, derived from __iter__ and
    __getitem__: the part of the mapping protocol ClaimRecords and the plan's Overlay
    (intent/plan_copy.py) share. Written by hand, as collections.abc is not loaded on the hooks'
    path (tests/base/test_fast_os.py)."""

    def keys(self):
        return list(self)

    def values(self):
        return [self[k] for k in self]

    def items(self):
        return [(k, self[k]) for k in self]

    def __json__(self):
        return dict(self.items())


class ClaimRecords(DerivedViews):
    """`task["claims"]` of a cache-backed task: the mapping every consumer uses, loading the hidden
    shard only when a caller asks for a claim it does not hold or for all of them.

    `shown`: {claim_id: record} already resolved. `summary`: the hidden claims' summary, None for a
    task with none. `load_hidden()`: ({claim_id: row}, {claim_id: light record}) of the hidden
    shard, each row checked by building its light record. `resolve(claim_id, row)`:
    the full record of one hidden row, checked against its ledger line. Either raises Refolded
    after a failed check.
    """

    def __init__(self, shown, summary, *, load_hidden, resolve):
        self._items = shown  # full records: the shown ones, hidden ones resolved since, new ones
        self._summary = summary
        self.stored_summary = summary  # as the shard said it (the scrub compares it with the fold's)
        self._load_hidden = load_hidden
        self._resolve = resolve
        self._rows = None  # {claim_id: row} of the hidden shard not resolved yet, once it is read
        self._light = {}  # claim_id -> the light record of each row in _rows

    # -- the hidden shard ---------------------------------------------------------------------
    @property
    def hidden_loaded(self):
        return self._rows is not None or self._summary is None

    def _hidden(self):
        if self._rows is None:
            try:
                rows, light = ({}, {}) if self._summary is None else self._load_hidden()
            except Refolded as refolded:
                self._adopt(refolded.claims)
            else:
                self._rows = {k: v for k, v in rows.items() if k not in self._items}
                self._light = light
        return self._rows

    def _adopt(self, claims):
        """Take the fold's records of every claim not resolved yet (the rows failed a check)."""
        self._rows, self._light = {}, {}
        for claim_id, record in claims.items():
            self._items.setdefault(claim_id, record)

    def _take(self, claim_id):
        """The full record of `claim_id` (resolving a hidden row), or None."""
        record = self._items.get(claim_id)
        if record is None and claim_id in self._hidden():
            row = self._rows.pop(claim_id)
            self._light.pop(claim_id, None)
            try:
                record = self._items[claim_id] = self._resolve(claim_id, row)
            except Refolded as refolded:
                self._adopt(refolded.claims)
                record = self._items.get(claim_id)
        return record

    # -- what the views read without the hidden claims' words ---------------------------------
    def shown_records(self):
        """The records a hook may show (a hidden one resolved since is not among them)."""
        return [r for r in self._items.values() if is_hook_visible(r)]

    def hidden_summary(self):
        if not self.hidden_loaded:
            return self._summary
        return summary_of([r for r in self._items.values() if not is_hook_visible(r)] + self.light_records(hidden=True))

    def light_records(self, *, hidden=False):
        """Every record (hidden=True: only the unresolved hidden ones), a hidden claim not resolved
        yet as its light record: for choosing and counting, never for words."""
        light = [self._light[claim_id] for claim_id in self._hidden()]
        return light if hidden else list(self._items.values()) + light

    def encoded(self):
        """(rows of the shown claims, {claim_id: hidden row} or None when the hidden shard is
        unchanged, the summary): what the task's two shards hold."""
        shown, hidden, hidden_records = {}, {}, []
        for claim_id, record in self._items.items():
            if record.get("at") is None:
                raise ValueError("a text without its ledger position cannot be cached")
            if is_hook_visible(record):
                shown[claim_id] = row_of(record)
            else:
                hidden[claim_id] = row_of(record) + [facts_of(record)]
                hidden_records.append(record)
        if not self.hidden_loaded:
            if hidden:  # only _take puts a hidden record in _items, and it reads the shard first
                raise ValueError("hidden claims changed without their shard")
            return shown, None, self._summary
        hidden.update(self._rows or {})
        summary = summary_of(hidden_records + self.light_records(hidden=True)) if hidden else None
        return shown, hidden, summary

    # -- the mapping protocol -----------------------------------------------------------------
    def __getitem__(self, claim_id):
        record = self._take(claim_id)
        if record is None:
            raise KeyError(claim_id)
        return record

    def get(self, claim_id, default=None):
        record = self._take(claim_id)
        return default if record is None else record

    def __contains__(self, claim_id):
        return claim_id in self._items or claim_id in self._hidden()

    def __setitem__(self, claim_id, record):
        if not is_hook_visible(record):
            self._hidden()  # its summary is counted again, from the whole hidden shard
        self._items[claim_id] = record
        if self._rows is not None:
            self._rows.pop(claim_id, None)
            self._light.pop(claim_id, None)

    def __delitem__(self, claim_id):
        if self._take(claim_id) is None:
            raise KeyError(claim_id)
        del self._items[claim_id]

    def pop(self, claim_id, *default):
        record = self._take(claim_id)
        if record is None:
            if default:
                return default[0]
            raise KeyError(claim_id)
        del self._items[claim_id]
        return record

    def __iter__(self):
        return iter(list(self._items) + list(self._hidden()))

    def __len__(self):
        if not self.hidden_loaded:
            return len(self._items) + self._summary["count"]
        return len(self._items) + len(self._hidden())

    def __bool__(self):
        return bool(self._items) or (self._summary is not None and self._summary["count"] > 0)

    def __eq__(self, other):
        if isinstance(other, (ClaimRecords, dict)):
            return dict(self.items()) == dict(other.items())
        return NotImplemented

    __hash__ = None

    def copy(self, deep):
        """A plan's copy: its resolved records copied with `deep`, the rows shared (never changed in place)."""
        out = ClaimRecords({k: deep(v) for k, v in self._items.items()}, self._summary,
                           load_hidden=self._load_hidden, resolve=self._resolve)
        out.stored_summary = self.stored_summary
        if self._rows is not None:
            out._rows = dict(self._rows)
            out._light = dict(self._light)
        return out

    def __repr__(self):
        return f"ClaimRecords({len(self._items)} resolved, summary {self._summary})"


# -- the readers' side: the same answers for a folded task (plain dict) and a cache-backed one ----
def shown_active(task):
    """Active claims a hook may show as text, in ledger order (no hidden claim is read)."""
    claims = task["claims"]
    records = claims.shown_records() if isinstance(claims, ClaimRecords) else claims.values()
    out = [r for r in records if r["state"] == "active" and is_hook_visible(r)]
    out.sort(key=claim_order)
    return out


def hidden_summary(task):
    """{"count", "omitted": {kind: active count}, "agent": active count} of the claims a hook does not show."""
    claims = task["claims"]
    if isinstance(claims, ClaimRecords):
        return claims.hidden_summary() or {"count": 0, "omitted": {}, "agent": 0}
    return summary_of([r for r in claims.values() if not is_hook_visible(r)])


def light_records(task):
    """Every claim record of the task, the hidden ones not resolved yet as light records."""
    claims = task["claims"]
    return claims.light_records() if isinstance(claims, ClaimRecords) else list(claims.values())


def light_active(task):
    """Every active claim in ledger order, the hidden ones not resolved yet as light records
    (no words: resolve with task["claims"][claim_id] before showing one)."""
    claims = task["claims"]
    records = claims.light_records() if isinstance(claims, ClaimRecords) else claims.values()
    out = [r for r in records if r["state"] == "active"]
    out.sort(key=claim_order)
    return out


def full_record(task, record):
    """The full record of a light one (light_record), its words read from the ledger now."""
    if "statement" in record["claim"]:
        return record
    return task["claims"][record["claim"]["claim_id"]]


def active_count(task):
    """How many claims of the task are active, the hidden ones counted from the summary."""
    return len(shown_active(task)) + sum(hidden_summary(task)["omitted"].values())


def has_active(task):
    return active_count(task) > 0

"""The portable graph document: its format, version and limits, and every rule a document must meet.

Document (canonical JSON plus LF):

    {"format": "intent-loop-graph", "version": 1, "exported_at": RFC3339 UTC,
     "task": {"task_id", "label", "mode", "created_at"},
     "claims": [<claim fields> + {"state": active|superseded|invalidated, "provenance": ...}, ...]}

Claims are listed in ledger order; each keeps its `supersedes` list. `validate` reports every
problem at once: bounded size (<= 1 MiB, <= 2,000 claims), RFC 3339 UTC timestamps with `Z`, unique
claim ids, reference integrity (every `supersedes` id is a claim of the graph; a claim is
`superseded` exactly when another claim supersedes it), acyclic and time-ordered supersession (a
claim never supersedes one that is valid later than itself), legal role/status/confidence/scope/facets
(`claims.check_claim`), and redacted single-line statements of 1-500 characters.
"""
from intent_loop.base.timestamps import utc_sort_key
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims as claims_mod
from intent_loop.redaction.redact import redact
from intent_loop.storage.cache.bulk_verify import loads  # orjson, the stdlib where orjson refuses; never RecursionError

FORMAT = "intent-loop-graph"
VERSION = 1
MAX_BYTES = 1 << 20
MAX_CLAIMS = 2000
STATES = ("active", "superseded", "invalidated")
PROVENANCES = ("direct", "import", "candidate")
TOP_KEYS = frozenset(("format", "version", "exported_at", "task", "claims"))
TASK_KEYS = frozenset(("task_id", "label", "mode", "created_at"))
ENTRY_EXTRA_KEYS = frozenset(("state", "provenance"))
IMPORT_SOURCE_KIND = "explicit_import"


def _describe_id(value):
    return repr(value)[:60]


class _Checker:
    def __init__(self):
        self.problems = []

    def add(self, where, why):
        self.problems.append(f"{where}: {why}")


def validate(data):
    """(doc, problems): the parsed graph and every problem found (empty when importable)."""
    check = _Checker()
    if len(data) > MAX_BYTES:
        check.add("graph", f"{len(data)} bytes; at most {MAX_BYTES} bytes are imported")
        return None, check.problems
    try:
        doc = loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        check.add("graph", f"not valid UTF-8 JSON ({exc})")
        return None, check.problems
    if not isinstance(doc, dict):
        check.add("graph", "not a JSON object")
        return None, check.problems
    for key in sorted(set(doc) - TOP_KEYS):
        check.add("graph", f"unknown field {_describe_id(key)}")
    if doc.get("format") != FORMAT:
        check.add("format", f"must be {FORMAT!r}")
    if type(doc.get("version")) is not int or doc.get("version") != VERSION:
        check.add("version", f"must be {VERSION} (this intent-loop reads graph version {VERSION} only)")
    if utc_sort_key(doc.get("exported_at")) is None:
        check.add("exported_at", "must be an RFC 3339 UTC timestamp ending in Z")
    _check_task(check, doc.get("task"))
    claims = doc.get("claims")
    if not isinstance(claims, list):
        check.add("claims", "must be a list")
        return doc, check.problems
    if len(claims) > MAX_CLAIMS:
        check.add("claims", f"{len(claims)} claims; at most {MAX_CLAIMS} are imported")
        return doc, check.problems
    _check_claims(check, claims)
    return doc, check.problems


def _check_task(check, task):
    if not isinstance(task, dict):
        check.add("task", "must be an object with task_id, label, mode and created_at")
        return
    for key in sorted(set(task) - TASK_KEYS):
        check.add("task", f"unknown field {_describe_id(key)}")
    if not claims_mod.is_opaque_id(task.get("task_id")):
        check.add("task.task_id", "must be an opaque id of 1-200 printable characters")
    label = task.get("label")
    if label is not None:
        if not isinstance(label, str) or not label.strip() or claims_mod.has_line_break(label) \
                or len(redact(label)) > claims_mod.MAX_LABEL:
            check.add("task.label", f"must be null or one line of 1-{claims_mod.MAX_LABEL} characters")
        elif any(ch in claims_mod.UNSAFE_CHARACTERS for ch in label):
            check.add("task.label", "must not hold control or bidi characters")
    if task.get("mode") not in ("on", "off", "private"):
        check.add("task.mode", "must be on, off or private")
    if utc_sort_key(task.get("created_at")) is None:
        check.add("task.created_at", "must be an RFC 3339 UTC timestamp ending in Z")


def _legality_probe(entry):
    """The claim with a neutral source_ref, so check_claim judges role/status/confidence/fields only."""
    claim = {k: v for k, v in entry.items() if k not in ENTRY_EXTRA_KEYS}
    status = claim.get("epistemic_status")
    claim["source_ref"] = {"kind": "user_event" if status == "explicit" else IMPORT_SOURCE_KIND, "sha256": "0" * 64}
    if isinstance(claim.get("statement"), str):
        claim["statement"] = redact(claim["statement"])
    return claim


def _check_claims(check, claims):
    ids, times, supersedes, states = {}, {}, {}, {}
    for index, entry in enumerate(claims):
        where = f"claims[{index}]"
        if not isinstance(entry, dict):
            check.add(where, "must be an object")
            continue
        cid = entry.get("claim_id")
        if not claims_mod.is_opaque_id(cid):
            check.add(where, "claim_id must be an opaque id of 1-200 printable characters")
            cid = None
        elif cid in ids:
            check.add(where, f"duplicate claim_id {_describe_id(cid)} (also claims[{ids[cid]}])")
            cid = None
        else:
            ids[cid] = index
        for key in sorted(set(entry) - claims_mod.CLAIM_KEYS - ENTRY_EXTRA_KEYS):
            check.add(where, f"unknown field {_describe_id(key)}")
        statement = entry.get("statement")
        if isinstance(statement, str):
            try:
                claims_mod.check_statement(redact(statement))
            except IntentLoopError as exc:
                check.add(where, f"statement: {exc.message}")
        probe = _legality_probe(entry)
        try:
            claims_mod.check_claim(probe)
        except IntentLoopError as exc:
            if exc.code != ErrorCode.INVALID_STATEMENT:  # reported above
                check.add(where, exc.message)
        if "source_ref" in entry and not isinstance(entry["source_ref"], dict):
            check.add(where, "source_ref must be an object")
        valid_from = utc_sort_key(entry.get("valid_from"))
        if valid_from is None:
            check.add(where, "valid_from must be an RFC 3339 UTC timestamp ending in Z")
        if entry.get("last_confirmed") is not None and utc_sort_key(entry.get("last_confirmed")) is None:
            check.add(where, "last_confirmed must be null or an RFC 3339 UTC timestamp ending in Z")
        if entry.get("state") not in STATES:
            check.add(where, f"state must be one of {', '.join(STATES)}")
        if entry.get("provenance") is not None and entry.get("provenance") not in PROVENANCES:
            check.add(where, f"provenance must be one of {', '.join(PROVENANCES)}")
        sup = entry.get("supersedes", [])
        if not isinstance(sup, list) or not all(isinstance(s, str) for s in sup):
            sup = []
        elif len(set(sup)) != len(sup):
            check.add(where, "supersedes names a claim twice")
        if cid is not None:
            times[cid] = valid_from
            supersedes[cid] = list(dict.fromkeys(sup))
            states[cid] = entry.get("state")
    _check_supersession(check, ids, times, supersedes, states)


def _check_supersession(check, ids, times, supersedes, states):
    superseded_by = {}
    for cid, olds in supersedes.items():
        where = f"claims[{ids[cid]}]"
        for old in olds:
            if old == cid:
                check.add(where, "a claim cannot supersede itself")
            elif old not in ids:
                check.add(where, f"supersedes {_describe_id(old)}, which is not a claim of this graph")
            else:
                superseded_by.setdefault(old, []).append(cid)
                if times.get(cid) is not None and times.get(old) is not None and times[old] > times[cid]:
                    check.add(where, f"supersedes {_describe_id(old)}, which is valid later than this claim "
                                     "(supersession goes back in time)")
    for cid, state in states.items():
        named = cid in superseded_by
        if state == "superseded" and not named:
            check.add(f"claims[{ids[cid]}]", "state is superseded but no claim of the graph supersedes it")
        elif named and state in ("active", "invalidated"):
            check.add(f"claims[{ids[cid]}]", f"state is {state} but claims[{ids[superseded_by[cid][0]]}] supersedes it")
    # cycles: iterative depth-first search with colours
    colour = {}
    for start in supersedes:
        if colour.get(start):
            continue
        stack = [(start, iter(supersedes[start]))]
        colour[start] = 1
        while stack:
            node, children = stack[-1]
            advanced = False
            for child in children:
                if child not in supersedes or child == node:
                    continue
                if colour.get(child) == 1:
                    check.add(f"claims[{ids[child]}]", "supersession is cyclic")
                    continue
                if not colour.get(child):
                    colour[child] = 1
                    stack.append((child, iter(supersedes[child])))
                    advanced = True
                    break
            if not advanced:
                colour[node] = 2
                stack.pop()

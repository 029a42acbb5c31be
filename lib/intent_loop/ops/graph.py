"""Export a task as a portable, versioned graph, and import such a graph as explicit_import evidence.

Export document (canonical JSON plus LF):

    {"format": "intent-loop-graph", "version": 1, "exported_at": RFC3339 UTC,
     "task": {"task_id", "label", "mode", "created_at"},
     "claims": [<claim fields> + {"state": active|superseded|invalidated, "provenance": ...}, ...]}

Claims are listed in ledger order; each keeps its `supersedes` list. Candidates are project-level
and never exported.

Import validates everything first and writes nothing when any problem is found (IMPORT_INVALID
with the full list in `details["problems"]`): bounded size (<= 1 MiB, <= 2,000 claims), RFC 3339
UTC timestamps with `Z`, unique claim ids, reference integrity (every `supersedes` id is a claim of
the graph; a claim is `superseded` exactly when another claim supersedes it), acyclic and
time-ordered supersession (a claim never supersedes one that is valid later than itself), legal
role/status/confidence/scope/facets (`claims.check_claim`), and redacted single-line statements of
1-500 characters. Accepted claims get fresh UUIDs and `source_ref = {"kind": "explicit_import",
"sha256": ...}` where the hash covers the graph's digest, the original claim id and the original
source_ref, so source identities survive only inside that hash.

Mapping decision: an `explicit`/`user` claim requires a direct user event, which an import never is,
so it is imported as `evidence`/`evidence` (the text is kept: it is evidence of what the user said
elsewhere). Every other legal pair (inferred with its confidence, evidence, unknown, disputed) keeps
its role and status. The reducer marks every imported record with provenance "import", so none of
them is ever hook-visible or part of the Guard projection.
"""
import os
import time

from intent_loop.intent import claims as claims_mod
from intent_loop.storage.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage.ledger import Draft, new_uuid4
from intent_loop.storage.timestamps import format_utc, utc_sort_key
from intent_loop.storage.transaction import Planned, mutate
from intent_loop.redact import redact

FORMAT = "intent-loop-graph"
VERSION = 1
MAX_BYTES = 1 << 20
MAX_CLAIMS = 2000
MAX_LABEL = 80
STATES = ("active", "superseded", "invalidated")
PROVENANCES = ("direct", "import", "candidate")
TOP_KEYS = frozenset(("format", "version", "exported_at", "task", "claims"))
TASK_KEYS = frozenset(("task_id", "label", "mode", "created_at"))
ENTRY_EXTRA_KEYS = frozenset(("state", "provenance"))
IMPORT_SOURCE_KIND = "explicit_import"


# -- export ------------------------------------------------------------------------------------
def export_graph(state, task_id, *, now=time.time):
    """The graph document (a dict) of one task of `state`."""
    task = state["tasks"].get(task_id)
    if task is None:
        raise IntentLoopError(ErrorCode.TASK_NOT_FOUND, f"no task {task_id} in this project; see `intent-loop status`")
    if task["mode"] == "off":
        raise IntentLoopError(ErrorCode.TASK_OFF, "this task is off; `intent-loop on --task ID` re-enables it first")
    if task["mode"] == "private":
        raise IntentLoopError(ErrorCode.TASK_PRIVATE, "a private task records nothing and cannot be exported")
    records = sorted(task["claims"].values(), key=lambda r: (r["seq"], r["claim"]["claim_id"]))
    claims = []
    for record in records:
        entry = dict(record["claim"])
        entry.setdefault("supersedes", [])
        entry["state"] = record["state"]
        entry["provenance"] = record["provenance"]
        claims.append(entry)
    return {
        "format": FORMAT, "version": VERSION, "exported_at": format_utc(now()),
        "task": {"task_id": task["task_id"], "label": task.get("label"), "mode": task["mode"],
                 "created_at": task["created_at"]},
        "claims": claims,
    }


def render(doc):
    return canonical_bytes(doc) + b"\n"


def write_export(path, data, *, force=False):
    """Write `data` to `path` via temp + fsync + rename; without `force` never replace an existing file.

    Without force the temp file is hard-linked into place (fails atomically if the name exists),
    so a file appearing between the check and the write is never clobbered either.
    """
    from intent_loop.storage import platform
    from intent_loop.storage.atomic import replace_atomically, temp_name_for, write_all

    path = os.path.abspath(path)
    if os.path.lexists(path) and not force:
        raise IntentLoopError(ErrorCode.FILE_EXISTS, f"{path} exists; choose a new file name or pass --force")
    if os.path.isdir(path) and not os.path.islink(path):
        raise IntentLoopError(ErrorCode.FILE_EXISTS, f"{path} is a directory; choose a file name")
    if force:
        replace_atomically(path, data, mode=0o600)
        return path
    temp = temp_name_for(path)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            write_all(fd, data)
            platform.fsync_file(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, path)
        except FileExistsError:
            raise IntentLoopError(ErrorCode.FILE_EXISTS, f"{path} exists; choose a new file name or pass --force") from None
        platform.fsync_directory(os.path.dirname(path))
    except OSError as exc:
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not write {path}: {exc.strerror or exc}") from exc
    finally:
        try:
            os.unlink(temp)
        except OSError:
            pass
    return path


# -- validation --------------------------------------------------------------------------------
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
        if not isinstance(label, str) or not label.strip() or "\n" in label or "\r" in label \
                or len(redact(label)) > MAX_LABEL:
            check.add("task.label", f"must be null or one line of 1-{MAX_LABEL} characters")
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


# -- import ------------------------------------------------------------------------------------
def _invalid(problems):
    shown = "; ".join(problems[:20]) + (f"; and {len(problems) - 20} more" if len(problems) > 20 else "")
    return IntentLoopError(ErrorCode.IMPORT_INVALID,
                           f"the graph was not imported ({len(problems)} problems): {shown}; nothing was written",
                           details={"problems": problems})


def prepare_import(data):
    """Validate and map a graph: (graph_sha256, task info, claims, superseded ids, invalidated ids)."""
    doc, problems = validate(data)
    if problems:
        raise _invalid(problems)
    graph_sha = sha256_hex(bytes(data))
    new_ids = {entry["claim_id"]: new_uuid4() for entry in doc["claims"]}
    claims, superseded, invalidated = [], [], []
    for entry in doc["claims"]:
        old_id = entry["claim_id"]
        status, role = entry["epistemic_status"], entry["role"]
        if status == "explicit":
            status, role = "evidence", "evidence"
        provenance_hash = sha256_hex(canonical_bytes({
            "graph_sha256": graph_sha, "claim_id": old_id, "source_ref": entry.get("source_ref")}))
        claim = {
            "claim_id": new_ids[old_id],
            "statement": redact(entry["statement"]),
            "role": role,
            "epistemic_status": status,
            "source_ref": {"kind": IMPORT_SOURCE_KIND, "sha256": provenance_hash},
            "scope": entry["scope"],
            "valid_from": entry["valid_from"],
            "last_confirmed": entry.get("last_confirmed"),
            "supersedes": [new_ids[s] for s in dict.fromkeys(entry.get("supersedes", []))],
            "facets": list(entry["facets"]),
        }
        if status == "inferred":
            claim["confidence"] = entry["confidence"]
        claims_mod.check_claim(claim)
        claims.append(claim)
        if entry["state"] == "superseded":
            superseded.append(new_ids[old_id])
        elif entry["state"] == "invalidated":
            invalidated.append(new_ids[old_id])
    task = doc["task"]
    label = redact(task["label"]) if task.get("label") is not None else None
    return graph_sha, {"label": label, "source_task_created_at": task["created_at"]}, claims, superseded, invalidated


def import_graph(paths, reducer, data, *, task_id=None, deadline, workspace=None, env=None, now=time.time):
    """Import a graph into `task_id` (an existing task that records) or a new task (mode on).

    One locked mutation with a fresh request id. Returns a report dict.
    """
    from intent_loop.intent import tasks

    graph_sha, info, claims, superseded, invalidated = prepare_import(data)
    request_id = f"import:{new_uuid4()}"

    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(now()))
        if task_id is not None:
            target = tasks.resolve_task(the_plan.state, task_id)
            mode = the_plan.task(target)["mode"]
            if mode == "off":
                raise IntentLoopError(ErrorCode.TASK_OFF, "this task is off; `intent-loop on --task ID` re-enables it")
            if mode == "private":
                raise IntentLoopError(ErrorCode.TASK_PRIVATE, "this task is private; nothing is recorded until `on`")
            started = False
        else:
            target = tasks.derived_task_id(paths.project_id, request_id)
            tasks.start_task(the_plan, task_id=target, mode="on", label=info["label"])
            started = True
        the_plan.add(Draft("graph_imported", target, "system", {
            "claims": claims, "superseded": superseded, "graph_format": f"{FORMAT}/{VERSION}",
            "source": {"kind": IMPORT_SOURCE_KIND, "sha256": graph_sha},
        }))
        for claim_id in invalidated:
            the_plan.add(Draft("claim_invalidated", target, "system",
                               {"claim_id": claim_id, "reason": "invalidated_in_imported_graph"}))
        return Planned(the_plan.drafts, detail={"task_id": target, "started": started})

    def after_commit(tx, _mutation):
        if workspace is None:
            return None
        from intent_loop.guard import provider  # keep the Guard file in step with the (unchanged) projection

        try:
            return provider.refresh(tx, workspace=workspace, env=env or {})
        except IntentLoopError as exc:  # a Guard file failure never undoes the import
            return {"action": "error", "reason": exc.message, "code": exc.code}
        except OSError as exc:
            return {"action": "error", "reason": str(exc), "code": ErrorCode.PROVIDER_WRITE_FAILED}

    mutation = mutate(paths, reducer, request_id=request_id, operation="graph.import",
                      params={"graph_sha256": graph_sha, "task": task_id},
                      plan=plan, deadline=deadline, after_commit=after_commit)
    return {
        "ok": True, "task_id": mutation.detail["task_id"], "started_task": mutation.detail["started"],
        "imported_claims": len(claims), "superseded": len(superseded), "invalidated": len(invalidated),
        "claim_ids": [c["claim_id"] for c in claims], "graph_sha256": graph_sha, "request_id": request_id,
        "events": [e["event_type"] for e in mutation.events], "publication": mutation.committed,
    }

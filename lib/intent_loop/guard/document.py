"""The provider document we write: the projection of a task's claims it carries, its envelope, the
snapshot hash Guard recomputes, and its file bytes."""

from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes, dumps, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.claim_records import shown_active
from intent_loop.intent.claim_text import split_sources
from intent_loop.intent.claims import split_prefix

SCHEMA_VERSION = "1.0"
SOURCE = "user-intent-plugin"
DEFAULT_SURFACE = "repository"
DEFAULT_EVIDENCE = {"requirement": "The user confirms the requested outcome was delivered",
                    "acceptable_sources": ["user"]}
_LIST_FIELDS = {"scope include": ("scope", "include"), "scope exclude": ("scope", "exclude"),
                "must": ("must_and_must_not", "must"), "must not": ("must_and_must_not", "must_not"),
                "allow": ("authorization", "allowed"), "ask": ("authorization", "requires_user"),
                "forbid": ("authorization", "forbidden")}


def projection_for(task, *, project_root):
    """The seven-field projection of a task's active direct user-explicit claims, or None."""
    p = {"objective": [], "primary_object": None, "delivery_surface": [],
         "scope": {"include": [], "exclude": []}, "must_and_must_not": {"must": [], "must_not": []},
         "authorization": {"allowed": [], "requires_user": [], "forbidden": []}, "completion_evidence": []}
    for record in shown_active(task):  # the user's words only: the hidden claims are never read
        _project_claim(p, record["claim"])
    if not p["objective"]:
        return None
    p["objective"] = "; ".join(p["objective"])
    p["primary_object"] = p["primary_object"] or fast_os.path.basename(project_root.rstrip(fast_os.sep)) or project_root
    p["delivery_surface"] = p["delivery_surface"] or [DEFAULT_SURFACE]
    p["completion_evidence"] = p["completion_evidence"] or [dict(DEFAULT_EVIDENCE, acceptable_sources=["user"])]
    return p


def _project_claim(p, claim):
    prefix, value = split_prefix(claim["statement"])
    facets = claim["facets"]
    if prefix is None:
        if "outcome" in facets:
            p["objective"].append(value)
        elif "success_signal" in facets:
            _add_evidence(p, value)
        elif "hard_constraint" in facets:
            p["must_and_must_not"]["must"].append(value)
    elif prefix == "object":
        p["primary_object"] = value  # claims come oldest first: the newest wins
    elif prefix == "surface":
        if value not in p["delivery_surface"]:
            p["delivery_surface"].append(value)
    elif prefix == "done when":
        _add_evidence(p, value)
    elif prefix in _LIST_FIELDS:
        group, key = _LIST_FIELDS[prefix]
        p[group][key].append(value)


def _add_evidence(p, value):
    requirement, sources = split_sources(value)
    p["completion_evidence"].append({"requirement": requirement, "acceptable_sources": sources or ["user"]})


def projection_bytes(projection):
    """The exact bytes Guard hashes: keys sorted, no whitespace, raw UTF-8, no final newline."""
    return canonical_bytes(projection)


def projection_sha256(projection):
    return sha256_hex(projection_bytes(projection))


def build_document(projection, *, contract_ref, contract_version, source_message_refs, updated_at):
    """The provider document for `projection`, sealed with its canonical hash (not validated)."""
    envelope = {
        "schema_version": SCHEMA_VERSION,
        "contract_ref": contract_ref,
        "contract_version": contract_version,
        "source": SOURCE,
        "source_message_refs": list(source_message_refs),
        "snapshot_sha256": projection_sha256(projection),
        "updated_at": updated_at,
    }
    return {"envelope": envelope, "projection": projection}


def _pretty(value, indent):
    """Like json.dumps(indent=2, sort_keys=True, ensure_ascii=False), without importing json."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        members = [f"{inner}{dumps(key)}: {_pretty(value[key], inner)}" for key in sorted(value)]
        return "{\n" + ",\n".join(members) + "\n" + indent + "}"
    if isinstance(value, list) and value:
        items = [inner + _pretty(item, inner) for item in value]
        return "[\n" + ",\n".join(items) + "\n" + indent + "]"
    return dumps(value)


def render_document(doc):
    """The file's bytes: UTF-8 without BOM, 2-space indent, sorted keys, final newline."""
    try:
        return (_pretty(doc, "") + "\n").encode("utf-8")
    except UnicodeEncodeError as exc:
        message = "text contains a lone surrogate; send valid Unicode"
        raise IntentLoopError(ErrorCode.INVALID_TEXT, message) from exc

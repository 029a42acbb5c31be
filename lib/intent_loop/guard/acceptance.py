"""Guard 0.2.2's acceptance rules for a provider document and a user's TaskContractLite."""

from intent_loop.base.canonical import dumps
from intent_loop.base.timestamps import rfc3339_error
from intent_loop.errors import IntentLoopError
from intent_loop.guard.document import SCHEMA_VERSION, SOURCE, projection_sha256
from intent_loop.intent.rule_grammar import (
    EVIDENCE_SOURCES,
    INIT_PLACEHOLDERS,
    is_blank,
    js_trim,
    rule_error,
    strip_guard_space,
)

ENVELOPE_KEYS = (
    "schema_version", "contract_ref", "contract_version", "source",
    "source_message_refs", "snapshot_sha256", "updated_at",
)
PROJECTION_KEYS = (
    "objective", "primary_object", "delivery_surface", "scope",
    "must_and_must_not", "authorization", "completion_evidence",
)
_SECTIONS = {  # projection key -> (sub-keys, sub-keys whose items follow the rule grammar)
    "scope": (("include", "exclude"), ()),
    "must_and_must_not": (("must", "must_not"), ("must_not",)),
    "authorization": (("allowed", "requires_user", "forbidden"), ("allowed", "requires_user", "forbidden")),
}
EVIDENCE_KEYS = ("requirement", "acceptable_sources")
# Guard 0.2.2 refuses a string value that EQUALS one of efg init's placeholder sentences after JS
# trim(), case-sensitively (not one that merely contains one): so do we, no stricter, or a claim
# quoting a placeholder would silently freeze publication. Typing refuses such a claim outright.
_MAX_SAFE_INTEGER = 2**53 - 1  # Guard reads numbers as JS doubles; larger versions would round
_HEX = "0123456789abcdef"


def _child(path, key):
    """`path.key`, or `path["odd key"]` when the key is not a plain name."""
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path or '$'}[{dumps(str(key))}]"


def json_type_name(value):
    """The JSON type name, as a reader of the file would call it."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null",
             int: "number", float: "number"}
    return names.get(type(value), type(value).__name__)


def _check_keys(value, path, allowed, errors):
    """False (and one error) when `value` is not an object; otherwise flags missing and extra keys."""
    if not isinstance(value, dict):
        errors.append(f"{path or '$'}: must be an object, not {json_type_name(value)}")
        return False
    for key in allowed:
        if key not in value:
            errors.append(f"{_child(path, key)}: required key is missing")
    for key in value:
        if key not in allowed:
            errors.append(f"{_child(path, key)}: unsupported key (Guard allows no extra fields)")
    return True


def _text_error(value):
    """Why `value` is not an acceptable non-empty string, or None."""
    if not isinstance(value, str):
        return f"must be a string, not {json_type_name(value)}"
    if is_blank(value):
        return "must not be empty or whitespace-only"
    if not _encodes(value):
        return "contains a lone surrogate; Guard would hash different bytes"
    if js_trim(value) in INIT_PLACEHOLDERS:
        return f"is the efg init placeholder {js_trim(value)!r}; write the real content"
    return None


def _encodes(value):
    """False when `value` holds a lone surrogate: the one thing strict UTF-8 cannot encode (checked
    in C, where a loop over the characters costs every publication a pass over every claim)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _report(problem, path, errors):
    """Record `problem` (None when there is none) at `path`; True when the value passed."""
    if problem:
        errors.append(f"{path}: {problem}")
    return problem is None


def _check_text(value, path, errors):
    return _report(_text_error(value), path, errors)


def _check_text_list(value, path, errors, *, min_items=0, rules=False):
    if not isinstance(value, list):
        errors.append(f"{path}: must be an array of strings, not {json_type_name(value)}")
        return
    if len(value) < min_items:
        errors.append(f"{path}: must hold at least {min_items} item(s)")
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if _check_text(item, item_path, errors) and rules:
            problem = rule_error(item, typed=False)  # Guard's own rule, not typing's stricter one
            if problem:
                errors.append(f"{item_path}: {problem}")


def _check_unique(items, path, errors, *, normalize):
    """Flags each repeat; `normalize` decides what counts as the same item."""
    if not isinstance(items, list):
        return
    first_index = {}
    for index, item in enumerate(items):
        if not isinstance(item, str) or is_blank(item):
            continue  # reported as a bad item already
        key = normalize(item)
        if key in first_index:
            errors.append(f"{path}[{index}]: duplicate of {path}[{first_index[key]}]")
        else:
            first_index[key] = index


def _check_evidence_item(item, path, errors):
    if not _check_keys(item, path, EVIDENCE_KEYS, errors):
        return
    if "requirement" in item:
        _check_text(item["requirement"], f"{path}.requirement", errors)
    if "acceptable_sources" not in item:
        return
    sources, sources_path = item["acceptable_sources"], f"{path}.acceptable_sources"
    _check_text_list(sources, sources_path, errors, min_items=1)
    if not isinstance(sources, list):
        return
    for index, source in enumerate(sources):
        if isinstance(source, str) and not is_blank(source) and source not in EVIDENCE_SOURCES:
            errors.append(f"{sources_path}[{index}]: unknown evidence source {source!r}; "
                          f"use one of: {', '.join(EVIDENCE_SOURCES)}")
    # Rejected though Guard may accept a repeat: conservative, and a repeat never adds meaning.
    _check_unique(sources, sources_path, errors, normalize=str)


def _check_completion_evidence(value, path, errors):
    if not isinstance(value, list):
        errors.append(f"{path}: must be an array of evidence items, not {json_type_name(value)}")
        return
    if not value:
        errors.append(f"{path}: must hold at least 1 item(s)")
    for index, item in enumerate(value):
        _check_evidence_item(item, f"{path}[{index}]", errors)


def validate_projection(projection, *, path="projection"):
    """Every reason Guard would refuse these seven fields, as "<json path>: <problem>" strings."""
    errors = []
    if not _check_keys(projection, path, PROJECTION_KEYS, errors):
        return errors
    for key in ("objective", "primary_object"):
        if key in projection:
            _check_text(projection[key], _child(path, key), errors)
    if "delivery_surface" in projection:
        surfaces, surfaces_path = projection["delivery_surface"], _child(path, "delivery_surface")
        _check_text_list(surfaces, surfaces_path, errors, min_items=1)
        _check_unique(surfaces, surfaces_path, errors, normalize=strip_guard_space)
    for key, (sub_keys, rule_keys) in _SECTIONS.items():
        section, section_path = projection.get(key), _child(path, key)
        if key in projection and _check_keys(section, section_path, sub_keys, errors):
            for sub_key in sub_keys:
                if sub_key in section:
                    _check_text_list(section[sub_key], _child(section_path, sub_key), errors,
                                     rules=sub_key in rule_keys)
    if "completion_evidence" in projection:
        evidence_path = _child(path, "completion_evidence")
        _check_completion_evidence(projection["completion_evidence"], evidence_path, errors)
    return errors


def validate_task_contract_lite(doc):
    """A user's bare seven-field fallback file: the projection rules, paths from the top level."""
    return validate_projection(doc, path="")


def _check_contract_version(value, path, errors):
    # bool is an int subclass and 4.0 is a float: neither is the JSON integer Guard asks for.
    if type(value) is not int:
        is_whole_float = isinstance(value, float) and value.is_integer()
        hint = f" (write {int(value)}, not {value})" if is_whole_float else ""
        errors.append(f"{path}: must be a JSON integer >= 1, not {json_type_name(value)}{hint}")
    elif not 1 <= value <= _MAX_SAFE_INTEGER:
        errors.append(f"{path}: must be an integer from 1 to {_MAX_SAFE_INTEGER}")


def _check_exact(value, path, expected, errors):
    if not (isinstance(value, str) and value == expected):
        errors.append(f"{path}: must be the string {expected!r}")


def _check_snapshot(value, path, projection, errors):
    if not (isinstance(value, str) and len(value) == 64 and all(char in _HEX for char in value)):
        errors.append(f"{path}: must be 64 lowercase hex digits")
        return
    if not isinstance(projection, dict):  # already reported under projection; a hash adds nothing
        return
    try:
        expected = projection_sha256(projection)
    except IntentLoopError as exc:
        errors.append(f"{path}: the projection cannot be hashed: {exc.message}")
        return
    if value != expected:
        errors.append(f"{path}: does not match the canonical projection hash {expected}")


def validate_envelope(envelope, projection, *, path="envelope"):
    """Guard's envelope rules; `projection` is needed to recompute snapshot_sha256."""
    errors = []
    if isinstance(envelope, dict) and "task_contract_lite" in envelope:
        errors.append(f"{path}.task_contract_lite: not allowed in a {SOURCE} envelope")
        envelope = {key: value for key, value in envelope.items() if key != "task_contract_lite"}
    if not _check_keys(envelope, path, ENVELOPE_KEYS, errors):
        return errors
    present = {key: (envelope[key], _child(path, key)) for key in ENVELOPE_KEYS if key in envelope}
    if "schema_version" in present:
        _check_exact(*present["schema_version"], SCHEMA_VERSION, errors)
    if "contract_ref" in present:
        _check_text(*present["contract_ref"], errors)
    if "contract_version" in present:
        _check_contract_version(*present["contract_version"], errors)
    if "source" in present:
        _check_exact(*present["source"], SOURCE, errors)
    if "source_message_refs" in present:
        _check_text_list(*present["source_message_refs"], errors)
    if "snapshot_sha256" in present:
        _check_snapshot(*present["snapshot_sha256"], projection, errors)
    if "updated_at" in present:
        _check_updated_at(*present["updated_at"], errors)
    return errors


def validate_provider_document(doc):
    """Every reason Guard would refuse `{"envelope": ..., "projection": ...}`."""
    errors = []
    if not _check_keys(doc, "", ("envelope", "projection"), errors):
        return errors
    if "envelope" in doc:
        errors.extend(validate_envelope(doc["envelope"], doc.get("projection")))
    if "projection" in doc:
        errors.extend(validate_projection(doc["projection"]))
    return errors


def _check_updated_at(value, path, errors):
    return _report(rfc3339_error(value), path, errors)

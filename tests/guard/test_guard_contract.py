"""Guard 0.2.2's acceptance rules: golden hash vectors, every validator rule both ways, file bytes."""
import copy
import hashlib
import json

import pytest

from helpers.imports import costly_modules_loaded
from intent_loop.base.canonical import loads
from intent_loop.base.timestamps import format_utc, rfc3339_error
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard.acceptance import validate_projection, validate_provider_document, validate_task_contract_lite
from intent_loop.guard.contract_file import MAX_DOCUMENT_BYTES, validate_document_bytes
from intent_loop.guard.document import build_document, projection_bytes, projection_sha256, render_document

# The three golden vectors of guard-provider.md, copied here so the suite runs on a fresh clone.
VECTOR_1 = {
    "objective": "Exact user-requested outcome",
    "primary_object": "Object being changed or delivered",
    "delivery_surface": ["repository"],
    "scope": {"include": ["workspace"], "exclude": []},
    "must_and_must_not": {"must": [], "must_not": []},
    "authorization": {"allowed": [], "requires_user": [], "forbidden": []},
    "completion_evidence": [{"requirement": "Evidence required for completion", "acceptable_sources": ["test"]}],
}
VECTOR_2 = {
    "objective": "Fix the login redirect loop in the web app",
    "primary_object": "src/auth/redirect.py",
    "delivery_surface": ["repository", "pull_request"],
    "scope": {"include": ["src/auth/", "tests/auth/"], "exclude": ["infra/"]},
    "must_and_must_not": {"must": ["keep the public API unchanged"], "must_not": ["action:install_local"]},
    "authorization": {
        "allowed": ["action:read", "action:write"],
        "requires_user": ["action:publish"],
        "forbidden": ["command-prefix:git push --force"],
    },
    "completion_evidence": [
        {"requirement": "evidence:test", "acceptable_sources": ["test"]},
        {"requirement": "Redirect works in a real browser", "acceptable_sources": ["real_page", "user"]},
    ],
}
VECTOR_3 = {
    "objective": 'Rename the "Save" button to "保存" and keep C:\\tmp paths\nline two\tTAB ctrl:\x01 emoji:🚀',
    "primary_object": "Zürich dashboard (仪表盘)",
    "delivery_surface": ["repository"],
    "scope": {"include": ["web/ui/", "docs/"], "exclude": []},
    "must_and_must_not": {"must": ["café stays café"], "must_not": ["Never rename API routes"]},
    "authorization": {"allowed": [], "requires_user": ["tool:web_fetch"], "forbidden": []},
    "completion_evidence": [
        {"requirement": "Button reads 保存 on the live page", "acceptable_sources": ["real_page", "user"]},
    ],
}
GOLDEN = [
    (VECTOR_1, 394, "d5ecf57a96ebc4e99d942158b59c807b3def2ee490b89ccb7a7234bcdf98a8ca"),
    (VECTOR_2, 636, "50a4229c3f9a18a735573557c95ecf6531ca78a071eead4aed2f5c9ae10c82d7"),
    (VECTOR_3, 545, "e12c331e5159ee5f64a118ba165e1daf8650c6d9be487efc7ae64b69faeefdd5"),
]
UPDATED_AT = "2026-08-28T00:00:00.000Z"


def _sha(data):
    return hashlib.sha256(data).hexdigest()


def _document(projection=VECTOR_2):
    return build_document(copy.deepcopy(projection), contract_ref="intent:task-1", contract_version=3,
                          source_message_refs=["evt:1", "evt:2"], updated_at=UPDATED_AT)


def _paths(errors):
    return [error.split(": ", 1)[0] for error in errors]


# --- the hash -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("projection", "length", "digest"), GOLDEN)
def test_golden_vector_bytes_and_hash(projection, length, digest):
    data = projection_bytes(projection)
    assert len(data) == length
    assert _sha(data) == digest == projection_sha256(projection)
    assert data == json.dumps(projection, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_golden_vector_1_wrong_variants_differ():
    right = projection_sha256(VECTOR_1)
    default_separators = _sha(json.dumps(VECTOR_1, sort_keys=True, ensure_ascii=False).encode())
    unsorted_keys = _sha(json.dumps(VECTOR_1, separators=(",", ":"), ensure_ascii=False).encode())
    trailing_newline = _sha(projection_bytes(VECTOR_1) + b"\n")
    assert default_separators.startswith("75e82965")
    assert unsorted_keys.startswith("bb39d537")
    assert trailing_newline.startswith("ccaac76a")
    assert right not in (default_separators, unsorted_keys, trailing_newline)


def test_golden_vector_3_ascii_escaped_variant_differs():
    escaped = _sha(json.dumps(VECTOR_3, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode())
    assert escaped.startswith("72ba9b34")
    assert escaped != projection_sha256(VECTOR_3)


def test_projection_hash_ignores_key_insertion_order():
    reordered = dict(reversed(list(copy.deepcopy(VECTOR_2).items())))
    assert projection_sha256(reordered) == projection_sha256(VECTOR_2)


# --- every validator rule, accepted and rejected ---------------------------------------------------

def _set(dotted, value):
    """A mutation that sets doc[a][b]... ; integer parts index arrays."""
    def mutate(doc):
        *parents, last = [int(part) if part.isdigit() else part for part in dotted.split(".")]
        target = doc
        for part in parents:
            target = target[part]
        target[last] = value
    return mutate


def _delete(dotted):
    def mutate(doc):
        *parents, last = [int(part) if part.isdigit() else part for part in dotted.split(".")]
        target = doc
        for part in parents:
            target = target[part]
        del target[last]
    return mutate


# (case id, mutation of a valid VECTOR_2 document, expected error paths; [] means accepted).
# The hash is re-sealed after the mutation, so each case tests one rule.
CASES = [
    ("valid-baseline", lambda doc: None, []),
    # document shape
    ("doc-extra-key", _set("meta", {}), ["meta"]),
    ("doc-missing-projection", _delete("projection"), ["projection"]),
    ("doc-missing-envelope", _delete("envelope"), ["envelope"]),
    # envelope keys
    ("env-extra-key", _set("envelope.comment", "x"), ["envelope.comment"]),
    ("env-task-contract-lite", _set("envelope.task_contract_lite", {}), ["envelope.task_contract_lite"]),
    ("env-missing-updated-at", _delete("envelope.updated_at"), ["envelope.updated_at"]),
    ("env-not-object", _set("envelope", []), ["envelope"]),
    # schema_version
    ("schema-1.1", _set("envelope.schema_version", "1.1"), ["envelope.schema_version"]),
    ("schema-number", _set("envelope.schema_version", 1.0), ["envelope.schema_version"]),
    # contract_ref
    ("ref-other-convention", _set("envelope.contract_ref", "lite:abc"), []),
    ("ref-empty", _set("envelope.contract_ref", ""), ["envelope.contract_ref"]),
    ("ref-bom-only", _set("envelope.contract_ref", " \ufeff"), ["envelope.contract_ref"]),
    ("ref-number", _set("envelope.contract_ref", 7), ["envelope.contract_ref"]),
    # contract_version
    ("version-1", _set("envelope.contract_version", 1), []),
    ("version-max-safe", _set("envelope.contract_version", 2**53 - 1), []),
    ("version-0", _set("envelope.contract_version", 0), ["envelope.contract_version"]),
    ("version-negative", _set("envelope.contract_version", -2), ["envelope.contract_version"]),
    ("version-float", _set("envelope.contract_version", 4.0), ["envelope.contract_version"]),
    ("version-bool", _set("envelope.contract_version", True), ["envelope.contract_version"]),
    ("version-string", _set("envelope.contract_version", "3"), ["envelope.contract_version"]),
    ("version-unsafe", _set("envelope.contract_version", 2**53), ["envelope.contract_version"]),
    # source
    ("source-lite", _set("envelope.source", "task-contract-lite"), ["envelope.source"]),
    # source_message_refs
    ("refs-empty-array", _set("envelope.source_message_refs", []), []),
    ("refs-blank-item", _set("envelope.source_message_refs", ["evt:1", "\u2003"]), ["envelope.source_message_refs[1]"]),
    ("refs-number-item", _set("envelope.source_message_refs", [1]), ["envelope.source_message_refs[0]"]),
    ("refs-string", _set("envelope.source_message_refs", "evt:1"), ["envelope.source_message_refs"]),
    # updated_at
    ("time-no-fraction", _set("envelope.updated_at", "2026-08-28T00:00:00Z"), []),
    ("time-offset-leap-day", _set("envelope.updated_at", "2024-02-29T23:59:59.5+05:30"), []),
    ("time-long-fraction", _set("envelope.updated_at", "2026-08-28T00:00:00.123456789-00:00"), []),
    ("time-feb-31", _set("envelope.updated_at", "2026-02-31T00:00:00Z"), ["envelope.updated_at"]),
    ("time-not-leap-year", _set("envelope.updated_at", "2025-02-29T00:00:00Z"), ["envelope.updated_at"]),
    ("time-1900-not-leap", _set("envelope.updated_at", "1900-02-29T00:00:00Z"), ["envelope.updated_at"]),
    ("time-leap-second", _set("envelope.updated_at", "2026-12-31T23:59:60Z"), ["envelope.updated_at"]),
    ("time-no-offset", _set("envelope.updated_at", "2026-08-28T00:00:00"), ["envelope.updated_at"]),
    ("time-no-seconds", _set("envelope.updated_at", "2026-08-28T00:00Z"), ["envelope.updated_at"]),
    ("time-lowercase", _set("envelope.updated_at", "2026-08-28t00:00:00z"), ["envelope.updated_at"]),
    ("time-space", _set("envelope.updated_at", "2026-08-28 00:00:00Z"), ["envelope.updated_at"]),
    ("time-empty-fraction", _set("envelope.updated_at", "2026-08-28T00:00:00.Z"), ["envelope.updated_at"]),
    ("time-compact-offset", _set("envelope.updated_at", "2026-08-28T00:00:00+0530"), ["envelope.updated_at"]),
    ("time-hour-24", _set("envelope.updated_at", "2026-08-28T24:00:00Z"), ["envelope.updated_at"]),
    ("time-month-13", _set("envelope.updated_at", "2026-13-01T00:00:00Z"), ["envelope.updated_at"]),
    ("time-offset-24", _set("envelope.updated_at", "2026-08-28T00:00:00+24:00"), ["envelope.updated_at"]),
    ("time-arabic-digits", _set("envelope.updated_at", "٢٠٢٦-08-28T00:00:00Z"), ["envelope.updated_at"]),
    ("time-epoch-number", _set("envelope.updated_at", 1787875200), ["envelope.updated_at"]),
    # projection keys
    ("proj-extra-key", _set("projection.cost", "low"), ["projection.cost"]),
    ("proj-missing-scope", _delete("projection.scope"), ["projection.scope"]),
    ("proj-not-object", _set("projection", ["objective"]), ["projection"]),
    # non-empty strings (either language's whitespace)
    ("objective-non-ascii", _set("projection.objective", "Zürich 保存 🚀"), []),
    ("objective-empty", _set("projection.objective", ""), ["projection.objective"]),
    ("objective-ideographic-space", _set("projection.objective", "\u3000"), ["projection.objective"]),
    ("objective-python-only-space", _set("projection.objective", "\x1c\x1f"), ["projection.objective"]),
    ("objective-js-only-space", _set("projection.objective", "\ufeff"), ["projection.objective"]),
    ("objective-number", _set("projection.objective", 42), ["projection.objective"]),
    ("primary-object-null", _set("projection.primary_object", None), ["projection.primary_object"]),
    # init placeholders: Guard 0.2.2 refuses a value that EQUALS one after JS trim(), case-sensitively
    ("placeholder-objective", _set("projection.objective", "Replace with the exact user-requested outcome."),
     ["projection.objective"]),
    ("placeholder-primary", _set("projection.primary_object",
                                 " Replace with the primary object being changed or delivered. "),
     ["projection.primary_object"]),
    ("placeholder-must", _set("projection.must_and_must_not.must", ["Replace with non-negotiable requirements."]),
     ["projection.must_and_must_not.must[0]"]),
    ("placeholder-inside-text-is-accepted", _set("projection.scope.include",
                                                 ["src/", "Replace with non-negotiable requirements. And more"]), []),
    ("placeholder-other-case-is-accepted", _set("projection.must_and_must_not.must",
                                                ["replace with non-negotiable requirements."]), []),
    ("placeholder-js-trimmed", _set("projection.must_and_must_not.must",
                                    ["\ufeffReplace with non-negotiable requirements.\u3000"]),
     ["projection.must_and_must_not.must[0]"]),
    ("placeholder-envelope", _set("envelope.source_message_refs", ["Replace with non-negotiable requirements."]),
     ["envelope.source_message_refs[0]"]),
    # delivery_surface
    ("surface-three", _set("projection.delivery_surface", ["repository", "pull_request", "release"]), []),
    ("surface-empty", _set("projection.delivery_surface", []), ["projection.delivery_surface"]),
    ("surface-duplicate", _set("projection.delivery_surface", ["repository", "repository"]),
     ["projection.delivery_surface[1]"]),
    ("surface-duplicate-after-trim", _set("projection.delivery_surface", ["repository", "repository "]),
     ["projection.delivery_surface[1]"]),
    ("surface-string", _set("projection.delivery_surface", "repository"), ["projection.delivery_surface"]),
    # scope
    ("scope-both-empty", _set("projection.scope", {"include": [], "exclude": []}), []),
    ("scope-missing-exclude", _set("projection.scope", {"include": []}), ["projection.scope.exclude"]),
    ("scope-extra-key", _set("projection.scope.only", []), ["projection.scope.only"]),
    ("scope-blank-item", _set("projection.scope.exclude", ["infra/", " "]), ["projection.scope.exclude[1]"]),
    # must_and_must_not: the rule grammar covers must_not only
    ("must-prose-with-colon", _set("projection.must_and_must_not.must", ["Tools: no web"]), []),
    ("must-not-prose", _set("projection.must_and_must_not.must_not", ["never push to main"]), []),
    ("must-not-near-miss", _set("projection.must_and_must_not.must_not", ["Tools: no web"]),
     ["projection.must_and_must_not.must_not[0]"]),
    ("must-not-extra-key", _set("projection.must_and_must_not.should", []), ["projection.must_and_must_not.should"]),
    # authorization
    ("auth-valid-rules", _set("projection.authorization", {
        "allowed": ["tool:web_fetch", "action:write_workspace"], "requires_user": ["command-prefix:npm publish"],
        "forbidden": ["ACTION:destructive", "do not email anyone"]}), []),
    # Guard 0.2.2 trims and lowercases a structured value, and cannot match one holding a line break
    ("auth-action-case-and-space-as-guard-reads-it", _set("projection.authorization.allowed",
                                                          ["action:Network", "action: read", "tool: Bash"]), []),
    ("auth-tool-with-a-line-break", _set("projection.authorization.forbidden", ["tool:web\nfetch"]),
     ["projection.authorization.forbidden[0]"]),
    ("auth-command-prefix-with-u2028", _set("projection.authorization.requires_user", ["command-prefix:npm\u2028x"]),
     ["projection.authorization.requires_user[0]"]),
    ("auth-allowed-unknown-action", _set("projection.authorization.allowed", ["action:read", "action:deploy"]),
     ["projection.authorization.allowed[1]"]),
    ("auth-requires-user-empty-value", _set("projection.authorization.requires_user", ["tool:"]),
     ["projection.authorization.requires_user[0]"]),
    ("auth-forbidden-near-miss", _set("projection.authorization.forbidden", ["tools:web_fetch"]),
     ["projection.authorization.forbidden[0]"]),
    ("auth-forbidden-space-colon", _set("projection.authorization.forbidden", ["command-prefix :git push"]),
     ["projection.authorization.forbidden[0]"]),
    ("auth-missing-forbidden", _delete("projection.authorization.forbidden"), ["projection.authorization.forbidden"]),
    # completion_evidence
    ("evidence-all-sources", _set("projection.completion_evidence.0.acceptable_sources",
                                  ["file", "command", "test", "api", "database", "real_page", "release", "user"]), []),
    ("evidence-empty", _set("projection.completion_evidence", []), ["projection.completion_evidence"]),
    ("evidence-item-not-object", _set("projection.completion_evidence", ["run the tests"]),
     ["projection.completion_evidence[0]"]),
    ("evidence-extra-key", _set("projection.completion_evidence.1.note", "x"),
     ["projection.completion_evidence[1].note"]),
    ("evidence-missing-sources", _delete("projection.completion_evidence.0.acceptable_sources"),
     ["projection.completion_evidence[0].acceptable_sources"]),
    ("evidence-sources-empty", _set("projection.completion_evidence.0.acceptable_sources", []),
     ["projection.completion_evidence[0].acceptable_sources"]),
    ("evidence-unknown-source", _set("projection.completion_evidence.1.acceptable_sources", ["real_page", "web"]),
     ["projection.completion_evidence[1].acceptable_sources[1]"]),
    ("evidence-duplicate-source", _set("projection.completion_evidence.1.acceptable_sources", ["user", "user"]),
     ["projection.completion_evidence[1].acceptable_sources[1]"]),
    ("evidence-uppercase-source", _set("projection.completion_evidence.0.acceptable_sources", ["Test"]),
     ["projection.completion_evidence[0].acceptable_sources[0]"]),
    ("evidence-blank-requirement", _set("projection.completion_evidence.0.requirement", "\t"),
     ["projection.completion_evidence[0].requirement"]),
]


def _resealed(mutate):
    doc = _document()
    mutate(doc)
    if isinstance(doc.get("envelope"), dict) and isinstance(doc.get("projection"), dict):
        doc["envelope"]["snapshot_sha256"] = projection_sha256(doc["projection"])
    return doc


@pytest.mark.parametrize(("case", "mutate", "expected_paths"), CASES, ids=[case[0] for case in CASES])
def test_validator_case(case, mutate, expected_paths):
    errors = validate_provider_document(_resealed(mutate))
    assert _paths(errors) == expected_paths, errors


def test_validator_table_covers_both_outcomes():
    accepted = [case for case in CASES if not case[2]]
    rejected = [case for case in CASES if case[2]]
    assert len(CASES) >= 40 and len(accepted) >= 10 and len(rejected) >= 40


def test_snapshot_must_be_lowercase_hex():
    doc = _document()
    doc["envelope"]["snapshot_sha256"] = doc["envelope"]["snapshot_sha256"].upper()
    assert _paths(validate_provider_document(doc)) == ["envelope.snapshot_sha256"]


def test_snapshot_must_be_64_digits():
    doc = _document()
    doc["envelope"]["snapshot_sha256"] = doc["envelope"]["snapshot_sha256"][:63]
    assert _paths(validate_provider_document(doc)) == ["envelope.snapshot_sha256"]


def test_snapshot_must_match_the_projection():
    doc = _document()
    doc["projection"]["objective"] += "!"
    errors = validate_provider_document(doc)
    assert _paths(errors) == ["envelope.snapshot_sha256"]
    assert projection_sha256(doc["projection"]) in errors[0]


def test_lone_surrogate_is_rejected_and_not_hashed():
    doc = _document()
    doc["projection"]["objective"] = "broken \ud800 text"
    assert _paths(validate_provider_document(doc)) == ["envelope.snapshot_sha256", "projection.objective"]


def test_validator_reports_every_problem_at_once():
    doc = _document()
    doc["envelope"]["schema_version"] = "2.0"
    doc["envelope"]["contract_version"] = 0
    doc["projection"]["objective"] = " "
    doc["projection"]["authorization"]["forbidden"] = ["Tools: no web", "action:fly"]
    doc["envelope"]["snapshot_sha256"] = projection_sha256(doc["projection"])
    assert _paths(validate_provider_document(doc)) == [
        "envelope.schema_version", "envelope.contract_version", "projection.objective",
        "projection.authorization.forbidden[0]", "projection.authorization.forbidden[1]",
    ]


def test_near_miss_error_names_the_prefix_and_the_fix():
    projection = copy.deepcopy(VECTOR_1)
    projection["authorization"]["forbidden"] = ["tools: web"]
    [error] = validate_projection(projection)
    assert error.startswith("projection.authorization.forbidden[0]: ")
    assert "'tools:'" in error and "tool:<name>" in error


def test_document_not_an_object():
    assert _paths(validate_provider_document(["envelope"])) == ["$"]


def test_odd_key_names_get_a_quoted_path():
    doc = _resealed(_set("projection.two words", 1))
    assert _paths(validate_provider_document(doc)) == ['projection["two words"]']


@pytest.mark.parametrize("projection", [VECTOR_1, VECTOR_2, VECTOR_3])
def test_golden_projections_are_valid(projection):
    assert validate_projection(projection) == []


def test_task_contract_lite_uses_top_level_paths():
    lite = copy.deepcopy(VECTOR_1)
    lite["scope"]["include"] = [""]
    del lite["objective"]
    assert _paths(validate_task_contract_lite(lite)) == ["objective", "scope.include[0]"]


def test_rfc3339_error_accepts_what_format_utc_writes():
    assert rfc3339_error(format_utc(1_787_875_200.5)) is None


# --- file bytes ---------------------------------------------------------------------------------

def test_file_rendered_document_is_provider_and_valid():
    kind, parsed, errors = validate_document_bytes(render_document(_document()))
    assert (kind, errors) == ("provider", [])
    assert parsed == _document()


def test_file_with_utf8_bom_is_rejected():
    kind, parsed, errors = validate_document_bytes(b"\xef\xbb\xbf" + render_document(_document()))
    assert (kind, parsed, _paths(errors)) == ("unknown", None, ["$"])


def test_file_over_256_kib_is_rejected():
    data = render_document(_document())
    padded = data + b" " * (MAX_DOCUMENT_BYTES + 1 - len(data))
    assert _paths(validate_document_bytes(padded)[2]) == ["$"]


def test_file_of_exactly_256_kib_is_accepted():
    data = render_document(_document())
    padded = data + b" " * (MAX_DOCUMENT_BYTES - len(data))
    assert validate_document_bytes(padded)[::2] == ("provider", [])


@pytest.mark.parametrize("data", [
    b'{"objective": "caf\xe9"}',  # Latin-1, not UTF-8
    b'{"objective": "\xed\xa0\x80"}',  # an encoded surrogate
])
def test_file_with_invalid_utf8_is_rejected(data):
    kind, parsed, errors = validate_document_bytes(data)
    assert (kind, parsed, _paths(errors)) == ("unknown", None, ["$"])


@pytest.mark.parametrize("data", [b"", b"{", b"{} {}", b"{'a': 1}", b'{"a": NaN}', b"[" * 100_000])
def test_file_that_is_not_json_is_rejected(data):
    kind, parsed, errors = validate_document_bytes(data)
    assert (kind, parsed, _paths(errors)) == ("unknown", None, ["$"])


@pytest.mark.parametrize("data", [b"[]", b'["envelope", "projection"]', b'"text"', b"null", b"3"])
def test_file_with_non_object_top_level_is_unknown(data):
    kind, parsed, errors = validate_document_bytes(data)
    assert (kind, _paths(errors)) == ("unknown", ["$"])
    assert parsed == loads(data)


def test_file_bare_seven_fields_is_lite():
    kind, parsed, errors = validate_document_bytes(json.dumps(VECTOR_2).encode())
    assert (kind, parsed, errors) == ("lite", VECTOR_2, [])


def test_file_lite_with_an_extra_field_is_lite_and_invalid():
    lite = dict(VECTOR_1, cost="low")
    kind, _, errors = validate_document_bytes(json.dumps(lite).encode())
    assert (kind, _paths(errors)) == ("lite", ["cost"])


def test_file_with_only_a_projection_key_is_an_invalid_provider_document():
    kind, _, errors = validate_document_bytes(json.dumps({"projection": VECTOR_1}).encode())
    assert (kind, _paths(errors)) == ("provider", ["envelope"])


def test_file_standalone_envelope_is_unknown():
    envelope = _document()["envelope"]
    kind, _, errors = validate_document_bytes(json.dumps(envelope).encode())
    assert (kind, _paths(errors)) == ("unknown", ["$"])


def test_file_empty_object_is_unknown():
    kind, parsed, errors = validate_document_bytes(b"{}")
    assert (kind, parsed, _paths(errors)) == ("unknown", {}, ["$"])


def test_file_hash_mismatch_is_reported():
    doc = _document()
    doc["envelope"]["snapshot_sha256"] = "0" * 64
    assert _paths(validate_document_bytes(render_document(doc))[2]) == ["envelope.snapshot_sha256"]


# --- building and rendering ---------------------------------------------------------------------

@pytest.mark.parametrize(("projection", "length", "digest"), GOLDEN)
def test_build_document_validates_cleanly(projection, length, digest):
    doc = build_document(projection, contract_ref="intent:t", contract_version=1,
                         source_message_refs=(), updated_at=format_utc(1_787_875_200))
    assert validate_provider_document(doc) == []
    assert doc["envelope"]["snapshot_sha256"] == digest
    assert doc["envelope"]["source_message_refs"] == []


@pytest.mark.parametrize(("projection", "length", "digest"), GOLDEN)
def test_render_document_round_trips_to_the_same_hash(projection, length, digest):
    data = render_document(_document(projection))
    parsed = loads(data)
    assert projection_sha256(parsed["projection"]) == digest == parsed["envelope"]["snapshot_sha256"]
    assert not data.startswith(b"\xef\xbb\xbf") and data.endswith(b"}\n")


def test_render_document_is_json_pretty_print():
    doc = _document(VECTOR_3)
    expected = json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert render_document(doc) == expected.encode("utf-8")


def test_render_document_rejects_a_lone_surrogate():
    doc = _document()
    doc["projection"]["objective"] = "\udc80"
    with pytest.raises(IntentLoopError) as caught:
        render_document(doc)
    assert caught.value.code == ErrorCode.INVALID_TEXT


@pytest.mark.parametrize(("epoch", "expected"), [
    (0, "1970-01-01T00:00:00.000Z"),
    (1_787_875_200.123, "2026-08-28T00:00:00.123Z"),
    (1_787_875_199.9996, "2026-08-27T23:59:59.999Z"),  # truncated, never rounded up
    (951_782_400, "2000-02-29T00:00:00.000Z"),
    (-1.5, "1969-12-31T23:59:58.500Z"),
    (253_402_300_799, "9999-12-31T23:59:59.000Z"),
])
def test_format_utc(epoch, expected):
    assert format_utc(epoch) == expected
    assert rfc3339_error(expected) is None


@pytest.mark.parametrize("epoch", [float("nan"), float("inf"), 253_402_300_800, -62_135_596_801])
def test_format_utc_out_of_range(epoch):
    with pytest.raises(IntentLoopError) as caught:
        format_utc(epoch)
    assert caught.value.code == ErrorCode.INVALID_ARGUMENT


def test_guard_contract_imports_nothing_heavy():
    costly = ("re", "json", "typing", "dataclasses", "enum", "datetime", "hashlib")
    assert costly_modules_loaded("import intent_loop.guard.contract_file, intent_loop.guard.document", costly) == []

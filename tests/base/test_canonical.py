"""Canonical JSON: golden vectors byte for byte, equality with json.dumps, and what it rejects."""
import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from intent_loop.base import canonical
from intent_loop.errors import ErrorCode, IntentLoopError


def _projection(objective, primary_object, surface, include, exclude, must, must_not, allowed,
                requires_user, forbidden, evidence):
    return {
        "objective": objective,
        "primary_object": primary_object,
        "delivery_surface": surface,
        "scope": {"include": include, "exclude": exclude},
        "must_and_must_not": {"must": must, "must_not": must_not},
        "authorization": {"allowed": allowed, "requires_user": requires_user, "forbidden": forbidden},
        "completion_evidence": evidence,
    }


# The three golden vectors of the Guard provider sheet (docs/guard-provider.md), copied here so
# the suite passes on a clone with no ../shared beside it: (projection, byte length, sha256).
VECTOR_1 = _projection(
    "Exact user-requested outcome", "Object being changed or delivered", ["repository"],
    ["workspace"], [], [], [], [], [], [],
    [{"requirement": "Evidence required for completion", "acceptable_sources": ["test"]}],
)
VECTOR_2 = _projection(
    "Fix the login redirect loop in the web app", "src/auth/redirect.py", ["repository", "pull_request"],
    ["src/auth/", "tests/auth/"], ["infra/"], ["keep the public API unchanged"], ["action:install_local"],
    ["action:read", "action:write"], ["action:publish"], ["command-prefix:git push --force"],
    [
        {"requirement": "evidence:test", "acceptable_sources": ["test"]},
        {"requirement": "Redirect works in a real browser", "acceptable_sources": ["real_page", "user"]},
    ],
)
VECTOR_3 = _projection(
    'Rename the "Save" button to "保存" and keep C:\\tmp paths' + "\n" + "line two" + "\t"
    + "TAB ctrl:" + "\x01" + " emoji:🚀",
    "Zürich dashboard (仪表盘)", ["repository"], ["web/ui/", "docs/"], [], ["café stays café"],
    ["Never rename API routes"], [], ["tool:web_fetch"], [],
    [{"requirement": "Button reads 保存 on the live page", "acceptable_sources": ["real_page", "user"]}],
)
GOLDEN = [
    (VECTOR_1, 394, "d5ecf57a96ebc4e99d942158b59c807b3def2ee490b89ccb7a7234bcdf98a8ca"),
    (VECTOR_2, 636, "50a4229c3f9a18a735573557c95ecf6531ca78a071eead4aed2f5c9ae10c82d7"),
    (VECTOR_3, 545, "e12c331e5159ee5f64a118ba165e1daf8650c6d9be487efc7ae64b69faeefdd5"),
]


def _reference(value):
    """The definition the issue gives: Python's json.dumps with these exact arguments."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@pytest.mark.parametrize(("projection", "length", "digest"), GOLDEN, ids=["vector1", "vector2", "vector3"])
def test_golden_vectors_match_byte_for_byte(projection, length, digest):
    data = canonical.canonical_bytes(projection)

    assert len(data) == length
    assert hashlib.sha256(data).hexdigest() == digest
    assert canonical.sha256_hex(data) == digest
    assert not data.endswith(b"\n")


def test_golden_vector_wrong_variants_differ_as_the_sheet_says():
    """The sheet's near-miss digests prove the vectors were transcribed into this file exactly."""
    def digest(text):
        return hashlib.sha256(text.encode()).hexdigest()

    assert digest(json.dumps(VECTOR_1, sort_keys=True, ensure_ascii=False)).startswith("75e82965")
    assert digest(json.dumps(VECTOR_1, separators=(",", ":"), ensure_ascii=False)).startswith("bb39d537")
    assert digest(_reference(VECTOR_1) + "\n").startswith("ccaac76a")
    assert digest(json.dumps(VECTOR_3, sort_keys=True, separators=(",", ":"))).startswith("72ba9b34")


def test_non_ascii_is_raw_utf8_not_escaped():
    data = canonical.canonical_bytes({"k": "保存 Zürich 🚀 \u2028 \x7f"})

    assert data == '{"k":"保存 Zürich 🚀 \u2028 \x7f"}'.encode()


def test_only_quote_backslash_and_controls_are_escaped_lowercase():
    text = '"\\\b\f\n\r\t\x00\x1a\x1f /'

    assert canonical.dumps(text) == '"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001a\\u001f /"'


def test_keys_sort_by_code_point_not_utf16():
    """U+FFFF sorts before U+1F600 by code point; UTF-16 code units would put the emoji first."""
    value = {"\U0001F600": 1, "\uffff": 2, "b": 3, "B": 4, "é": 5}

    assert canonical.dumps(value) == '{"B":4,"b":3,"é":5,"\uffff":2,"\U0001F600":1}'


def test_scalars_and_nesting():
    value = {"z": [3, 2, {"b": None, "a": True}], "a": {"y": False, "x": 2**70}, "f": 0.5, "n": -0.0}

    assert canonical.dumps(value) == (
        '{"a":{"x":1180591620717411303424,"y":false},"f":0.5,"n":-0.0,"z":[3,2,{"a":true,"b":null}]}'
    )


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_json_values = st.recursive(
    _scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(_json_values)
def test_dumps_equals_json_dumps_reference(value):
    text = canonical.dumps(value)

    assert text == _reference(value)
    assert canonical.canonical_bytes(value) == text.encode("utf-8")
    assert canonical.loads(text) == json.loads(text)
    assert canonical.loads(text.encode("utf-8")) == json.loads(text)


@settings(max_examples=200, deadline=None, database=None)
@given(_json_values)
def test_loads_accepts_any_whitespace_layout(value):
    assert canonical.loads(json.dumps(value, indent=2) + "\n") == json.loads(json.dumps(value))


@pytest.mark.parametrize(
    "value",
    ["\ud800", "ok \udfff tail", {"\udc00": 1}, ["fine", {"k": "\ud83d"}]],
    ids=["high", "low-inside", "key", "nested"],
)
def test_lone_surrogates_are_invalid_text(value):
    with pytest.raises(IntentLoopError) as info:
        canonical.canonical_bytes(value)

    assert info.value.code == ErrorCode.INVALID_TEXT


def test_paired_surrogate_escape_in_input_is_an_ordinary_character():
    assert canonical.canonical_bytes(canonical.loads('"\\ud83d\\ude80"')) == '"🚀"'.encode()


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), {"a": [1, float("nan")]}],
                         ids=["nan", "inf", "-inf", "nested-nan"])
def test_nan_and_infinity_are_rejected(value):
    with pytest.raises(IntentLoopError) as info:
        canonical.canonical_bytes(value)

    assert info.value.code == ErrorCode.INVALID_EVENT


@pytest.mark.parametrize("value", [{1, 2}, b"bytes", object()], ids=["set", "bytes", "object"])
def test_values_json_cannot_represent_are_rejected(value):
    with pytest.raises(IntentLoopError) as info:
        canonical.dumps({"v": value})

    assert info.value.code == ErrorCode.INVALID_EVENT


@pytest.mark.parametrize(
    "text",
    ["NaN", "[Infinity]", "-Infinity", "{} {}", '{"a":1} x', "", "   ", '"raw\ncontrol"', "{'a':1}", "[1,]"],
    ids=["nan", "inf", "-inf", "two-docs", "trailing", "empty", "blank", "raw-control", "quotes", "comma"],
)
def test_loads_rejects_what_is_not_one_strict_json_document(text):
    with pytest.raises(ValueError):
        canonical.loads(text)


def test_loads_rejects_invalid_utf8_bytes():
    with pytest.raises(ValueError):
        canonical.loads(b'"\xff"')


def test_sha256_hex_is_lowercase_hex_of_the_bytes():
    assert canonical.sha256_hex(b"abc") == hashlib.sha256(b"abc").hexdigest()

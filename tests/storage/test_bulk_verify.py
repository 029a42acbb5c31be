"""The streaming verifier (storage/cache/bulk_verify.py) agrees with the stdlib one (ledger.check_line)
on every line, valid or not, and folds a ledger file exactly as ledger.fold_lines does: with
orjson, and with the standard library standing in for it (base/json_engine.py), as it does
where the interpreter in use has no orjson."""
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.counting import CountingReducer
from intent_loop.base import json_engine
from intent_loop.errors import IntentLoopError
from intent_loop.storage import ledger, sealing
from intent_loop.storage.cache import bulk_verify

PROJECT = "p" * 64
TASK = "12345678-1234-4234-8234-123456789abc"

_text = st.text(alphabet=st.one_of(
    st.characters(codec="utf-8", exclude_categories=("Cs",)),  # any valid scalar, astral included
    st.sampled_from(list('"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029é€😀\U0010fffd')),
), max_size=30)
_floats = st.one_of(st.floats(min_value=0.0, max_value=1.0),  # subnormals and values below 1e-4 included
                    st.sampled_from([1e-05, 5e-324, 1e-7, 0.0001, 9.999e-05, 1e16, 1e22, -0.0, 2.5e-8]),
                    st.floats(allow_nan=False, allow_infinity=False))
_ints = st.one_of(st.integers(-2**70, 2**70), st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -2**63 - 1]))
_leaf = st.one_of(st.none(), st.booleans(), _ints, _floats, _text)
_json = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(_text, inner, max_size=4)), max_leaves=25)


@pytest.fixture(autouse=True, params=["orjson", "stdlib"])
def engine(request, monkeypatch):
    """Every test of this file runs with each JSON engine the bulk paths can have."""
    if request.param == "stdlib":
        monkeypatch.setattr(bulk_verify, "engine", json_engine.Stdlib)
    else:
        assert bulk_verify.engine is not json_engine.Stdlib, "orjson is not importable in the test environment"
    return request.param


def _seal(payload, prev=None, *, actor="user"):
    draft = ledger.Draft("test_appended", TASK, actor, payload)
    return sealing.seal(draft, project_id=PROJECT, request_id="req-1", prev_hash=prev,
                        occurred_at="2026-01-01T00:00:00.000Z")


def _outcome(fn, line, prev):
    try:
        return ("ok", fn(line, line_no=7, project_id=PROJECT, prev_hash=prev))
    except IntentLoopError as exc:
        return ("error", exc.code, exc.line)


def _agree(line, prev):
    stdlib = _outcome(ledger.check_line, line, prev)
    bulk = _outcome(bulk_verify.verify_line, line, prev)
    assert bulk == stdlib
    if stdlib[0] == "ok":
        assert type(bulk[1]) is dict
    return stdlib


def _mutations(line):
    """Variants of a valid line that the verifiers must judge alike (most are not canonical)."""
    text = line.decode()
    yield line.replace(b":", b": ", 1)
    yield line[:-1] + b" }"
    yield line.replace(b"1e-05", b"0.00001")
    yield line.replace(b"e-0", b"e-")
    yield line.replace(b".0,", b",")
    yield text.replace("é", "\\u00e9").encode()
    yield text.replace("\\n", "\\u000a").encode()
    yield line.replace(b'"payload":{', b'"payload":{"a":1,"a":2,', 1)
    yield line.replace(b'"schema_version":1', b'"schema_version":1.0')
    yield line.replace(b'"schema_version":1', b'"schema_version":true')
    yield line.replace(PROJECT.encode(), b"q" * 64)
    middle = len(line) // 2
    yield line[:middle] + bytes([line[middle] ^ 1]) + line[middle + 1:]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=st.dictionaries(_text, _json, max_size=5))
def test_the_bulk_verifier_agrees_with_check_line(payload):
    try:
        event, line = _seal(payload)
    except IntentLoopError:
        return  # not sealable (a value the canonical form refuses): nothing to verify
    line = line[:-1]
    assert _agree(line, None) == ("ok", event)
    assert _agree(line, "a" * 64)[:2] == ("error", "LEDGER_CHAIN_BROKEN")
    for variant in _mutations(line):
        if variant != line:
            _agree(variant, None)


@pytest.mark.parametrize("value", [1e-05, 0.00001234, 2.8174004784650164e-07, 2**64, 2**70, -2**64, 10**30])
def test_numbers_orjson_writes_or_reads_differently_still_verify(value, engine):
    event, line = _seal({"x": value, "list": [value, {"y": value}]})
    line = line[:-1]
    if engine == "orjson":  # the fast path leaves them to the stdlib (which is the stand-in's own answer)
        assert bulk_verify._fast_event(line, PROJECT, None) is None
    assert bulk_verify.verify_line(line, line_no=1, project_id=PROJECT, prev_hash=None) == event


def test_a_fixed_form_small_float_written_by_orjson_is_not_canonical():
    """orjson would accept '0.00001' as its own form; the stdlib's canonical form is '1e-05'."""
    event, line = _seal({"x": 1e-05})
    forged = line[:-1].replace(b"1e-05", b"0.00001")
    body = json.loads(forged)
    assert body["payload"]["x"] == 1e-05
    assert _agree(forged, None)[:2] == ("error", "LEDGER_MALFORMED")


@pytest.mark.parametrize("depth", [300, 900])
def test_deep_nesting_beyond_orjsons_limits_is_verified_by_the_stdlib(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    event, line = _seal({"deep": value})
    assert _agree(line[:-1], None) == ("ok", event)


def test_nesting_beyond_every_parser_is_malformed_not_a_traceback():
    line = b'{"actor":"user",' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert _agree(line, None)[:2] == ("error", "LEDGER_MALFORMED")


def _ledger_file(tmp_path, count, *, tail=b""):
    prev, lines = None, []
    for index in range(count):
        event, line = _seal({"value": index, "text": "é😀\n" * (index % 5)}, prev)
        prev = event["event_hash"]
        lines.append(line)
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(b"".join(lines) + tail)
    return str(path)


def _state(verified):
    return (verified.size, verified.count, verified.last_hash, verified.last_line_start, verified.torn_tail,
            verified.state)


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
@pytest.mark.parametrize("tail", [b"", b'{"actor":"us'])
def test_fold_stream_equals_fold_lines_across_chunk_boundaries(tmp_path, monkeypatch, chunk, tail):
    path = _ledger_file(tmp_path, 40, tail=tail)
    monkeypatch.setattr(bulk_verify, "CHUNK", chunk)
    data = open(path, "rb").read()
    reducer = CountingReducer()
    expected = ledger.fold_lines(data, ledger.empty_verified(reducer), reducer, project_id=PROJECT)
    fd = os.open(path, os.O_RDONLY)
    try:
        seen = []
        got = bulk_verify.fold_stream(fd, ledger.empty_verified(reducer), reducer, project_id=PROJECT,
                                      end=len(data), on_event=lambda e, a, b: seen.append((a, b)))
    finally:
        os.close(fd)
    assert _state(got) == _state(expected)
    assert got.torn_tail == len(tail)
    assert seen[0][0] == 0 and seen[-1][1] == got.size and len(seen) == 40


def test_fold_stream_reports_damage_with_the_valid_prefix(tmp_path):
    path = _ledger_file(tmp_path, 10)
    data = bytearray(open(path, "rb").read())
    fifth = [i for i, b in enumerate(data) if b == 10][4] + 1  # start of line 6
    data[fifth + 40] ^= 1
    open(path, "wb").write(bytes(data))
    reducer = CountingReducer()
    verified = ledger.empty_verified(reducer)
    fd = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(IntentLoopError) as caught:
            bulk_verify.fold_stream(fd, verified, reducer, project_id=PROJECT, end=len(data))
    finally:
        os.close(fd)
    assert caught.value.line == 6 and caught.value.code in ("LEDGER_MALFORMED", "LEDGER_HASH_MISMATCH")
    assert verified.count == 5 and verified.size == fifth


def test_bulk_loads_turns_deep_nesting_into_value_error():
    with pytest.raises(ValueError):
        bulk_verify.loads(b"[" * 100000 + b"]" * 100000)
    assert bulk_verify.loads(b'{"n":18446744073709551616}') == {"n": 2**64}


def _request_ledger():
    """Sealed lines of requests of 1, 3 and 2 events (request_event_count on each first event), a
    replace-protocol request without the marker, and another 2-event request."""
    prev, lines = None, []
    for request, size, marked in (("r1", 1, True), ("r2", 3, True), ("r3", 1, False), ("r4", 2, True)):
        for index in range(size):
            payload = {"value": f"{request}-{index}", "text": "é\n😀"}
            if index == 0 and marked:
                payload[ledger.REQUEST_EVENT_COUNT] = size
            draft = ledger.Draft("test_appended", TASK, "user", payload)
            event, line = sealing.seal(draft, project_id=PROJECT, request_id=request, prev_hash=prev,
                                       occurred_at="2026-01-01T00:00:00.000Z")
            prev = event["event_hash"]
            lines.append(line)
    return b"".join(lines)


def _fold_both(tmp_path, data, chunk=64):
    def outcome(fold):
        reducer = CountingReducer()
        verified = ledger.empty_verified(reducer)
        try:
            fold(verified, reducer)
        except IntentLoopError as exc:
            return ("error", exc.code, exc.line, _state(verified))
        return ("ok", _state(verified), verified.missing_lf)

    path = tmp_path / "ledger.jsonl"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        stream = outcome(lambda v, r: bulk_verify.fold_stream(fd, v, r, project_id=PROJECT, end=len(data)))
    finally:
        os.close(fd)
    lines = outcome(lambda v, r: ledger.fold_lines(data, v, r, project_id=PROJECT))
    return stream, lines


def test_fold_stream_follows_the_request_rule_at_every_cut(tmp_path, monkeypatch):
    """Every prefix of a ledger with multi-event requests: complete requests only, torn tails,
    a last line without its LF, exactly as ledger.fold_lines decides."""
    monkeypatch.setattr(bulk_verify, "CHUNK", 97)
    data = _request_ledger()
    outcomes = set()
    for cut in range(len(data) + 1):
        stream, lines = _fold_both(tmp_path, data[:cut])
        assert stream == lines, cut
        outcomes.add((stream[0], stream[2] if stream[0] == "ok" else stream[1]))
    assert ("ok", True) in outcomes and ("ok", False) in outcomes  # missing-LF cuts were among them


def test_fold_stream_calls_an_incomplete_request_followed_by_another_malformed(tmp_path):
    data = _request_ledger().split(b"\n")
    broken = b"\n".join(data[:2] + data[4:]) + b"\n"  # request r2 loses its last two lines, r3 follows
    stream, lines = _fold_both(tmp_path, broken)
    assert stream == lines
    assert stream[:2] == ("error", "LEDGER_CHAIN_BROKEN") or stream[:2] == ("error", "LEDGER_MALFORMED")


def test_fold_stream_continues_after_a_missing_lf(tmp_path):
    data = _request_ledger()
    first = data.index(b"\n") + 1
    path = tmp_path / "ledger.jsonl"
    path.write_bytes(data[:first - 1])  # one request, its LF missing
    reducer = CountingReducer()
    fd = os.open(path, os.O_RDONLY)
    verified = bulk_verify.fold_stream(fd, ledger.empty_verified(reducer), reducer, project_id=PROJECT,
                                       end=first - 1)
    os.close(fd)
    assert verified.missing_lf and verified.count == 1 and verified.torn_tail == 0
    path.write_bytes(data)  # the next append wrote the LF first, then its lines
    fd = os.open(path, os.O_RDONLY)
    try:
        bulk_verify.fold_stream(fd, verified, reducer, project_id=PROJECT, end=len(data))
    finally:
        os.close(fd)
    expected = ledger.fold_lines(data, ledger.empty_verified(CountingReducer()), CountingReducer(),
                                 project_id=PROJECT)
    assert _state(verified) == _state(expected) and not verified.missing_lf


_ENVELOPE_VARIANTS = [
    ("event_id", "not-a-uuid"), ("event_id", "12345678-1234-4234-8234-123456789ABC"),
    ("event_id", "12345678-1234-4234-8234-123456789abc-"), ("event_id", "123456781-234-4234-8234-123456789abc"),
    ("event_id", 5), ("event_id", None),
    ("task_id", "12345678-1234-4234-8234-123456789ABC"), ("task_id", "x"), ("task_id", 5), ("task_id", None),
    ("actor", "root"), ("actor", 1), ("actor", None), ("actor", "evidence"),
    ("event_type", ""), ("event_type", 5), ("event_type", None), ("event_type", '"quoted'), ("event_type", "\\x"),
    ("occurred_at", "2026-01-01T00:00:00"), ("occurred_at", 5), ("occurred_at", "Z"),
    ("request_id", 5), ("request_id", None), ("request_id", ""),
    ("payload", []), ("payload", "x"), ("payload", None),
    ("project_id", "q" * 64), ("project_id", 5), ("schema_version", 2), ("schema_version", True),
]


_VALID_VARIANTS = [("task_id", None), ("actor", "evidence"), ("event_type", '"quoted'), ("event_type", "\\x"),
                   ("request_id", ""), ("occurred_at", "Z")]


@pytest.mark.parametrize(("field", "value"), _ENVELOPE_VARIANTS)
def test_envelope_rules_hold_on_the_fast_paths(tmp_path, field, value):
    """A line that is canonical and correctly hashed but breaks an envelope rule is judged alike by
    the stdlib verifier and both fast paths (verify_line, and fold_stream's inlined loop)."""
    first, first_line = _seal({"n": 1})
    event = dict(first, **{field: value})
    second, second_line = sealing.chain(event, prev_hash=first["event_hash"])
    _agree(second_line[:-1], first["event_hash"])
    stream, lines = _fold_both(tmp_path, first_line + second_line, chunk=1 << 20)
    assert stream == lines
    valid = (field, value) in _VALID_VARIANTS
    assert lines[0] == ("ok" if valid else "error")


def _canonical_outcome(fn, value):
    try:
        return ("ok", fn(value))
    except IntentLoopError as exc:
        return ("error", exc.code)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(payload=st.dictionaries(_text, _json, max_size=5))
def test_the_bulk_canonical_form_is_the_stdlib_one(payload):
    """bulk_verify.canonical_bytes (orjson where it writes the same bytes; the rewrite of a deletion
    re-chains every later line with it) gives exactly canonical.canonical_bytes, or its error."""
    from intent_loop.base import canonical

    event = {"actor": "user", "payload": payload, "prev_hash": None, "task_id": TASK}
    assert (_canonical_outcome(bulk_verify.canonical_bytes, event)
            == _canonical_outcome(canonical.canonical_bytes, event))
    parsed = json.loads(json.dumps(payload))  # what a parsed ledger line holds
    assert bulk_verify.canonical_bytes(parsed) == canonical.canonical_bytes(parsed)

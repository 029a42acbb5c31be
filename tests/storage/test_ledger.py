"""The ledger: hashing, verification, the derived cache, request ids, torn tails, modes, transactions."""
import hashlib
import json
import os
import re
import shutil
import stat
import time
import uuid

import pytest

from helpers.counting import OPERATION, CountingReducer, append_value, drafts_for
from helpers.files import all_paths, files_containing, ledger_lines, read_bytes
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import ledger, reading, replacement, sealing, transaction
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.cache import checkpoint

ENVELOPE = {"schema_version", "event_id", "event_type", "project_id", "task_id", "occurred_at",
            "actor", "request_id", "payload", "prev_hash", "event_hash"}
UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


# -- an independent implementation of the format, to check the engine against -------------------

def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _hash_of(event):
    body = {k: v for k, v in event.items() if k != "event_hash"}
    return hashlib.sha256(_canonical(body).encode()).hexdigest()


def _line(event):
    return _canonical(event).encode()


def _reseal(event):
    """The event with a correct event_hash for whatever it now contains."""
    event = dict(event)
    event["event_hash"] = _hash_of(event)
    return event


def _fill(project, count, *, prefix="v"):
    for index in range(count):
        append_value(project, CountingReducer(), f"{prefix}{index}", request_id=f"{prefix}-req-{index}")


def _write_lines(project, lines, *, tail=b""):
    with open(project.ledger, "wb") as fh:
        fh.write(b"".join(line + b"\n" for line in lines) + tail)


def _drop_cache(project):
    shutil.rmtree(project.cache_dir, ignore_errors=True)


def _result(verified):
    return (verified.count, verified.size, verified.last_hash, verified.state)


def _code_and_line(call):
    with pytest.raises(IntentLoopError) as info:
        call()
    return info.value.code, info.value.line


# -- the format ------------------------------------------------------------------------------------

def test_ledger_lines_are_canonical_and_hash_chained(project):
    _fill(project, 4)
    append_value(project, CountingReducer(), "multi", request_id="multi-req", events=3)

    data = read_bytes(project.ledger)
    lines = ledger_lines(project.ledger)
    prev = None

    assert data.endswith(b"\n") and len(lines) == 7
    for line in lines:
        event = json.loads(line)
        assert set(event) == ENVELOPE
        assert line == _line(event)
        assert event["event_hash"] == _hash_of(event)
        assert event["prev_hash"] == prev
        assert event["schema_version"] == 1 and event["project_id"] == project.project_id
        assert UUID4.match(event["event_id"]) and RFC3339_UTC.match(event["occurred_at"])
        prev = event["event_hash"]


def test_request_events_share_the_id_and_the_first_carries_the_fingerprint(project):
    mutation = append_value(project, CountingReducer(), "three", request_id="req-3", events=3)
    events, _ = mutation.events, mutation.replayed

    stored = [json.loads(line) for line in ledger_lines(project.ledger)]
    fingerprint_input = _canonical({"operation": OPERATION, "params": {"value": "three"}})
    fingerprint = hashlib.sha256(fingerprint_input.encode()).hexdigest()

    assert stored == events
    assert [e["request_id"] for e in stored] == ["req-3"] * 3
    assert stored[0]["payload"]["request_fingerprint"] == fingerprint
    assert all("request_fingerprint" not in e["payload"] for e in stored[1:])
    assert sealing.request_fingerprint(OPERATION, {"value": "three"}) == fingerprint


# A frozen schema-1 ledger written by an independent implementation (json.dumps + hashlib):
# the v1 "migration" is identity, so it must read as is and stay a byte-identical prefix.
FIXTURE_PROJECT_ID = "89160e75ad73ff5e8d8b81c5860fd0cc3ca8d7ab92f0203667f4a9aff083bf25"
FIXTURE_V1 = (
    b'{"actor":"user","event_hash":"a93363ee7ec577ed58bbd79f3f66df3cddd920bcb217fec8b8e4dda8b45464bb",'
    b'"event_id":"0b7e3f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b","event_type":"test_appended",'
    b'"occurred_at":"2026-08-28T10:00:00.000Z","payload":{"request_fingerprint":'
    b'"7009f277826e051475f9d29f28df5f8d29fbe933e82c9da87e89f116f32158de","value":"fixture-0"},'
    b'"prev_hash":null,"project_id":"89160e75ad73ff5e8d8b81c5860fd0cc3ca8d7ab92f0203667f4a9aff083bf25",'
    b'"request_id":"fixture-0","schema_version":1,"task_id":null}\n'
    b'{"actor":"agent","event_hash":"2fe3e786222b3c14846a4c78b4f2baa9fba12cbe9a084a258611d3d906217e83",'
    b'"event_id":"1c8f4a5b-2d3e-4f60-9bac-1d2e3f4a5b6c","event_type":"test_appended",'
    b'"occurred_at":"2026-08-28T10:00:01.250Z","payload":{"request_fingerprint":'
    b'"f5f5085000d450ce242f576758da8e900ff61b3ee39b79f48dd27e4a08d71824","value":"Z\xc3\xbcrich \\"q\\" \\n"},'
    b'"prev_hash":"a93363ee7ec577ed58bbd79f3f66df3cddd920bcb217fec8b8e4dda8b45464bb",'
    b'"project_id":"89160e75ad73ff5e8d8b81c5860fd0cc3ca8d7ab92f0203667f4a9aff083bf25",'
    b'"request_id":"fixture-1","schema_version":1,"task_id":"2d9a5b6c-3e4f-4071-8cbd-2e3f4a5b6c7d"}\n'
)


def test_frozen_v1_fixture_reads_and_stays_a_byte_identical_prefix(data_root):
    project = paths_mod.ProjectPaths(data_root, FIXTURE_PROJECT_ID)
    paths_mod.ensure_project_layout(project)
    with open(project.ledger, "wb") as fh:
        fh.write(FIXTURE_V1)

    state = reading.load_verified(project, CountingReducer()).state
    mutation = append_value(project, CountingReducer(), "fixture-0", request_id="fixture-0")
    replay, replayed = mutation.events, mutation.replayed
    append_value(project, CountingReducer(), "after", request_id="after-fixture")

    assert state == {"count": 2, "values": ["fixture-0", 'Zürich "q" \n']}
    assert replayed and replay[0]["event_id"] == "0b7e3f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"
    assert read_bytes(project.ledger).startswith(FIXTURE_V1)
    assert reading.verify_all(project, CountingReducer()).count == 3


# -- verification stops at the first bad line, with its code and number --------------------------

def _tamper_byte(lines):
    lines[2] = lines[2].replace(b'"value":"v2"', b'"value":"x2"')


def _reorder(lines):
    lines[1], lines[2] = lines[2], lines[1]


def _spacing(lines):
    lines[2] = json.dumps(json.loads(lines[2]), sort_keys=True, ensure_ascii=False).encode()


def _resealed(change):
    def tamper(lines):
        event = json.loads(lines[2])
        change(event)
        lines[2] = _line(_reseal(event))
    return tamper


def _first_prev_hash(lines):
    event = json.loads(lines[0])
    event["prev_hash"] = "0" * 64
    lines[0] = _line(_reseal(event))


def _blank_line(lines):
    lines.insert(2, b"")


def _crlf(lines):
    lines[2] = lines[2] + b"\r"


def _not_utf8(lines):
    lines[2] = lines[2].replace(b'"value":"v2"', b'"value":"\xff2"')


def _delete_middle(lines):
    del lines[2]


def _not_an_object(lines):
    lines[2] = b"[1,2,3]"


TAMPERS = [
    ("byte-flip", _tamper_byte, ErrorCode.LEDGER_HASH_MISMATCH, 3),
    ("reordered", _reorder, ErrorCode.LEDGER_CHAIN_BROKEN, 2),
    ("spacing", _spacing, ErrorCode.LEDGER_MALFORMED, 3),
    ("schema-2", _resealed(lambda e: e.update(schema_version=2)), ErrorCode.FUTURE_SCHEMA, 3),
    ("foreign", _resealed(lambda e: e.update(project_id="f" * 64)), ErrorCode.FOREIGN_PROJECT, 3),
    ("extra-key", _resealed(lambda e: e.update(extra=1)), ErrorCode.LEDGER_MALFORMED, 3),
    ("missing-key", _resealed(lambda e: e.pop("task_id")), ErrorCode.LEDGER_MALFORMED, 3),
    ("bad-actor", _resealed(lambda e: e.update(actor="root")), ErrorCode.LEDGER_MALFORMED, 3),
    ("bad-event-id", _resealed(lambda e: e.update(event_id="not-a-uuid")), ErrorCode.LEDGER_MALFORMED, 3),
    ("local-time", _resealed(lambda e: e.update(occurred_at="2026-08-28T10:00:00+02:00")),
     ErrorCode.LEDGER_MALFORMED, 3),
    ("payload-list", _resealed(lambda e: e.update(payload=[])), ErrorCode.LEDGER_MALFORMED, 3),
    ("schema-0", _resealed(lambda e: e.update(schema_version=0)), ErrorCode.LEDGER_MALFORMED, 3),
    ("schema-str", _resealed(lambda e: e.update(schema_version="1")), ErrorCode.LEDGER_MALFORMED, 3),
    ("first-prev", _first_prev_hash, ErrorCode.LEDGER_CHAIN_BROKEN, 1),
    ("blank-line", _blank_line, ErrorCode.LEDGER_MALFORMED, 3),
    ("crlf", _crlf, ErrorCode.LEDGER_MALFORMED, 3),
    ("not-utf8", _not_utf8, ErrorCode.LEDGER_MALFORMED, 3),
    ("not-object", _not_an_object, ErrorCode.LEDGER_MALFORMED, 3),
    ("deleted-middle", _delete_middle, ErrorCode.LEDGER_CHAIN_BROKEN, 3),
]


@pytest.mark.parametrize(("tamper", "code", "line"), [t[1:] for t in TAMPERS], ids=[t[0] for t in TAMPERS])
def test_verification_reports_code_and_line(project, tamper, code, line):
    _fill(project, 5)
    lines = ledger_lines(project.ledger)
    tamper(lines)
    _write_lines(project, lines)
    _drop_cache(project)
    before = read_bytes(project.ledger)

    assert _code_and_line(lambda: reading.verify_all(project, CountingReducer())) == (code, line)
    assert _code_and_line(lambda: reading.load_verified(project, CountingReducer())) == (code, line)
    assert _code_and_line(lambda: append_value(project, CountingReducer(), "new", request_id="new")) == (code, line)
    assert read_bytes(project.ledger) == before


@pytest.mark.parametrize("bad_value", [b'"\\ud800"', b"1e400"], ids=["escaped-lone-surrogate", "float-overflow"])
def test_verification_of_unrepresentable_values_is_malformed_with_line(project, bad_value):
    """JSON that parses but cannot be canonical again is a malformed record at its line (not INVALID_TEXT)."""
    _fill(project, 5)
    lines = ledger_lines(project.ledger)
    lines[2] = lines[2].replace(b'"value":"v2"', b'"value":' + bad_value)
    _write_lines(project, lines)

    code, line = _code_and_line(lambda: reading.verify_all(project, CountingReducer()))

    assert (code, line) == (ErrorCode.LEDGER_MALFORMED, 3)


def test_full_verification_ignores_the_cache(project):
    _fill(project, 5)
    reading.load_verified(project, CountingReducer())
    lines = ledger_lines(project.ledger)
    _tamper_byte(lines)
    _write_lines(project, lines)

    assert _code_and_line(lambda: reading.verify_all(project, CountingReducer())) == (ErrorCode.LEDGER_HASH_MISMATCH, 3)


def test_verify_all_on_missing_project_is_empty(project):
    assert reading.verify_all(project, CountingReducer()).count == 0
    assert not os.path.exists(project.data_root)


# -- the derived cache ---------------------------------------------------------------------------

def _state_file(project):
    return os.path.join(project.cache_dir, checkpoint.ROOT_FILE)


def _edit_cache(project, change):
    """Edit the JSON document in the cache root by hand, keeping any bytes before it (a digest)."""
    raw = read_bytes(_state_file(project))
    start = raw.index(b"{")
    doc = json.loads(raw[start:])
    change(doc)
    _write_cache(project, raw[:start] + json.dumps(doc).encode())


def _write_cache(project, data):
    with open(_state_file(project), "wb") as fh:
        fh.write(data)


def _cache_to_dir(project):
    os.unlink(_state_file(project))
    os.mkdir(_state_file(project))


CORRUPTIONS = {
    "deleted-dir": _drop_cache,
    "deleted-file": lambda p: os.unlink(_state_file(p)),
    "empty": lambda p: _write_cache(p, b""),
    "truncated": lambda p: _write_cache(p, read_bytes(_state_file(p))[:40]),
    "garbage": lambda p: _write_cache(p, os.urandom(200)),
    "json-list": lambda p: _write_cache(p, b"[1,2]"),
    "format-1": lambda p: _edit_cache(p, lambda d: d.update(format=1)),
    "format-3": lambda p: _edit_cache(p, lambda d: d.update(format=3)),
    "other-reducer": lambda p: _edit_cache(p, lambda d: d.update(reducer="other")),
    "other-project": lambda p: _edit_cache(p, lambda d: d.update(project_id="0" * 64)),
    "no-verified": lambda p: _edit_cache(p, lambda d: d.pop("verified")),
    "no-state": lambda p: _edit_cache(p, lambda d: d.pop("state")),
    "wrong-identity": lambda p: _edit_cache(p, lambda d: d.update(identity=[1, 2, 3, 4])),
    "wrong-last-hash": lambda p: _edit_cache(p, lambda d: d["verified"].update(last_hash="0" * 64)),
    "size-past-end": lambda p: _edit_cache(p, lambda d: d["verified"].update(size=10**9)),
    "wrong-line-start": lambda p: _edit_cache(p, lambda d: d["verified"].update(last_line_start=7)),
    "size-string": lambda p: _edit_cache(p, lambda d: d["verified"].update(size="12")),
    "size-float": lambda p: _edit_cache(p, lambda d: d["verified"].update(size=12.5)),
    "negative-line-start": lambda p: _edit_cache(p, lambda d: d["verified"].update(last_line_start=-5)),
    "state-list": lambda p: _edit_cache(p, lambda d: d.update(state=[])),
    "directory": _cache_to_dir,
}


@pytest.mark.parametrize("corrupt", list(CORRUPTIONS.values()), ids=list(CORRUPTIONS))
def test_deleting_or_corrupting_the_cache_never_changes_a_result(project, corrupt):
    _fill(project, 6)
    truth = _result(reading.verify_all(project, CountingReducer()))
    assert _result(reading.load_verified(project, CountingReducer())) == truth

    corrupt(project)
    read_back = _result(reading.load_verified(project, CountingReducer()))
    if os.path.isfile(_state_file(project)):  # the read rebuilt it: damage it again for the writer
        corrupt(project)
    append_value(project, CountingReducer(), "after", request_id="after-corruption")

    assert read_back == truth
    truth_after = _result(reading.verify_all(project, CountingReducer()))
    assert _result(reading.load_verified(project, CountingReducer())) == truth_after
    assert reading.load_verified(project, CountingReducer()).state["values"][-1] == "after"


LIES = {
    "count": lambda d: d["state"].update(count=d["state"]["count"] + 100),
    "values": lambda d: d["state"].update(values=["forged"] * len(d["state"]["values"])),
    "checkpoint-count": lambda d: d["verified"].update(count=d["verified"]["count"] + 100),
}


@pytest.mark.parametrize("lie", list(LIES.values()), ids=list(LIES))
@pytest.mark.parametrize("path", ["read", "after-mutation"])
def test_cache_edited_to_lie_is_detected_or_ignored(project, lie, path):
    """An edit that keeps the ledger identity must still not change what a caller sees."""
    _fill(project, 6)
    reading.load_verified(project, CountingReducer())
    _edit_cache(project, lie)
    if path == "after-mutation":
        append_value(project, CountingReducer(), "after", request_id="after-lie")
    truth = _result(reading.verify_all(project, CountingReducer()))

    assert _result(reading.load_verified(project, CountingReducer())) == truth


def test_cache_is_rebuilt_after_deletion(project):
    _fill(project, 3)
    _drop_cache(project)
    reading.load_verified(project, CountingReducer())

    assert not os.path.exists(project.cache_dir)  # reads never create directories
    paths_mod.ensure_project_layout(project)
    reading.load_verified(project, CountingReducer())

    assert os.path.isfile(_state_file(project))


# -- incremental verification: work proportional to what is new ---------------------------------

def _checkpoint_then_append(project, *, before, after):
    """`before` events, a saved checkpoint, `after` more events, then the old checkpoint restored."""
    _fill(project, before, prefix="a")
    reading.load_verified(project, CountingReducer())
    old_checkpoint = read_bytes(_state_file(project))
    _fill(project, after, prefix="b")
    _write_cache(project, old_checkpoint)


def test_reader_verifies_only_the_suffix_after_the_checkpoint(project):
    _checkpoint_then_append(project, before=7, after=3)
    counting = CountingReducer()

    verified = reading.load_verified(project, counting)

    assert counting.applied == 3
    assert _result(verified) == _result(reading.verify_all(project, CountingReducer()))


def test_writer_verifies_only_the_suffix_after_the_checkpoint(project):
    _checkpoint_then_append(project, before=7, after=3)
    counting = CountingReducer()

    append_value(project, counting, "new", request_id="new")

    assert counting.applied == 3 + 1  # the suffix, then the new event
    assert reading.load_verified(project, CountingReducer()).state["count"] == 11


def _mutate_resuming(project, reducer, value, resume):
    return transaction.mutate(project, reducer, request_id=f"resume-{value}", operation=OPERATION,
                         params={"value": value},
                         plan=lambda _state: drafts_for(value), deadline=time.monotonic() + 10, resume=resume)


def test_a_transaction_resumes_a_lock_free_read_and_folds_what_others_appended_since(project):
    _fill(project, 5)
    read = reading.load_verified(project, CountingReducer())
    _fill(project, 2, prefix="other")  # another process wrote after our lock-free read
    counting = CountingReducer()

    _mutate_resuming(project, counting, "mine", read)

    assert counting.applied == 2 + 1  # only the two foreign lines, then ours: no cache parse, no replay
    assert read.state["count"] == 8 and read.state["values"][-1] == "mine"
    assert _result(read) == _result(reading.verify_all(project, CountingReducer()))


def test_a_resumed_read_that_no_longer_matches_the_bytes_is_dropped_for_a_full_replay(project):
    _fill(project, 4)
    read = reading.load_verified(project, CountingReducer())
    read.state["values"].append("a lie the bytes do not support")
    read.last_hash = "0" * 64  # the checkpoint's last line no longer hashes to it
    counting = CountingReducer()

    _mutate_resuming(project, counting, "mine", read)

    assert counting.applied == 4 + 1
    truth = reading.verify_all(project, CountingReducer())
    assert truth.state["count"] == 5 and "a lie the bytes do not support" not in truth.state["values"]
    assert _result(reading.load_verified(project, CountingReducer())) == _result(truth)


def test_current_cache_means_no_replay_and_deleted_cache_means_full_replay(project):
    _fill(project, 9)
    warm, cold = CountingReducer(), CountingReducer()

    reading.load_verified(project, warm)
    _drop_cache(project)
    reading.load_verified(project, cold)

    assert (warm.applied, cold.applied) == (0, 9)


# -- request ids: idempotent retries ------------------------------------------------------------------

def test_exact_retry_returns_the_same_events_and_appends_nothing(project):
    _fill(project, 2)
    mutation = append_value(project, CountingReducer(), "x", request_id="req-x", events=2)
    first, replayed_first = mutation.events, mutation.replayed
    before = read_bytes(project.ledger)

    mutation = append_value(project, CountingReducer(), "x", request_id="req-x", events=2)
    again, replayed_again = mutation.events, mutation.replayed

    assert (replayed_first, replayed_again) == (False, True)
    assert again == first
    assert read_bytes(project.ledger) == before


def test_retry_of_an_older_request_after_later_ones_still_replays(project):
    mutation = append_value(project, CountingReducer(), "old", request_id="old")
    first, _ = mutation.events, mutation.replayed
    _fill(project, 5)

    mutation = append_value(project, CountingReducer(), "old", request_id="old")
    again, replayed = mutation.events, mutation.replayed

    assert replayed and again == first
    assert reading.verify_all(project, CountingReducer()).count == 6


def test_parameter_key_order_does_not_change_the_fingerprint(project):
    def mutate(params):
        return transaction.mutate(project, CountingReducer(), request_id="same", operation="op", params=params,
                             plan=lambda _s: drafts_for("p"), deadline=time.monotonic() + 10)

    mutation = mutate({"a": 1, "b": [1, 2], "c": {"y": 1, "x": 2}})
    first, _ = mutation.events, mutation.replayed
    mutation = mutate({"c": {"x": 2, "y": 1}, "b": [1, 2], "a": 1})
    again, replayed = mutation.events, mutation.replayed

    assert replayed and again == first


@pytest.mark.parametrize(("operation", "params"), [(OPERATION, {"value": "other"}), ("test.other", {"value": "x"})],
                         ids=["other-params", "other-operation"])
def test_same_request_id_with_other_parameters_is_reused(project, operation, params):
    append_value(project, CountingReducer(), "x", request_id="req-x")
    before = read_bytes(project.ledger)

    with pytest.raises(IntentLoopError) as info:
        transaction.mutate(project, CountingReducer(), request_id="req-x", operation=operation, params=params,
                      plan=lambda _s: drafts_for("y"), deadline=time.monotonic() + 10)

    assert info.value.code == ErrorCode.REQUEST_ID_REUSED
    assert read_bytes(project.ledger) == before


def test_fingerprint_holds_no_raw_parameter_body(project):
    append_value(project, CountingReducer(), "x", request_id="req-x", extra={})
    transaction.mutate(project, CountingReducer(), request_id="secret-params", operation="op",
                  params={"token": "PARAM-BODY-MARKER"}, plan=lambda _s: drafts_for("y"),
                  deadline=time.monotonic() + 10)

    assert files_containing(project.data_root, b"PARAM-BODY-MARKER") == []


def test_retry_replays_even_when_a_payload_mentions_the_request_id(project):
    """A payload may record another request's id (e.g. "retry_of"); the lookup must not stop there."""
    append_value(project, CountingReducer(), "note", request_id="req-a", extra={"request_id": "req-b"})
    mutation = append_value(project, CountingReducer(), "b", request_id="req-b")
    first, _ = mutation.events, mutation.replayed

    mutation = append_value(project, CountingReducer(), "b", request_id="req-b")
    again, replayed = mutation.events, mutation.replayed

    assert replayed and again == first
    assert reading.verify_all(project, CountingReducer()).count == 2


@pytest.mark.parametrize(
    "request_id",
    ["", "a" * 201, "has space", "ünicode", "line\nbreak", "a/b", "quote\"", "back\\slash", "tab\t", None, 42],
    ids=["empty", "too-long", "space", "non-ascii", "newline", "slash", "quote", "backslash", "tab", "none", "int"],
)
def test_invalid_request_ids_are_rejected_before_anything_is_created(project, request_id):
    with pytest.raises(IntentLoopError) as info:
        append_value(project, CountingReducer(), "x", request_id=request_id)

    assert info.value.code == ErrorCode.INVALID_REQUEST_ID
    assert not os.path.exists(project.data_root)


@pytest.mark.parametrize("request_id", ["a" * 200, "A-z_0.9:@-", "x"])
def test_valid_request_id_edges_are_accepted(project, request_id):
    mutation = append_value(project, CountingReducer(), "x", request_id=request_id)
    events, replayed = mutation.events, mutation.replayed

    assert not replayed and events[0]["request_id"] == request_id


def test_transaction_append_checks_the_request_id(project):
    with transaction.Transaction(project, CountingReducer(), deadline=time.monotonic() + 10) as tx:
        with pytest.raises(IntentLoopError) as info:
            tx.append(drafts_for("x"), request_id="bad id", fingerprint="0" * 64)

    assert info.value.code == ErrorCode.INVALID_REQUEST_ID
    assert not os.path.exists(project.ledger)


# -- torn tails ------------------------------------------------------------------------------------

TORN_MARKER = b"TORN-TAIL-SECRET-7f3a"


def _torn_tail(kind, project):
    if kind == "partial":
        return b'{"actor":"user","event_hash":"' + TORN_MARKER
    event = json.loads(ledger_lines(project.ledger)[-1])
    event.update(prev_hash=event["event_hash"], event_id="6f1d2c3b-4a59-4687-9abc-def012345678",
                 request_id="torn", payload={"value": TORN_MARKER.decode(), "request_event_count": 2})
    return _line(_reseal(event)) + b"\n"  # the first of a request's two lines: the second never came


@pytest.mark.parametrize("kind", ["partial", "incomplete-request"])
def test_torn_tail_is_ignored_by_reads_and_quarantined_by_digest_only(project, kind):
    _fill(project, 3)
    tail = _torn_tail(kind, project)
    with open(project.ledger, "ab") as fh:
        fh.write(tail)
    clean = read_bytes(project.ledger)[: -len(tail)]

    read_state = reading.load_verified(project, CountingReducer()).state
    after_read = read_bytes(project.ledger)
    assert os.listdir(project.quarantine_dir) == []
    mutation = append_value(project, CountingReducer(), "next", request_id="next")
    events, _ = mutation.events, mutation.replayed

    assert read_state["count"] == 3 and after_read == clean + tail
    (record_name,) = os.listdir(project.quarantine_dir)
    record_bytes = read_bytes(os.path.join(project.quarantine_dir, record_name))
    record = json.loads(record_bytes)
    assert record["byte_length"] == len(tail)
    assert record["sha256"] == hashlib.sha256(tail).hexdigest()
    assert set(record) <= {"kind", "byte_length", "sha256", "offset", "detected_at"}
    assert TORN_MARKER not in record_bytes and tail not in record_bytes
    assert files_containing(project.data_root, TORN_MARKER) == []
    assert read_bytes(project.ledger) == clean + _line(events[0]) + b"\n"
    assert reading.verify_all(project, CountingReducer()).count == 4


def _next_event(project, *, request_id, value, count=None):
    event = json.loads(ledger_lines(project.ledger)[-1])
    payload = {"value": value} if count is None else {"value": value, "request_event_count": count}
    event.update(prev_hash=event["event_hash"], event_id=str(uuid.uuid4()), request_id=request_id, payload=payload)
    return _reseal(event)


def test_a_last_line_without_its_lf_is_projected_and_the_next_append_writes_the_lf_first(project):
    _fill(project, 2)
    with open(project.ledger, "ab") as fh:
        fh.write(_line(_next_event(project, request_id="hand-edited", value="kept")))  # no LF
    before = read_bytes(project.ledger)

    assert reading.load_verified(project, CountingReducer()).state["values"] == ["v0", "v1", "kept"]
    assert reading.load_verified(project, CountingReducer()).count == 3  # the cached checkpoint agrees
    mutation = append_value(project, CountingReducer(), "next", request_id="next")

    assert read_bytes(project.ledger) == before + b"\n" + _line(mutation.events[0]) + b"\n"
    assert os.listdir(project.quarantine_dir) == []
    assert reading.verify_all(project, CountingReducer()).state["values"] == ["v0", "v1", "kept", "next"]
    with pytest.raises(IntentLoopError) as info:  # found under its id: the line was indexed like any other
        append_value(project, CountingReducer(), "kept", request_id="hand-edited")
    assert info.value.code == ErrorCode.REQUEST_ID_REUSED  # (the hand-made line has no fingerprint)


def test_complete_lines_of_an_unfinished_request_are_not_projected_until_cut(project):
    _fill(project, 1)
    first = _next_event(project, request_id="cut-short", value="a", count=3)
    second = dict(first, prev_hash=first["event_hash"], event_id=str(uuid.uuid4()), payload={"value": "b"})
    second = _reseal(second)
    with open(project.ledger, "ab") as fh:
        fh.write(_line(first) + b"\n" + _line(second) + b"\n")

    read = reading.load_verified(project, CountingReducer())
    assert read.state["values"] == ["v0"] and read.count == 1 and read.torn_tail > 0
    append_value(project, CountingReducer(), "after", request_id="after")

    (record_name,) = os.listdir(project.quarantine_dir)
    record = json.loads(read_bytes(os.path.join(project.quarantine_dir, record_name)))
    assert record["kind"] == "incomplete_request"
    assert reading.verify_all(project, CountingReducer()).state["values"] == ["v0", "after"]


def test_an_unfinished_request_followed_by_another_request_is_damage(project):
    _fill(project, 1)
    first = _next_event(project, request_id="cut-short", value="a", count=2)
    other = dict(first, prev_hash=first["event_hash"], event_id=str(uuid.uuid4()), request_id="other",
                 payload={"value": "b", "request_event_count": 1})
    with open(project.ledger, "ab") as fh:
        fh.write(_line(first) + b"\n" + _line(_reseal(other)) + b"\n")

    with pytest.raises(IntentLoopError) as info:
        reading.verify_all(project, CountingReducer())
    assert info.value.code == ErrorCode.LEDGER_MALFORMED and info.value.line == 3


def test_every_append_says_how_many_events_its_request_has(project):
    append_value(project, CountingReducer(), "one", request_id="one")
    append_value(project, CountingReducer(), "three", request_id="three", events=3)
    payloads = [json.loads(line)["payload"] for line in ledger_lines(project.ledger)]
    assert [p.get("request_event_count") for p in payloads] == [1, 3, None, None]


def test_torn_tail_on_an_otherwise_empty_ledger(project):
    paths_mod.ensure_project_layout(project)
    with open(project.ledger, "wb") as fh:
        fh.write(b'{"actor":"us')

    assert reading.load_verified(project, CountingReducer()).count == 0
    append_value(project, CountingReducer(), "first", request_id="first")

    assert reading.verify_all(project, CountingReducer()).count == 1
    assert len(os.listdir(project.quarantine_dir)) == 1


# -- modes and what reads may create ---------------------------------------------------------------

def test_directories_are_0700_and_files_0600_whatever_the_umask(project):
    previous = os.umask(0)
    try:
        _fill(project, 2)
        with open(project.ledger, "ab") as fh:
            fh.write(b'{"partial')
        _fill(project, 1, prefix="after-torn")
        reading.load_verified(project, CountingReducer())
    finally:
        os.umask(previous)

    checked = [project.data_root] + all_paths(project.data_root)
    assert any(p.startswith(project.quarantine_dir + os.sep) for p in checked)
    for path in checked:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        expected = 0o700 if os.path.isdir(path) else 0o600
        assert mode == expected, f"{path} has mode {oct(mode)}"


def test_reads_create_nothing_without_a_project(project):
    verified = reading.load_verified(project, CountingReducer())

    assert verified.count == 0 and verified.state == CountingReducer().initial()
    assert not os.path.exists(project.data_root)


def test_reads_create_no_lock_and_no_directories(project):
    _fill(project, 2)
    _drop_cache(project)
    before = sorted(os.listdir(project.dir))

    reading.load_verified(project, CountingReducer())
    reading.verify_all(project, CountingReducer())

    assert sorted(os.listdir(project.dir)) == before


# -- transactions ------------------------------------------------------------------------------------

def test_transaction_holds_the_lock_and_appends_several_drafts(project):
    _fill(project, 2)
    with transaction.Transaction(project, CountingReducer(), deadline=time.monotonic() + 10) as tx:
        assert tx.state["count"] == 2
        owner = json.loads(read_bytes(os.path.join(project.lock_dir, "owner.json")))
        events = tx.append(drafts_for("tx") + drafts_for("tx2"), request_id="tx-req", fingerprint="f" * 64)
        found = tx.find_request("tx-req")
        state_inside = dict(tx.state)

    assert owner["token"] == tx.lock.token and owner["pid"] == os.getpid()
    assert found == events and len(events) == 2
    assert state_inside["count"] == 4
    assert not os.path.exists(project.lock_dir)
    assert reading.load_verified(project, CountingReducer()).state["values"] == ["v0", "v1", "tx", "tx2"]


def test_after_commit_runs_while_the_lock_is_held(project):
    seen = {}

    def after_commit(tx, mutation):
        seen.update(held=tx.lock.is_held(), lock_dir=os.path.isdir(project.lock_dir), count=len(mutation.events))
        return "written"

    mutation = transaction.mutate(project, CountingReducer(), request_id="ac", operation="op", params={},
                                  plan=lambda _s: drafts_for("ac"), deadline=time.monotonic() + 10,
                                  after_commit=after_commit)

    assert seen == {"held": True, "lock_dir": True, "count": 1}
    assert mutation.committed == "written"


def test_a_plans_detail_reaches_the_caller_and_after_commit(project):
    def plan(_state):
        return transaction.Planned(drafts_for("d"), detail={"chosen": 7})

    mutation = transaction.mutate(project, CountingReducer(), request_id="detail", operation="op", params={},
                                  plan=plan, deadline=time.monotonic() + 10,
                                  after_commit=lambda tx, m: m.detail["chosen"] * 2)
    assert (len(mutation.events), mutation.replayed, mutation.detail, mutation.committed) == \
        (1, False, {"chosen": 7}, 14)
    again = transaction.mutate(project, CountingReducer(), request_id="detail", operation="op", params={},
                               plan=plan, deadline=time.monotonic() + 10)
    assert again.replayed and again.detail is None and [e["event_id"] for e in again.events] == [
        e["event_id"] for e in mutation.events]
    assert not os.path.exists(project.lock_dir)


def test_failing_plan_writes_nothing_and_releases_the_lock(project):
    _fill(project, 2)
    before = read_bytes(project.ledger)

    def plan(_state):
        raise IntentLoopError(ErrorCode.INVALID_CLAIM, "domain says no")

    with pytest.raises(IntentLoopError):
        transaction.mutate(project, CountingReducer(), request_id="no", operation="op", params={}, plan=plan,
                      deadline=time.monotonic() + 10)

    assert read_bytes(project.ledger) == before
    assert not os.path.exists(project.lock_dir)


@pytest.mark.parametrize(
    ("draft", "code"),
    [
        (ledger.Draft("t", None, "root", {}), ErrorCode.INVALID_EVENT),
        (ledger.Draft("t", None, "user", {"text": "lone \ud800"}), ErrorCode.INVALID_TEXT),
        (ledger.Draft("t", None, "user", {"n": float("nan")}), ErrorCode.INVALID_EVENT),
    ],
    ids=["bad-actor", "lone-surrogate", "nan"],
)
def test_invalid_drafts_write_nothing(project, draft, code):
    _fill(project, 1)
    before = read_bytes(project.ledger)

    with pytest.raises(IntentLoopError) as info:
        transaction.mutate(project, CountingReducer(), request_id="bad", operation="op", params={},
                      plan=lambda _s: [draft], deadline=time.monotonic() + 10)

    assert info.value.code == code
    assert read_bytes(project.ledger) == before


def test_empty_plan_appends_nothing(project):
    mutation = transaction.mutate(project, CountingReducer(), request_id="empty", operation="op", params={},
                             plan=lambda _s: [], deadline=time.monotonic() + 10)
    events, replayed = mutation.events, mutation.replayed

    assert (events, replayed) == ([], False)
    assert reading.verify_all(project, CountingReducer()).count == 0


def test_deadline_already_passed_writes_nothing(project):
    _fill(project, 1)
    before = read_bytes(project.ledger)

    with pytest.raises(IntentLoopError) as info:
        transaction.mutate(project, CountingReducer(), request_id="late", operation="op", params={},
                      plan=lambda _s: drafts_for("late"), deadline=time.monotonic() - 1)

    assert info.value.code in (ErrorCode.DEADLINE_EXCEEDED, ErrorCode.LOCK_TIMEOUT)
    assert read_bytes(project.ledger) == before
    assert not os.path.exists(project.lock_dir)


def test_replace_ledger_verifies_the_new_bytes_first(project):
    _fill(project, 4)
    lines = ledger_lines(project.ledger)
    before = read_bytes(project.ledger)
    broken = lines[0] + b"\n" + lines[2] + b"\n"

    with transaction.Transaction(project, CountingReducer(), deadline=time.monotonic() + 10) as tx:
        with pytest.raises(IntentLoopError):
            replacement.replace_ledger(tx, broken, expect_count=2)
        unchanged = read_bytes(project.ledger)
        with pytest.raises(IntentLoopError):
            replacement.replace_ledger(tx, lines[0] + b"\n" + lines[1] + b"\n", expect_count=3)
        replacement.replace_ledger(tx, lines[0] + b"\n" + lines[1] + b"\n", expect_count=2)

    assert unchanged == before
    assert reading.verify_all(project, CountingReducer()).count == 2
    assert reading.load_verified(project, CountingReducer()).state["values"] == ["v0", "v1"]

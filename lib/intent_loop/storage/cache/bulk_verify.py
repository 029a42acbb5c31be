"""Streaming verification for the bulk paths: full verification, checkpoint rebuild, the daily scrub,
recovery, timeline, export and import.

The ledger is read in chunks (memory bounded by the chunk plus the longest line), each line is
parsed with orjson, re-serialised with orjson to check the canonical form, hashed with
`hashlib.sha256` and folded by the reducer. That is several times cheaper per line than the
stdlib path of `ledger.check_line`, which the hook read path keeps (a hook folds a few lines and
would pay more to import orjson than it saves).

The two serialisers do not always agree, and the stdlib form is the one that gets hashed and
written. orjson writes `1e-05` as `0.00001` and `1e-7` without the exponent's leading zero,
reads integers of 2^64 and above as floats, and stops at 1,024 levels of nesting (its
serialiser at 255). So this module only ever *accepts* a line on the fast path; any line it
cannot accept there (orjson refuses it, re-serialises it differently, or it holds a number
whose orjson form could differ from the stdlib's) is handed to `ledger.check_line`, which
decides with the stdlib and raises the same error the read path would. The property test
(tests/storage/test_bulk_verify.py) checks that the two agree on generated events.
"""
import hashlib
import re

from intent_loop.base import fast_os
from intent_loop.base.json_engine import engine  # orjson, or the stdlib behind its names
from intent_loop.errors import IntentLoopError
from intent_loop.storage.ledger import (
    ACTORS,
    ENVELOPE_KEYS,
    REQUEST_EVENT_COUNT,
    SCHEMA_VERSION,
    RequestAssembler,
    _malformed,
    check_line,
)
from intent_loop.storage.line_hash import HASH_FIELD

CHUNK = 1 << 20  # bytes read per pread: bounded memory, few system calls
_SORT = engine.OPT_SORT_KEYS
_HASH_AT = len(HASH_FIELD)
_AFTER_HASH = len(HASH_FIELD) + 64 + 1  # the field, 64 hex digits, the closing quote
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_TWENTY_DIGITS = b"0" * 20
_EXPONENT = re.compile(rb"e[-+]\d[,\]}]").search  # a literal first byte: the engine skips ahead fast
_DIGITS = frozenset(b"0123456789")
_DELIMITERS = (b",", b"]", b"}")
_HEX64 = re.compile(r"[0-9a-f]{64}").fullmatch


def _float_risk(line):
    """Could the line (or a chunk of lines) hold a float whose orjson form differs from the
    stdlib's? A fixed form below 1e-4 (orjson "0.00001", stdlib "1e-05") or a one-digit exponent
    after a digit ("1e-7" vs "1e-07"). A line that orjson re-serialises byte for byte but holds one
    of these goes to the stdlib check.

    This runs over every byte a full verification reads, so it is written for scanning speed:
    substring searches instead of a pattern (a pattern with the literal prefix "e" stops at every
    "e" in the text, about 2 us a line), a one-byte search for "+" first (almost no ledger holds
    one, and a one-byte search is ten times faster than a two-byte one), and the "e-" hits (a few
    in every chunk: UUIDs and words) checked by hand. The same predicate as
    `e[-+]\\d[,\\]}]` preceded by a digit."""
    if b"0.0000" in line:
        return True
    if b"+" in line and _EXPONENT(line) is not None:  # rare: the full pattern, signs of both kinds
        found = _EXPONENT(line)
        while found is not None:
            at = found.start()
            if at > 0 and line[at - 1] in _DIGITS:
                return True
            found = _EXPONENT(line, at + 1)
        return False
    at = line.find(b"e-")
    while at >= 0:
        if (0 < at and line[at - 1] in _DIGITS and line[at + 2 : at + 3].isdigit()
                and line[at + 3 : at + 4] in _DELIMITERS):
            return True
        at = line.find(b"e-", at + 2)
    return False


# The canonical line starts with its first four fields (keys sorted): one anchored match checks the
# actor, the event_hash's 64 hex digits, the event_id's UUID shape and a non-empty event_type on the
# raw bytes, which the canonical check ties to the parsed values (hex digits and dashes need no
# escaping; a first character that is a quote or backslash only sends the line to check_line).
_HEAD = re.compile(rb'\{"actor":"(?:user|agent|evidence|system)","event_hash":"[0-9a-f]{64}","event_id":"'
                   rb'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}","event_type":"[^"\\]').match
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").fullmatch


def verify_line(line, *, line_no, project_id, prev_hash):
    """The event of one ledger line (bytes without LF), verified exactly as `ledger.check_line` does."""
    hex_prev = prev_hash is None or (type(prev_hash) is str and _HEX64(prev_hash) is not None)
    event = _fast_event(line, project_id, prev_hash) if hex_prev else None  # the fast path trusts prev_hash
    if event is None:
        return check_line(line, line_no=line_no, project_id=project_id, prev_hash=prev_hash)
    return event


def _fast_event(line, project_id, prev_hash, float_risk=True):
    """The event when the fast path can accept the line outright, else None (never raises).

    `ledger._check_envelope_types` as direct comparisons on the parsed dict, none of them repeated
    by a later check: the event_hash needs no shape check (it must equal the sha256 hexdigest
    computed here), prev_hash none (it must equal the previous line's verified event_hash, or None;
    callers pass a 64-hex-digit one) and project_id none (it must equal the project's). Once the
    line is what orjson writes for the dict, the parsed values are the line's. `float_risk=False`:
    the caller found no risky float anywhere in the chunk holding the line.
    """
    try:
        event = engine.loads(line)
    except engine.JSONDecodeError:
        return None
    if (type(event) is not dict or event.keys() != ENVELOPE_KEYS or event["prev_hash"] != prev_hash
            or event["project_id"] != project_id or type(event["schema_version"]) is not int
            or event["schema_version"] != SCHEMA_VERSION):
        return None
    actor, event_type, occurred_at = event["actor"], event["event_type"], event["occurred_at"]
    event_id, task_id = event["event_id"], event["task_id"]
    if (actor not in ACTORS or type(event_type) is not str or not event_type
            or type(occurred_at) is not str or not occurred_at.endswith("Z")
            or type(event["request_id"]) is not str or type(event["payload"]) is not dict
            or type(event_id) is not str or _UUID(event_id) is None
            or (task_id is not None and (type(task_id) is not str or _UUID(task_id) is None))):
        return None
    try:
        if engine.dumps(event, option=_SORT) != line:
            return None
    except engine.JSONEncodeError:  # an orjson limit (depth 255, a number it cannot write): the stdlib decides
        return None
    if float_risk and _float_risk(line):
        return None
    start = 11 + len(actor)  # len('{"actor":"') + actor + closing quote
    if line[start : start + _HASH_AT] != HASH_FIELD:
        return None
    if hashlib.sha256(line[:start] + line[start + _AFTER_HASH :]).hexdigest() != event["event_hash"]:
        return None
    return event


def iter_lines(fd, start, end, *, chunk=None):
    """(offset, line without LF) of every complete line in [start, end) of an open file, in order.

    Bytes after the last LF are not yielded (a torn tail); the caller sees where lines stopped.
    """
    for offset, block in _line_blocks(fd, start, end, chunk=CHUNK if chunk is None else chunk):
        for line in block.split(b"\n")[:-1]:
            yield offset, line
            offset += len(line) + 1


def _line_blocks(fd, start, end, *, chunk):
    """(offset, block) for each pread of at most `chunk` bytes of [start, end) of an open file:
    the complete lines the read finished, LFs included, with the line the previous read left
    unfinished first (an empty block when it finished none). Bytes after the last LF are never
    given: a torn tail, or the end of a read that stopped short."""
    pending, offset, position = b"", start, start
    while position < end:
        data = fast_os.pread(fd, min(chunk, end - position), position)
        if not data:
            break
        position += len(data)
        block = pending + data if pending else data
        cut = block.rfind(b"\n") + 1
        yield offset, block[:cut]
        pending, offset = block[cut:], offset + cut


def fold_stream(fd, verified, reducer, *, project_id, end, on_event=None, on_progress=None, stop_at=None):
    """Verify every line in [verified.size, end) of an open ledger and fold the complete requests;
    mutates `verified`.

    The same contract as `ledger.fold_lines`, streamed: the all-or-nothing rule is the ledger's
    own `RequestAssembler` (a request is projected once all its lines are there; what follows the
    last complete request is `torn_tail`), and a last line that verifies but lacks its LF is
    projected with `missing_lf`. On damage it raises the line's error and `verified` is the valid
    prefix before it. `on_event(event, start, stop)` sees each projected event with its byte range;
    `stop_at` ends the fold at that offset (a request boundary) instead of `end`.
    """
    limit = end if stop_at is None else min(end, stop_at)
    start = verified.size
    if verified.missing_lf and start < limit:
        if fast_os.pread(fd, 1, start) != b"\n":
            raise _malformed(verified.count + 1, "a line was joined to a last line that lacked its LF")
        start += 1
        verified.size, verified.missing_lf = start, False
    total = max(1, limit - start)
    apply, state = reducer.apply, verified.state
    if getattr(reducer, "wants_position", False):  # the cache points at lines instead of copying text
        def apply(state, event, first, stop, _apply=reducer.apply):
            _apply(state, event, (first, stop - first - (0 if stop == missing_end[0] else 1)))
    else:
        def apply(state, event, first, stop, _apply=reducer.apply):
            _apply(state, event)
    missing_end = [None]  # where a last line without its LF ends (its length has no LF to drop)
    assembler = RequestAssembler()
    ranges = []  # byte ranges of the lines the assembler holds
    prev, line_no, after = verified.last_hash, verified.count, start
    # the checkpoint lives in locals while the loop runs and is written back however it ends, so
    # on damage `verified` is exactly the valid prefix before the bad line's request
    size, count, last_hash, last_start, missing_lf = (verified.size, verified.count, verified.last_hash,
                                                      verified.last_line_start, verified.missing_lf)
    # The loop below splits `_line_blocks`' blocks itself (no generator step per line), with the
    # per-line work kept to what the checks need: this is the hot path of every full verification
    # (about 20 us a line). A block in which `_float_risk` finds nothing holds no line it would find
    # anything in (the search runs over the same bytes), so one search per block replaces one per
    # line; a block with a hit checks its lines one by one. A request of one event (no marker, or a
    # marker of 1) with no request open is folded at once, which is `RequestAssembler.add`'s answer.
    loads, dumps, sort, decode_error, sha256 = engine.loads, engine.dumps, _SORT, engine.JSONDecodeError, hashlib.sha256
    keys, head, uuid, count_key = ENVELOPE_KEYS, _HEAD, _UUID, REQUEST_EVENT_COUNT
    hash_at, after_hash = _HASH_AT, _AFTER_HASH
    raw_apply, positions = reducer.apply, getattr(reducer, "wants_position", False)
    try:
        for offset, block in _line_blocks(fd, start, limit, chunk=CHUNK):
            risky = _float_risk(block)
            for line in block.split(b"\n")[:-1]:
                line_no += 1
                # `_fast_event` inlined (a call per line is measurable here); any doubt goes to check_line
                event = None
                try:
                    event = loads(line)
                except decode_error:
                    pass
                if (type(event) is not dict or event.keys() != keys or event["prev_hash"] != prev
                        or event["project_id"] != project_id or head(line) is None
                        or event["schema_version"] != SCHEMA_VERSION or type(event["schema_version"]) is not int
                        or type(event["request_id"]) is not str or type(event["payload"]) is not dict
                        or type(event["occurred_at"]) is not str or not event["occurred_at"].endswith("Z")
                        or ((task_id := event["task_id"]) is not None
                            and (type(task_id) is not str or uuid(task_id) is None))
                        or dumps(event, option=sort) != line or (risky and _float_risk(line))):
                    event = None
                else:
                    at = 11 + len(event["actor"])
                    if (line[at : at + hash_at] != HASH_FIELD
                            or sha256(line[:at] + line[at + after_hash :]).hexdigest() != event["event_hash"]):
                        event = None
                if event is None:
                    event = check_line(line, line_no=line_no, project_id=project_id, prev_hash=prev)
                prev, after = event["event_hash"], offset + len(line) + 1
                marker = event["payload"].get(count_key)
                if not assembler.remaining and (marker is None or (marker == 1 and type(marker) is int)):
                    if positions:  # a complete line: its length without the LF
                        raw_apply(state, event, (offset, after - offset - 1))
                    else:
                        raw_apply(state, event)
                    if on_event is not None:
                        on_event(event, offset, after)
                    last_start, last_hash, count, size = offset, prev, line_no, after
                else:
                    ranges.append((offset, after))
                    done = assembler.add(event, line_no)
                    if done is not None:
                        for complete, (first, stop) in zip(done, ranges, strict=True):
                            apply(state, complete, first, stop)
                            if on_event is not None:
                                on_event(complete, first, stop)
                        ranges.clear()
                        last_start, last_hash, count, size = offset, prev, line_no, after
                offset = after
            if on_progress is not None:
                on_progress(after - start, total)
        if after < limit and limit == end:  # after the last LF: a line missing only its LF, or a torn one
            tail = fast_os.pread(fd, limit - after, after)
            try:
                event = verify_line(tail, line_no=line_no + 1, project_id=project_id, prev_hash=prev)
            except IntentLoopError:
                event = None
            if event is not None:
                line_no += 1
                ranges.append((after, limit))
                missing_end[0] = limit
                done = assembler.add(event, line_no)
                if done is not None:
                    for complete, (first, stop) in zip(done, ranges, strict=True):
                        apply(state, complete, first, stop)
                        if on_event is not None:
                            on_event(complete, first, stop)
                    last_start, last_hash, count, size, missing_lf = after, event["event_hash"], line_no, limit, True
    finally:
        verified.size, verified.count, verified.last_hash, verified.last_line_start = size, count, last_hash, last_start
        verified.missing_lf = missing_lf
    if on_progress is not None:
        on_progress(total, total)
    verified.torn_tail = end - verified.size if limit == end else 0
    return verified


def canonical_bytes(value):
    """`canonical.canonical_bytes(value)` for a value parsed from JSON (no NaN or infinity, which
    orjson would write as null), produced by orjson where it writes the same bytes.

    orjson and the stdlib's canonical form differ only where `verify_line` already distrusts
    orjson: the floats `_float_risk` finds, integers of 2^64 and above, nesting past orjson's
    limit and lone surrogates (orjson refuses the last three). So orjson's bytes are returned
    when orjson accepts the value and they hold no risky float, else the stdlib decides (and
    raises what it raises). The property test in tests/storage/test_bulk_verify.py checks they agree."""
    try:
        data = engine.dumps(value, option=_SORT)
    except engine.JSONEncodeError:
        data = None
    if data is None or _float_risk(data):
        from intent_loop.base.canonical import canonical_bytes as stdlib_canonical_bytes

        return stdlib_canonical_bytes(value)
    return data


def loads(data):
    """Parse one JSON document with orjson, re-parsed by the stdlib when orjson refuses it (a very
    large integer, deep nesting): ValueError when neither can, never a RecursionError.

    A number of 20 or more digits goes to the stdlib at once: orjson reads integers of 2^64 and
    above as floats, which would change what a document says."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if _TWENTY_DIGITS not in bytes(data).translate(_DIGITS_TO_ZERO):  # (a pattern \d{20} costs ~20 us a line)
        try:
            return engine.loads(data)
        except engine.JSONDecodeError:
            pass
    from intent_loop.base.canonical import loads as stdlib_loads

    try:
        return stdlib_loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None

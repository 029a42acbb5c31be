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
(tests/test_bulk_verify.py) checks that the two agree on generated events.
"""
import hashlib
import re

import orjson

from intent_loop.errors import IntentLoopError
from intent_loop.storage import fast_os
from intent_loop.storage.ledger import ENVELOPE_KEYS, SCHEMA_VERSION, RequestAssembler, _malformed, check_line
from intent_loop.storage.line_hash import HASH_FIELD

CHUNK = 1 << 20  # bytes read per pread: bounded memory, few system calls
_SORT = orjson.OPT_SORT_KEYS
_HASH_AT = len(HASH_FIELD)
_AFTER_HASH = len(HASH_FIELD) + 64 + 1  # the field, 64 hex digits, the closing quote
_DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
_TWENTY_DIGITS = b"0" * 20
_EXPONENT = re.compile(rb"e[-+]\d[,\]}]").search  # a literal first byte: the engine skips ahead fast
_DIGITS = frozenset(b"0123456789")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").fullmatch
_HEX64 = re.compile(r"[0-9a-f]{64}").fullmatch


def _float_risk(line):
    """Could the line hold a float whose orjson form differs from the stdlib's? A fixed form below
    1e-4 (orjson "0.00001", stdlib "1e-05") or a one-digit exponent after a digit ("1e-7" vs
    "1e-07"). A line that orjson re-serialises byte for byte but holds one of these goes to the
    stdlib check. (No alternation in one pattern: without a literal prefix a pattern costs ~25 us
    a line.)"""
    if b"0.0000" in line:
        return True
    if b"e-" not in line and b"e+" not in line:
        return False
    found = _EXPONENT(line)
    while found is not None:
        at = found.start()
        if at > 0 and line[at - 1] in _DIGITS:
            return True
        found = _EXPONENT(line, at + 1)
    return False


# The canonical line starts with its first three fields (keys sorted): one anchored match checks
# the actor, the event_hash's 64 hex digits and the event_id's UUID shape on the raw bytes, which
# the canonical check ties to the parsed values (hex digits and dashes need no escaping).
_HEAD = re.compile(rb'\{"actor":"(?:user|agent|evidence|system)","event_hash":"[0-9a-f]{64}","event_id":"'
                   rb'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}","event_type":"[^"]').match


def _envelope_ok(event, line):
    """ledger._check_envelope_types as a predicate, for a line that orjson re-serialises byte for
    byte (checked afterwards by the caller). prev_hash needs no check of its own: the caller
    compares it with the previous line's verified event_hash (or None)."""
    task_id, occurred_at = event["task_id"], event["occurred_at"]
    return (_HEAD(line) is not None
            and (task_id is None or (type(task_id) is str and _UUID(task_id) is not None))
            and type(occurred_at) is str and occurred_at.endswith("Z")
            and type(event["project_id"]) is str and type(event["request_id"]) is str
            and type(event["payload"]) is dict)


def verify_line(line, *, line_no, project_id, prev_hash):
    """The event of one ledger line (bytes without LF), verified exactly as `ledger.check_line` does."""
    hex_prev = prev_hash is None or (type(prev_hash) is str and _HEX64(prev_hash) is not None)
    event = _fast_event(line, project_id, prev_hash) if hex_prev else None  # the fast path trusts prev_hash
    if event is None:
        return check_line(line, line_no=line_no, project_id=project_id, prev_hash=prev_hash)
    return event


def _fast_event(line, project_id, prev_hash):
    """The event when the fast path can accept the line outright, else None (never raises)."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if (type(event) is not dict or event.keys() != ENVELOPE_KEYS or type(event["schema_version"]) is not int
            or event["schema_version"] != SCHEMA_VERSION or event["project_id"] != project_id
            or event["prev_hash"] != prev_hash):
        return None
    if not _envelope_ok(event, line):
        return None
    try:
        if orjson.dumps(event, option=_SORT) != line:
            return None
    except orjson.JSONEncodeError:  # an orjson limit (depth 255, a number it cannot write): the stdlib decides
        return None
    if _float_risk(line):
        return None
    start = 11 + len(event["actor"])  # len('{"actor":"') + actor + closing quote
    if line[start : start + _HASH_AT] != HASH_FIELD:
        return None
    digest = hashlib.sha256(line[:start])
    digest.update(line[start + _AFTER_HASH :])
    if digest.hexdigest() != event["event_hash"]:
        return None
    return event


def iter_lines(fd, start, end, *, chunk=None):
    """(offset, line without LF) of every complete line in [start, end) of an open file, in order.

    Bytes after the last LF are not yielded (a torn tail); the caller sees where lines stopped.
    """
    chunk = CHUNK if chunk is None else chunk  # read at call time, so tests can shrink it
    pending = b""
    base = start  # file offset of pending[0]
    position = start
    while position < end:
        data = fast_os.pread(fd, min(chunk, end - position), position)
        if not data:
            break
        position += len(data)
        block = pending + data if pending else data
        offset = 0
        while True:
            stop = block.find(b"\n", offset)
            if stop < 0:
                break
            yield base + offset, block[offset:stop]
            offset = stop + 1
        pending = block[offset:]
        base += offset


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
    try:
        for offset, line in iter_lines(fd, start, limit):
            line_no += 1
            event = _fast_event(line, project_id, prev)
            if event is None:
                event = check_line(line, line_no=line_no, project_id=project_id, prev_hash=prev)
            prev, after = event["event_hash"], offset + len(line) + 1
            ranges.append((offset, after))
            done = assembler.add(event, line_no)
            if done is not None:
                for complete, (first, stop) in zip(done, ranges, strict=True):
                    apply(state, complete, first, stop)
                    if on_event is not None:
                        on_event(complete, first, stop)
                ranges.clear()
                last_start, last_hash, count, size = offset, prev, line_no, after
            if on_progress is not None and line_no % 4096 == 0:
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


def loads(data):
    """Parse one JSON document with orjson, re-parsed by the stdlib when orjson refuses it (a very
    large integer, deep nesting): ValueError when neither can, never a RecursionError.

    A number of 20 or more digits goes to the stdlib at once: orjson reads integers of 2^64 and
    above as floats, which would change what a document says."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if _TWENTY_DIGITS not in bytes(data).translate(_DIGITS_TO_ZERO):  # (a pattern \d{20} costs ~20 us a line)
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    from intent_loop.storage.canonical import loads as stdlib_loads

    try:
        return stdlib_loads(data)
    except RecursionError:
        raise ValueError("nested too deeply") from None

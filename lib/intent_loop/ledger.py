"""The hash-chained ledger: event sealing, verification, the read path and locked transactions.

Each line of `ledger.jsonl` is one canonical JSON event; `event_hash` is the SHA-256 of the
canonical event without `event_hash`, and `prev_hash` chains the project's events. Derived
state (a caller-supplied reducer folded over the events) is cached in `cache/` with the
verified checkpoint, so a call only verifies the lines appended since that checkpoint.
"""
import time


from intent_loop import _os as os  # `os` without its import cost (see _os.py)
from intent_loop import checkpoint, paths as paths_mod
from intent_loop.checkpoint import Verified
from intent_loop.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.errors import ErrorCode, IntentLoopError

SCHEMA_VERSION = 1
ENVELOPE_KEYS = frozenset((
    "schema_version", "event_id", "event_type", "project_id", "task_id", "occurred_at",
    "actor", "request_id", "payload", "prev_hash", "event_hash",
))
ACTORS = ("user", "agent", "evidence", "system")
_REQUEST_ID_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:@-")
_HASH_FIELD = b',"event_hash":"'
_HASH_FIELD_LEN = len(_HASH_FIELD) + 64 + 1  # the field, 64 hex digits, the closing quote


def new_uuid4():
    """A random RFC 4122 version-4 UUID string (os.urandom; `import uuid` costs ~18 ms)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return format_uuid(bytes(raw))


def format_uuid(raw16):
    h = raw16.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_uuid(value):
    if not isinstance(value, str) or len(value) != 36:
        return False
    parts = value.split("-")
    if [len(p) for p in parts] != [8, 4, 4, 4, 12]:
        return False
    return all(c in "0123456789abcdef" for c in value.replace("-", ""))


def rfc3339_utc(epoch):
    """RFC 3339 UTC with milliseconds and `Z`, e.g. 2026-11-30T07:02:50.123Z."""
    whole = int(epoch)
    millis = int((epoch - whole) * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"


def check_request_id(request_id):
    if (not isinstance(request_id, str) or not 1 <= len(request_id) <= 200
            or not _REQUEST_ID_CHARS.issuperset(request_id)):
        raise IntentLoopError(
            ErrorCode.INVALID_REQUEST_ID,
            "a request id is 1-200 characters of A-Z a-z 0-9 _ . : @ -",
        )
    from intent_loop.redact import has_secret  # cheap: its pre-filter clears ordinary ids without `re`

    if has_secret(request_id):
        raise IntentLoopError(ErrorCode.CREDENTIAL_IN_ID, "a request id must not contain a credential; use an opaque id")


def request_fingerprint(operation, params):
    """SHA-256 over the operation and its normalized parameters (never a raw body)."""
    return sha256_hex(canonical_bytes({"operation": operation, "params": params}))


class Draft:
    """An event before sealing: what the domain wants recorded.

    The event id is chosen here, not at sealing, so a plan can already reference the events it
    is about to write (a publication's source_message_refs name the claims of the same mutation).
    """

    __slots__ = ("event_type", "task_id", "actor", "payload", "event_id")

    def __init__(self, event_type, task_id, actor, payload):
        self.event_type = event_type
        self.task_id = task_id
        self.actor = actor
        self.payload = payload
        self.event_id = new_uuid4()


def seal(draft, *, project_id, request_id, prev_hash, occurred_at):
    """Turn a draft into a sealed event dict and its ledger line (bytes with LF)."""
    if draft.actor not in ACTORS:
        raise IntentLoopError(ErrorCode.INVALID_EVENT, f"unknown actor {draft.actor!r}")
    event = {
        "schema_version": SCHEMA_VERSION,
        "event_id": draft.event_id,
        "event_type": draft.event_type,
        "project_id": project_id,
        "task_id": draft.task_id,
        "occurred_at": occurred_at,
        "actor": draft.actor,
        "request_id": request_id,
        "payload": draft.payload,
    }
    return chain(event, prev_hash=prev_hash)


def chain(event, *, prev_hash):
    """Link an envelope to `prev_hash` and seal it (any old event_hash is replaced): (event, line).

    Appends use it through seal(); deletion uses it to re-chain the events it keeps.
    """
    event = dict(event, prev_hash=prev_hash)
    event.pop("event_hash", None)
    event["event_hash"] = sha256_hex(canonical_bytes(event))
    return event, canonical_bytes(event) + b"\n"


def _malformed(line_no, why):
    return IntentLoopError(ErrorCode.LEDGER_MALFORMED, f"line {line_no}: {why}; run `intent-loop recover`", line=line_no)


def check_line(line, *, line_no, project_id, prev_hash):
    """Verify one ledger line (bytes without LF) against the chain; return the event dict."""
    try:
        event = loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _malformed(line_no, "not valid UTF-8 JSON") from None
    if not isinstance(event, dict):
        raise _malformed(line_no, "not a JSON object")
    version = event.get("schema_version")
    if type(version) is int and version > SCHEMA_VERSION:
        raise IntentLoopError(
            ErrorCode.FUTURE_SCHEMA,
            f"line {line_no} uses schema {version}; upgrade intent-loop to read it",
            line=line_no,
        )
    if type(version) is not int or version != SCHEMA_VERSION or event.keys() != ENVELOPE_KEYS:
        raise _malformed(line_no, "the envelope does not have exactly the schema-1 fields")
    _check_envelope_types(event, line_no)
    if event["project_id"] != project_id:
        raise IntentLoopError(ErrorCode.FOREIGN_PROJECT, f"line {line_no} belongs to another project", line=line_no)
    try:
        canonical = canonical_bytes(event)
    except IntentLoopError:  # a lone surrogate escape: no valid event carries one
        raise _malformed(line_no, "holds text that is not valid Unicode") from None
    if canonical != line:
        raise _malformed(line_no, "not in canonical JSON form")
    start = 11 + len(event["actor"])  # len('{"actor":"') + actor + closing quote
    if line[start : start + len(_HASH_FIELD)] != _HASH_FIELD:  # pragma: no cover - canonical order
        raise _malformed(line_no, "event_hash is not where canonical order puts it")
    if sha256_hex(line[:start] + line[start + _HASH_FIELD_LEN :]) != event["event_hash"]:
        raise IntentLoopError(ErrorCode.LEDGER_HASH_MISMATCH, f"line {line_no}: event_hash does not match its content", line=line_no)
    if event["prev_hash"] != prev_hash:
        raise IntentLoopError(ErrorCode.LEDGER_CHAIN_BROKEN, f"line {line_no}: prev_hash breaks the chain", line=line_no)
    return event


def _check_envelope_types(event, line_no):
    ok = (
        is_uuid(event["event_id"])
        and isinstance(event["event_type"], str) and event["event_type"]
        and isinstance(event["project_id"], str)
        and (event["task_id"] is None or is_uuid(event["task_id"]))
        and isinstance(event["occurred_at"], str) and event["occurred_at"].endswith("Z")
        and event["actor"] in ACTORS
        and isinstance(event["request_id"], str)
        and isinstance(event["payload"], dict)
        and (event["prev_hash"] is None or _is_hex64(event["prev_hash"]))
        and _is_hex64(event["event_hash"])
    )
    if not ok:
        raise _malformed(line_no, "an envelope field has the wrong type or shape")


def _is_hex64(value):
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def fold_lines(data, verified, reducer, *, project_id, base=0, on_progress=None):
    """Verify and fold every complete line after `verified.size`; mutates `verified`.

    `data` holds the ledger's bytes from file offset `base` (<= verified.size) to its end, so a
    caller resuming from a checkpoint reads only the suffix.
    """
    offset = verified.size - base
    end = data.rfind(b"\n") + 1
    line_no = verified.count
    while offset < end:
        stop = data.index(b"\n", offset)
        line_no += 1
        event = check_line(data[offset:stop], line_no=line_no, project_id=project_id, prev_hash=verified.last_hash)
        reducer.apply(verified.state, event)
        verified.last_line_start = base + offset
        verified.last_hash = event["event_hash"]
        offset = stop + 1
        verified.size, verified.count = base + offset, line_no  # stays the valid prefix if a later line fails
        if on_progress is not None and line_no % 1000 == 0:
            on_progress(offset, len(data))
    if on_progress is not None:
        on_progress(len(data), len(data))
    verified.count = line_no
    verified.size = max(base + end, verified.size)
    verified.torn_tail = base + len(data) - verified.size
    return verified


class EventList:
    """A reducer that keeps the verified events themselves (the timeline, recovery)."""

    version = "event-list"

    def initial(self):
        return []

    def apply(self, state, event):
        state.append(event)


def verified_prefix(data, project_id, *, on_progress=None):
    """(Verified of the longest valid prefix of `data`, the error that ends it or None).

    A partial last line is reported as LEDGER_TORN_TAIL: recovery treats it as damage too.
    """
    verified = _empty(EventList())
    try:
        fold_lines(data, verified, EventList(), project_id=project_id, on_progress=on_progress)
    except IntentLoopError as exc:
        return verified, exc
    if verified.torn_tail:
        line = verified.count + 1
        return verified, IntentLoopError(ErrorCode.LEDGER_TORN_TAIL, f"line {line}: a partial last line without LF",
                                         line=line)
    return verified, None


def _empty(reducer):
    return Verified(0, 0, None, 0, reducer.initial())


def open_ledger(paths):
    """(fd, stat) of the ledger opened for reading, or (None, None); refuses unsafe files."""
    st = paths_mod.check_regular_file(paths.ledger)
    if st is None:
        return None, None
    fd = os.open(paths.ledger, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    fst = os.fstat(fd)
    if (fst.st_ino, fst.st_dev) != (st.st_ino, st.st_dev):
        os.close(fd)
        raise paths_mod.unsafe(paths.ledger, "the ledger was swapped while opening it")
    return fd, fst


def read_range(fd, start, end):
    """Bytes [start, end) of an open file, read into one buffer."""
    buffer = bytearray(max(0, end - start))
    view = memoryview(buffer)
    done = 0
    while done < len(buffer):
        got = os.preadv(fd, [view[done:]], start + done)
        if got == 0:
            break
        done += got
    return bytes(view[:done])


def _read_ledger(paths):
    """The ledger's bytes and stat, or (None, None) when absent; refuses unsafe files."""
    fd, fst = open_ledger(paths)
    if fd is None:
        return None, None
    try:
        return read_range(fd, 0, fst.st_size), fst
    finally:
        os.close(fd)


def verify_from_checkpoint(fd, size, cached, reducer, *, project_id):
    """The verified state of an open ledger, reading only what follows a still-valid checkpoint."""
    if cached is not None:
        v = cached.verified
        if v.size == 0 or (v.size <= size and checkpoint.line_hash_at(
                read_range(fd, v.last_line_start, v.size), 0, v.size - v.last_line_start) == v.last_hash):
            return fold_lines(read_range(fd, v.size, size), v, reducer, project_id=project_id, base=v.size)
    return fold_lines(read_range(fd, 0, size), _empty(reducer), reducer, project_id=project_id)


def is_project_present(paths):
    """True when the project directory exists (never creates anything; refuses links)."""
    if not paths_mod.check_real_directory(os.path.join(paths.data_root, "projects")):
        return False
    return paths_mod.check_real_directory(paths.dir)


def load_verified(paths, reducer, *, write_cache=True):
    """The verified state of the project's ledger (read path: creates nothing but the cache)."""
    if not is_project_present(paths):
        return _empty(reducer)
    st = paths_mod.check_regular_file(paths.ledger)
    if st is None:
        return _empty(reducer)
    cached = checkpoint.load(paths, reducer)
    if cached is not None and checkpoint.is_current(cached, st) and checkpoint.last_line_matches(paths, cached):
        return cached.verified
    fd, st = open_ledger(paths)
    if fd is None:
        return _empty(reducer)
    try:
        verified = verify_from_checkpoint(fd, st.st_size, cached, reducer, project_id=paths.project_id)
    finally:
        os.close(fd)
    if write_cache:
        checkpoint.save(paths, reducer, verified, st)
    return verified


def verify_all(paths, reducer, *, on_progress=None):
    """Full verification from the first byte, ignoring the cache. Returns Verified or raises."""
    data, _st = _read_ledger(paths) if is_project_present(paths) else (None, None)
    verified = _empty(reducer)
    if data:
        fold_lines(data, verified, reducer, project_id=paths.project_id, on_progress=on_progress)
    return verified


def find_request(data, request_id, *, project_id):
    """Events already recorded under `request_id`, as a list (empty when none).

    A byte search over the canonical ledger: the envelope field `"request_id":"<id>"` is found
    at memchr speed in bytes the transaction holds in memory for the rewrite anyway, so no
    separate index can drift from the ledger. The same bytes inside a payload (a nested key of
    that name) are skipped by checking the parsed envelope of each hit.
    """
    needle = b'"request_id":"' + request_id.encode() + b'"'
    start = data.find(needle)
    while start >= 0:
        line_start = data.rfind(b"\n", 0, start) + 1
        stop = data.find(b"\n", line_start)
        if stop < 0:
            return []
        if loads(data[line_start:stop]).get("request_id") == request_id:
            return _request_events(data, line_start, request_id)
        start = data.find(needle, stop)
    return []


def _request_events(data, line_start, request_id):
    """The consecutive lines of one request, from its first line on."""
    events = []
    while line_start < len(data):
        stop = data.find(b"\n", line_start)
        if stop < 0:
            break
        event = loads(data[line_start:stop])
        if event.get("request_id") != request_id:
            break
        events.append(event)
        line_start = stop + 1
    return events


class Transaction:
    """A locked mutation of one project: `with Transaction(paths, reducer, deadline=d) as tx:`.

    Entering takes the project lock, removes residue of killed processes, verifies the ledger
    from the cached checkpoint and quarantines a torn tail. `append` durably adds events.
    """

    def __init__(self, paths, reducer, *, deadline, resume=None, _now=time.time):
        self.paths = paths
        self.reducer = reducer
        self.deadline = deadline
        # A Verified the caller already read without the lock (a hook's read path): used instead
        # of parsing the cache a second time. Like the cache, it is only a candidate checkpoint,
        # re-checked against the bytes under the lock, then continued (and updated) in place.
        self._resume = resume
        self._now = _now
        self.lock = None
        self.fd = None  # the current ledger, open for copying its verified prefix
        self.verified = None
        self.durability_uncertain = False
        self.index_end = None  # how far the request index is known to cover the ledger

    @property
    def state(self):
        return self.verified.state

    def __enter__(self):
        from intent_loop.lock import ProjectLock  # mutations only: reads never lock

        paths_mod.ensure_project_layout(self.paths)
        self.lock = ProjectLock(self.paths.dir, deadline=self.deadline)
        self.lock.acquire()
        try:
            self._prepare()
        except BaseException:
            self.lock.release()
            raise
        return self

    def __exit__(self, *exc_info):
        self._close()
        self.lock.release()

    def _close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _reopen(self):
        self._close()
        self.fd, _st = open_ledger(self.paths)

    @property
    def data(self):
        """The whole verified ledger (deletion and recovery need it; appends never read it)."""
        return read_range(self.fd, 0, self.verified.size) if self.fd is not None else b""

    def _prepare(self):
        self.lock.clean_residue()
        _remove_orphan_temps(self.paths)
        self.fd, st = open_ledger(self.paths)
        if self._resume is not None:
            cached = checkpoint.Cached(self._resume, identity=None)
        else:
            cached = checkpoint.load(self.paths, self.reducer)
        if self.fd is None:
            self.verified = _empty(self.reducer)
        else:
            self.verified = verify_from_checkpoint(self.fd, st.st_size, cached, self.reducer,
                                                   project_id=self.paths.project_id)
        if self.verified.torn_tail:
            self._quarantine_torn_tail()
        self.lock.heartbeat()

    def _quarantine_torn_tail(self):
        """Summarize the partial last line by length and digest only, then cut it off durably."""
        tail = read_range(self.fd, self.verified.size, self.verified.size + self.verified.torn_tail)
        record = {
            "kind": "torn_tail",
            "byte_length": len(tail),
            "sha256": sha256_hex(tail),
            "offset": self.verified.size,
            "detected_at": rfc3339_utc(self._now()),
        }
        name = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.urandom(4).hex()}-torn-tail.json"
        replace_atomically(os.path.join(self.paths.quarantine_dir, name), canonical_bytes(record) + b"\n")
        replace_atomically(self.paths.ledger, b"", prefix=(self.fd, self.verified.size))
        self._reopen()
        self.verified.torn_tail = 0
        self._save_cache()

    def find_request(self, request_id):
        """Events already recorded under `request_id` (the request index, kept current here)."""
        from intent_loop import request_index

        return request_index.find(self, request_id)

    def check_deadline(self):
        if time.monotonic() >= self.deadline:
            raise IntentLoopError(ErrorCode.DEADLINE_EXCEEDED, "ran out of time before writing; nothing was changed, retry")

    def append(self, drafts, *, request_id, fingerprint):
        """Seal and durably append `drafts` (one request); returns the sealed events."""
        check_request_id(request_id)
        if not drafts:
            return []
        occurred_at = rfc3339_utc(self._now())
        prev = self.verified.last_hash
        events, lines = [], []
        for index, draft in enumerate(drafts):
            if index == 0:
                draft.payload = dict(draft.payload, request_fingerprint=fingerprint)
            event, line = seal(draft, project_id=self.paths.project_id, request_id=request_id,
                               prev_hash=prev, occurred_at=occurred_at)
            prev = event["event_hash"]
            events.append(event)
            lines.append(line)
        self.check_deadline()
        self.lock.heartbeat()
        first_offset = self.verified.size
        try:  # the verified prefix is copied inside the kernel, then the new lines follow
            replace_atomically(self.paths.ledger, b"".join(lines), prefix=(self.fd, first_offset))
        except IntentLoopError as exc:
            if exc.code != ErrorCode.DURABILITY_UNCERTAIN:
                raise
            self.durability_uncertain = True
        self._reopen()
        self._advance(lines, events, first_offset)
        from intent_loop import request_index

        request_index.record(self, request_id, first_offset, events[-1]["event_hash"])
        if self.durability_uncertain:
            raise IntentLoopError(
                ErrorCode.DURABILITY_UNCERTAIN,
                "the events were written but the directory sync failed; a retry with the same request id returns them",
            )
        return events

    def _advance(self, lines, events, first_offset):
        offset = first_offset
        for event, line in zip(events, lines):
            self.reducer.apply(self.verified.state, event)
            self.verified.last_line_start = offset
            offset += len(line)
        self.verified.size = offset
        self.verified.count += len(events)
        self.verified.last_hash = events[-1]["event_hash"]
        self._save_cache()

    def _save_cache(self):
        st = paths_mod.check_regular_file(self.paths.ledger)
        if st is not None:
            checkpoint.save(self.paths, self.reducer, self.verified, st)

    def replace_ledger(self, new_data, *, expect_count):
        """Rewrite the whole ledger (deletion, recovery): verify `new_data` fully first."""
        fresh = _empty(self.reducer)
        fold_lines(new_data, fresh, self.reducer, project_id=self.paths.project_id)
        if fresh.count != expect_count or fresh.torn_tail:
            raise IntentLoopError(ErrorCode.INVALID_EVENT, "the rewritten ledger did not verify; nothing was replaced")
        self.check_deadline()
        replace_atomically(self.paths.ledger, new_data)
        self._reopen()
        self.index_end = None  # offsets moved: the request index revalidates itself
        self.verified = fresh
        self._save_cache()


def replace_atomically(path, data, **kwargs):
    """Lazy proxy: the read path (every hook) never needs the write machinery."""
    from intent_loop.atomic import replace_atomically as replace

    return replace(path, data, **kwargs)


def _remove_orphan_temps(paths):
    """Remove strictly named temp files that killed writers left (we hold the lock)."""
    from intent_loop.atomic import is_temp_name_for

    suffix = len(".") + 32 + len(".tmp")
    for directory in (paths.dir, paths.private_dir, paths.quarantine_dir, paths.cache_dir):
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            continue
        for name in names:
            target = name[:-suffix]
            if directory == paths.dir and target != "ledger.jsonl":
                continue  # the project directory holds no other files we replace
            if target and is_temp_name_for(name, target):
                try:
                    os.unlink(os.path.join(directory, name))
                except OSError:
                    pass


def mutate(paths, reducer, *, request_id, operation, params, plan, deadline, after_commit=None, resume=None):
    """One locked, idempotent mutation.

    `plan(state) -> list[Draft]` decides the events from the verified state. An exact retry
    (same request id and fingerprint) returns the stored events and appends nothing; the same
    id with other parameters fails REQUEST_ID_REUSED. Returns (events, replayed).
    `after_commit(tx, events)` runs while the lock is still held (the Guard file is written there).
    `resume` is a lock-free read's Verified to continue from (see Transaction).
    """
    check_request_id(request_id)
    fingerprint = request_fingerprint(operation, params)
    with Transaction(paths, reducer, deadline=deadline, resume=resume) as tx:
        stored = tx.find_request(request_id)
        if stored:
            if stored[0]["payload"].get("request_fingerprint") != fingerprint:
                raise IntentLoopError(
                    ErrorCode.REQUEST_ID_REUSED,
                    f"request id {request_id!r} was already used for a different operation; use a new id",
                )
            return stored, True
        events = tx.append(plan(tx.state), request_id=request_id, fingerprint=fingerprint)
        if after_commit is not None:
            after_commit(tx, events)
        return events, False

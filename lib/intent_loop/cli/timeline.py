"""`intent-loop timeline`: the project's events in ledger order, newest first read backwards and
verified line by line, with filters (`history` words the same read for a person)."""
import os

from intent_loop.cli.common import (
    current_project,
    load_checkpointed,
    load_state,
    pick_task,
    terminal_safe,
)
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent.event_types import TABLE as EVENT_TYPES
from intent_loop.intent.state import REDUCER
from intent_loop.storage.reading import verify_all

_CLAIM_EVENTS = ("claim_added", "claim_replaced", "candidate_confirmed")
DEFAULT_LIMIT = 50


# -- timeline -------------------------------------------------------------------------------
def _parse_time(text, option):
    """Epoch seconds of an RFC 3339 timestamp, or INVALID_ARGUMENT."""
    from intent_loop.base.timestamps import parse_epoch, rfc3339_error

    problem = rfc3339_error(text) if isinstance(text, str) else "missing"
    if problem:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"{option} {text!r}: {problem} (e.g. 2026-01-31T12:00:00Z)")
    return parse_epoch(text)


def _claim_summary(claim):
    return {"claim_id": claim["claim_id"], "statement": claim["statement"]}


def summarize(event):
    """A content-free summary: claim ids and statements only for claim events."""
    t, p = event["event_type"], event["payload"]
    out = {}
    if t in _CLAIM_EVENTS:
        out["claims"] = [_claim_summary(p["claim"])]
        if t == "claim_replaced":
            out["supersedes"] = list(p.get("supersedes", []))
        if t == "candidate_confirmed":
            out["candidate_id"] = p.get("candidate_id")
    elif t == "task_started":
        out["mode"] = p.get("mode", "on")
        out["claims"] = [_claim_summary(c) for c in p.get("initial_claims", [])]
    elif t == "claim_invalidated":
        out["claim_id"] = p.get("claim_id")
    elif t == "mode_set":
        out["mode"] = p.get("mode")
    elif t == "session_linked":
        out["action"] = p.get("action")
    elif t in ("source_observed", "result_signal_observed"):
        source = p.get("source") if isinstance(p.get("source"), dict) else {}
        out["char_count"] = p.get("char_count")
        out["source_kind"] = source.get("kind")
        out["hash_kinds"] = sorted(k for k in ("event_id", "sha256") if k in source)
    elif t == "contract_published":
        out["contract_version"] = p.get("contract_version")
        out["snapshot_sha256"] = p.get("snapshot_sha256")
    elif t in ("candidate_added", "candidate_dismissed"):
        out["candidate_id"] = p.get("candidate_id")
    elif t == "graph_imported":
        out["claim_count"] = len(p.get("claims", []))
    return out


def _summary_text(summary):
    parts = []
    for key in sorted(summary):
        value = summary[key]
        if key == "claims":
            parts.extend(f"[{c['claim_id'][:8]}] {c['statement']}" for c in value)
        elif isinstance(value, list):
            parts.append(f"{key}={','.join(str(v)[:8] if key == 'supersedes' else str(v) for v in value)}")
        elif key.endswith("_id") and isinstance(value, str):
            parts.append(f"{key}={value[:8]}")
        elif key == "snapshot_sha256" and isinstance(value, str):
            parts.append(f"sha256={value[:12]}")
        else:
            parts.append(f"{key}={value}")
    return "; ".join(parts)


class _Filter:
    """The timeline's filters as one predicate over events."""

    def __init__(self, args, task_id, session):
        self.since = _parse_time(args.since, "--since") if args.since is not None else None
        self.until = _parse_time(args.until, "--until") if args.until is not None else None
        self.task_id, self.session, self.actor, self.event_type = task_id, session, args.actor, args.event_type
        if self.event_type is not None and self.event_type not in EVENT_TYPES:
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, (
                f"no event type {self.event_type!r}; --type is one of {', '.join(EVENT_TYPES)}"))

    def __call__(self, event):
        if self.task_id is not None and event["task_id"] != self.task_id:
            return False
        if self.actor and event["actor"] != self.actor:
            return False
        if self.event_type and event["event_type"] != self.event_type:
            return False
        if self.session is not None and event["payload"].get("host_session_hash") != self.session:
            return False
        if self.since is not None or self.until is not None:
            at = _parse_time(event["occurred_at"], "occurred_at")
            if (self.since is not None and at < self.since) or (self.until is not None and at > self.until):
                return False
        return True


def _row(event):
    return {"occurred_at": event["occurred_at"], "event_type": event["event_type"], "actor": event["actor"],
            "task_id": event["task_id"], "event_id": event["event_id"], "summary": summarize(event)}


class _Printer:
    """Rows out as they come: text lines, JSON lines, or today's {"events", "project_id"} document
    written piece by piece (so --all never holds the timeline in memory)."""

    def __init__(self, console, args, project_id):
        import json

        self.console, self.json, self.project_id = console, json, project_id
        self.mode = "jsonl" if args.jsonl else "json" if args.json else "text"
        self.count = 0

    def row(self, row):
        out = self.console.stdout
        if self.mode == "jsonl":  # terminal_safe: bidi and format characters escaped, still JSON
            out.write(terminal_safe(self.json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":")))
                      + "\n")
        elif self.mode == "json":
            text = terminal_safe(self.json.dumps(row, sort_keys=True, indent=2, ensure_ascii=False))
            out.write(("{\n  \"events\": [\n" if self.count == 0 else ",\n")
                      + "\n".join("    " + line for line in text.split("\n")))
        else:
            task = row["task_id"][:8] if row["task_id"] else "-"
            text = _summary_text(row["summary"])
            self.console.out(f"{row['occurred_at']}  {row['event_type']:<22} {row['actor']:<8} {task}"
                             + (f"  {text}" if text else ""))
        self.count += 1

    def finish(self):
        if self.mode == "json":
            head = "{\n  \"events\": []" if self.count == 0 else "\n  ]"
            self.console.stdout.write(head + ",\n  \"project_id\": " + self.json.dumps(self.project_id) + "\n}\n")
        elif self.mode == "text" and self.count == 0:
            self.console.out("no events match")


def _newest(paths, verified, matches, limit):
    """The newest `limit` matching events, read backwards from the checkpoint's end: each line is
    verified by itself (canonical form, its own hash) and chained to the line after it, the newest
    to the checkpoint's last hash. Cost follows what is read, not the ledger's size."""
    from intent_loop.storage.cache import bulk_verify
    from intent_loop.storage.ledger import open_ledger

    found = []
    if verified.size == 0 or limit == 0:
        return found
    fd, _st = open_ledger(paths)
    if fd is None:
        return found
    try:
        expected, line_no = verified.last_hash, verified.count
        for _offset, line in _lines_backwards(fd, verified.size):
            try:
                prev = bulk_verify.loads(line).get("prev_hash")
            except (ValueError, AttributeError):
                prev = None  # check_line below names the damage
            event = bulk_verify.verify_line(line, line_no=line_no, project_id=paths.project_id, prev_hash=prev)
            if event["event_hash"] != expected:
                raise IntentLoopError(ErrorCode.LEDGER_CHAIN_BROKEN, f"line {line_no}: the chain breaks before the "
                                      "checkpoint's last line; run `intent-loop verify`", line=line_no)
            expected, line_no = event["prev_hash"], line_no - 1
            if matches(event):
                found.append(event)
                if len(found) >= limit:
                    break
        else:
            if expected is not None:
                raise IntentLoopError(ErrorCode.LEDGER_CHAIN_BROKEN, "line 1: the first line has a prev_hash; "
                                      "run `intent-loop verify`", line=1)
    finally:
        os.close(fd)
    found.reverse()
    return found


def _lines_backwards(fd, end, chunk=1 << 16):
    """(offset, line without LF) of the complete lines of [0, end), newest first; `end` ends a line."""
    from intent_loop.base import fast_os

    start = max(0, end - chunk)
    buf = fast_os.pread(fd, end - start, start)
    stop = len(buf) - 1  # the LF that ends the newest line not yet yielded
    while stop >= 0:
        lf = buf.rfind(b"\n", 0, stop)
        if lf < 0 and start > 0:  # the line starts in an older chunk
            older = max(0, start - max(chunk, len(buf)))
            buf = fast_os.pread(fd, start - older, older) + buf[:stop + 1]
            stop += start - older
            start = older
            continue
        yield start + lf + 1, buf[lf + 1:stop]
        stop = lf


def cmd_timeline(args, console):
    if args.limit < 0:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "--limit takes a number of events, 0 or more")
    if args.json and args.jsonl:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "--json and --jsonl exclude each other")
    session = None
    if args.session is not None:
        from intent_loop.storage.paths import session_hash

        session = session_hash(args.session)
    paths = current_project(console)
    matches = _Filter(args, None, session)  # parses --since/--until before any reading
    if args.all:
        # the whole ledger, streamed and verified from the first byte; leaves a fresh checkpoint
        task_id = pick_task(load_state(paths), args.task) if args.task else None
        matches.task_id = task_id
        printer = _Printer(console, args, paths.project_id)

        def show(event, _start, _stop):
            if matches(event):
                printer.row(_row(event))

        verify_all(paths, REDUCER, on_event=show, on_progress=console.progress, leave_checkpoint=True)
        printer.finish()
        return 0
    verified = load_checkpointed(paths)
    if args.task:
        matches.task_id = pick_task(verified.state, args.task)
    printer = _Printer(console, args, paths.project_id)
    for event in _newest(paths, verified, matches, args.limit):
        printer.row(_row(event))
    printer.finish()
    return 0

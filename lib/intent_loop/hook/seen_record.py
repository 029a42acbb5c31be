"""What one session was last told, in the deletable cache (`cache/v2.seen-<session hash>.json`):
the view it was shown and as of which claim-changing event, the current task the user and the
model last heard of, the Guard file as the last refresh left it and the Guard news still to
tell, the newest proposal announced, and what locally answered prompts changed. docs/hooks.md
("Telling, once") describes them; a hand-edited record can make a hook repeat
or skip a notice, never put words in the model's context (only ids and outcomes are read back).
"""
from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.errors import IntentLoopError
from intent_loop.storage.paths import check_real_directory

SEEN_PREFIX = "v2.seen-"
SEEN_CAP = 64 << 10  # a seen record is a few hundred bytes; a bigger one is not ours to believe
# The seen record's fields for the current task each audience was last told of (docs/hooks.md).
_TOLD = {"user": "current_user", "model": "current_model"}


class SeenRecord:
    """The seen record of one session, read at most once per call and written atomically (not
    durably: it is a cache)."""

    def __init__(self, paths, session, *, cwd, env):
        self.paths, self.session, self.cwd, self.env = paths, session, cwd, env
        self._seen_record = None
        self._written = False

    def has_record(self):
        """Whether this session was ever shown a view here (an unlinked session's first prompt was not:
        its SessionStart remembers only what it said of Guard)."""
        return "view_sha256" in self._seen()

    def enforcement(self):
        """What this session was told of Guard's enforcement (guard/enforcement.py: codes only, so a
        hand-edited record can change what is repeated, never the words), or None."""
        from intent_loop.guard.enforcement import is_told_verdict

        told = self._seen().get("enforcement")
        return told if is_told_verdict(told) else None

    def note_enforcement(self, verdict, *, user, write=True):
        """Remember the verdict on Guard this session was given (`user`: the user was told too);
        `write=False` keeps it for the next write (SessionStart's remember_view)."""
        record = self._seen()
        told = {key: verdict[key] for key in ("state", "cause", "mode", "stops", "confirmed")}
        told["user"] = user
        if record.get("enforcement") != told:
            record["enforcement"] = told
            if write:
                self._write_seen(record)
            else:
                self._seen_record = record

    def known_current(self, who):
        """The current task `who` ("user": the receipt line, "model": the context) was last told of:
        a task id, "" for none, or None when never recorded (a session older than this field)."""
        value = self._seen().get(_TOLD[who])
        return value if isinstance(value, str) else None

    def note_current(self, state, *, user=True, model=True):
        """`who` now knows the current task of `state` (told, or moved by this session itself)."""
        from intent_loop.intent.continuity import current_task_id

        record = self._seen()
        current = current_task_id(state) or ""
        changed = False
        for who, told in (("user", user), ("model", model)):
            if told and record.get(_TOLD[who]) != current:
                record[_TOLD[who]] = current
                changed = True
        if changed:
            self._write_seen(record)

    def _seen_path(self):
        # Format 2 (with the sharded cache): a format-1 `seen-<session>.json` is never read; it is
        # removed when this session's record is first written again, or with the rest of cache/.
        return fast_os.path.join(self.paths.cache_dir, f"{SEEN_PREFIX}{self.session}.json")

    def _write_seen(self, record):
        try:  # a symlinked cache/ is never written through (isdir would follow it)
            real = check_real_directory(self.paths.cache_dir)
        except IntentLoopError:
            real = False
        if real:
            from intent_loop.storage.atomic import replace_atomically

            try:
                replace_atomically(self._seen_path(), canonical_bytes(record), durable=False)
            except IntentLoopError:
                return
            if not self._written:  # this call's first write: a format-1 record goes with it
                self._written = True
                try:
                    fast_os.unlink(fast_os.path.join(self.paths.cache_dir, f"seen-{self.session}.json"))
                except OSError:
                    pass
            self._seen_record = record

    # -- the Guard file, seen from this session (docs/hooks.md, "Work after the answer") ----------
    def guard_signature(self):
        """(size, mtime, inode, ctime) of the Guard file Guard reads for this session, or None: one lstat,
        compared with what the last refresh left, decides whether a repair is due."""
        from intent_loop.guard.location import provider_path  # not provider: its imports cost every prompt

        try:
            st = fast_os.lstat(provider_path(self.cwd, self.env))
        except OSError:
            return None
        return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]  # ctime: no one can set it back

    def guard_changed(self):
        return self._seen().get("guard_file", "never") != self.guard_signature()

    def note_guard(self, result=None):
        """After a refresh: remember the file as it is now, and what the user must still hear of it
        (a repair, a refusal found after the answer), for the next prompt's receipt."""
        from intent_loop.ops.receipts import guard_news

        self._seen_record = None  # read again: after the answer, the next prompt may have written it since
        record = self._seen()
        record["guard_file"] = self.guard_signature()
        news = guard_news(result)
        if news is not None:
            record["guard_news"] = news
        self._write_seen(record)

    def take_guard_news(self):
        """The Guard news waiting in the seen record, worded, once (cleared here)."""
        news = self._seen().get("guard_news")
        if news is None:
            return None
        from intent_loop.ops.receipts import guard_news_text

        record = self._seen()
        record.pop("guard_news", None)
        self._write_seen(record)
        return guard_news_text(news)

    def remember_view(self, text, state, *, model_told=True):
        """Record (in the deletable cache) which view this session was shown, and as of which
        claim-changing event, so a later prompt with nothing new need not even render it; the model
        then also knows the current task (`model_told`)."""
        record = {"view_sha256": sha256_hex(text.encode()), "change_seq": state["last_change"]["seq"]}
        seen = self._seen()
        for key in ("proposals_seq", "guard_file", "guard_news", "enforcement", *_TOLD.values()):
            if key in seen:
                record[key] = seen[key]
        if model_told:
            from intent_loop.intent.continuity import current_task_id

            record[_TOLD["model"]] = current_task_id(state) or ""
        self._write_seen(record)

    def new_proposals(self, state):
        """The agent's proposals for this session's task the user has not been told about yet; they
        count as told from now on (the seen record: deleting the cache names them once more)."""
        from intent_loop.intent.continuity import Place

        task = state["tasks"].get(Place(state, self.paths, self.session).task_id)  # its own, or the one it follows
        newest = task.get("proposal_seq", 0) if task is not None else 0
        if not newest:
            return []
        told = self._seen().get("proposals_seq")
        told = told if type(told) is int else 0
        if newest <= told:
            return []
        record = self._seen()
        record["proposals_seq"] = newest
        self._write_seen(record)
        return sorted((c for c in state["candidates"].values() if c.get("kind") == "proposal"
                       and c["task_id"] == task["task_id"] and c["state"] == "open" and c["seq"] > told),
                      key=lambda c: (c["seq"], c["candidate_id"]))

    def note_unseen(self, items):
        """A prompt answered locally changed the task: the model has not seen the view since, so
        the seen record keeps its old view and gains what changed (for the next model prompt)."""
        record = self._seen()
        record["unseen"] = (record.get("unseen") if isinstance(record.get("unseen"), list) else []) + items
        self._write_seen(record)

    def unseen_changes(self):
        """What locally answered prompts changed, for the model. The record is a deletable cache,
        so only records of the shape ops.receipts makes (an outcome, a verb, short ids) are worded:
        a hand-edited record cannot put words into the model's context."""
        items = self._seen().get("unseen")
        if not isinstance(items, list) or not items:
            return []
        from intent_loop.hook.prompt_answer import change_texts

        return change_texts(items)

    def _seen(self):
        if self._seen_record is None:
            from intent_loop.storage.paths import read_capped

            try:  # a derived file: a link, FIFO or /dev/zero there is no record (never followed, never blocks)
                data = read_capped(self._seen_path(), SEEN_CAP)
                record = loads(data) if data is not None else {}
            except (OSError, ValueError, RecursionError, IntentLoopError):
                record = {}
            self._seen_record = record if isinstance(record, dict) else {}
        return dict(self._seen_record)

    def has_seen(self, text):
        return self._seen().get("view_sha256") == sha256_hex(text.encode())

    def has_seen_changes_up_to(self, state):
        """True when no claim-changing event happened since this session was shown its view."""
        return self._seen().get("change_seq") == state["last_change"]["seq"]

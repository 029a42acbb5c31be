"""The fail-open shell around every hook: read stdin, bound the time, answer once, exit 0.

Whatever happens (bad input, a corrupt ledger, a held lock, a full disk, SIGTERM, a bug),
Codex gets exactly `{"continue":true}` and exit status 0. This module is the only place
that decides what a hook process prints.
"""
import _signal  # the C module: `import signal` builds enums and costs ~7 ms
import sys
import time

from intent_loop.base import fast_os
from intent_loop.base.canonical import dumps, loads

FAIL_OPEN = b'{"continue":true}'
STDIN_CAP = 4 * 1024 * 1024
DEADLINE_SECONDS = 2.0
# Once a transaction starts writing what the user typed, the write, its sync and the receipt may
# run this long from the call's start instead of being cut at DEADLINE_SECONDS: a sync that stalls
# for two seconds would otherwise leave lines in the ledger that the answer calls "not recorded".
# Codex kills a hook at 5 s (hooks.json), which leaves 1.5 s for the interpreter's start and exit.
COMMIT_LIMIT_SECONDS = 3.5
# The hook process forks at the commit's write (CommitWatch.split): the child writes, syncs and
# composes the receipt; the hook process answers with it, or at this limit (from the call's start)
# with what the child reported, without ever waiting in a disk syscall itself (issue 33, item 8).
ANSWER_LIMIT_SECONDS = 4.0
_EVENTS_WITH_CONTEXT = ("SessionStart", "UserPromptSubmit")


class AfterAnswer:
    """The one channel from a handler to the runtime besides its answer: the work to run once the
    answer is out, and the answer to give instead if the handler then fails.

    The runtime makes one per call (`runtime["after"]`, see after_of). `add(paths, job)` queues a
    job over one project (jobs run in order, after a successful answer only); `despite_failure`
    queues one that runs even when the handler raised (a cache rebuild: the read failed because
    the checkpoint is far behind, so nothing is logged as a failure); `budget` is the seconds the
    work may take (a rebuild's own, else the hook's); `on_failure(exc)` composes the answer that
    names what the user typed and was not recorded, or was recorded and not answered.
    `hand_over(paths, job)` takes what a committed transaction left to finish (its cache, the Guard
    file's syncs, the release of the lock it still holds: storage.transaction); that job runs
    first, whether or not the handler then failed, since the other jobs may need the lock."""

    __slots__ = ("paths", "jobs", "rescue", "budget", "on_failure", "handed_over")

    def __init__(self):
        self.paths, self.jobs, self.rescue, self.budget, self.on_failure = None, [], None, None, None
        self.handed_over = []

    def add(self, paths, job):
        self.paths = paths
        self.jobs.append(job)

    def despite_failure(self, paths, job, *, budget):
        self.paths, self.rescue, self.budget = paths, job, budget

    def hand_over(self, paths, job):
        self.paths = paths
        self.handed_over.append(job)

    def work(self, *, succeeded):
        """The job to run now, or None: every queued job in order (a transaction's handed-over rest
        first; after a failure, only that and the rescue)."""
        jobs = self.handed_over + ([self.rescue] if self.rescue is not None else []) + (self.jobs if succeeded else [])
        if not jobs:
            return None
        if len(jobs) == 1:
            return jobs[0]

        def each(deadline):
            for job in jobs:
                job(deadline)

        return each


def after_of(runtime):
    """The AfterAnswer of this call (a handler called without the runtime gets a fresh one)."""
    after = runtime.get("after")
    if after is None:
        after = runtime["after"] = AfterAnswer()
    return after


class HookDeadline(BaseException):
    """Raised by SIGALRM; a BaseException so library code cannot swallow it."""


class CommitWatch:
    """What a handler's transaction tells the runtime about its write (storage.transaction's
    `watch`): `writing()` moves the alarm from the deadline to COMMIT_LIMIT_SECONDS, since past its
    last deadline check a write is better finished than cut; `written()` marks the lines as in the
    ledger, so a failure from then on is answered "written, not confirmed", never "not recorded"."""

    __slots__ = ("started", "is_written", "split", "pipe")

    def __init__(self, started, split=None):
        self.started = started
        self.is_written = False
        self.split = split  # the hook process: forks the commit off (returns only in the child)
        self.pipe = None  # in that child: the pipe to the answering hook process

    def writing(self, paths=None):
        if self.split is not None and self.pipe is None:
            self.pipe = self.split(paths)
        left = self.started + COMMIT_LIMIT_SECONDS - time.monotonic()
        if left > 0:
            _signal.setitimer(_signal.ITIMER_REAL, left)

    def committing(self):
        """Past the point of no return (the write or rename, with the alarm held): the lines will be
        in the ledger unless that call fails. Told to the answering hook process."""
        self._tell(b"C")

    def written(self):
        self.is_written = True
        self._tell(b"W")

    def _tell(self, report):
        if self.pipe is not None:
            from intent_loop.hook import deferred  # loaded: it made the pipe

            deferred.tell(self.pipe, report)


class _Output:
    """Writes the one answer exactly once, even if SIGTERM arrives mid-way."""

    def __init__(self, fd):
        self.fd = fd
        self.done = False
        self.framed = False  # the commit's child: its answer goes to the hook process, length first

    def write(self, data):
        if self.done:
            return
        self.done = True
        if self.framed:
            data = b"A" + len(data).to_bytes(8, "little") + data
        view = memoryview(data)
        while view:
            try:
                view = view[fast_os.write(self.fd, view):]
            except InterruptedError:
                continue
            except OSError:
                return


def read_stdin(fd, cap=STDIN_CAP):
    """All of stdin up to `cap` bytes; the rest is drained so Codex never blocks writing it."""
    chunks, size = [], 0
    while True:
        chunk = fast_os.read(fd, 65536)
        if not chunk:
            break
        if size < cap:
            chunks.append(chunk[: cap - size])
        size += len(chunk)
    return b"".join(chunks), size > cap


def render_answer(event_name, answer):
    """Only keys Codex accepts; Stop never carries hookSpecificOutput."""
    out = {"continue": True}
    context = answer.get("context") if answer else None
    if context and event_name in _EVENTS_WITH_CONTEXT:
        out["hookSpecificOutput"] = {"hookEventName": event_name, "additionalContext": context}
    message = answer.get("system_message") if answer else None
    if message and event_name in _EVENTS_WITH_CONTEXT:  # the TUI shows both as `↳ Hook · <text>`
        out["systemMessage"] = message
    block = answer.get("block_reason") if answer else None
    if block and event_name == "UserPromptSubmit":  # Codex shows the reason and makes no model request
        out["decision"] = "block"
        out["reason"] = block
    if len(out) == 1:
        return FAIL_OPEN
    return dumps(out).encode("utf-8", "replace")


def run_hook(event_name, handler, *, stdin_fd=0, stdout_fd=1, env=None, deadline_seconds=DEADLINE_SECONDS,
             detach=False, then=None, leave=None):
    """Run `handler(payload, context) -> {"context"?, "system_message"?, "block_reason"?}` fail-open;
    never raises. What the handler queues on `context["after"]` (an AfterAnswer) runs once the
    answer is out, in a detached child when `detach` (the hook process), else right here
    (in-process callers and tests), followed there by `then()` when given. Returns whether any
    work ran after the answer (and so `then` with it).

    With `detach`, a transaction's write forks the call (CommitWatch.split, `_split_commit`): the
    child goes on and answers through a pipe, and this process answers once that answer or
    ANSWER_LIMIT_SECONDS comes, then calls `leave()` (default: exit at once) instead of returning."""
    env = fast_os.environment if env is None else env
    output = _Output(stdout_fd)
    started = time.monotonic()
    where = "start"
    after = AfterAnswer()
    watch = CommitWatch(started)
    if detach:
        watch.split = lambda paths: _split_commit(paths, event_name, output, after, watch, leave)
    context = {"after": after, "commit_watch": watch}
    succeeded = False

    def on_term(signum, frame):
        output.write(FAIL_OPEN)
        fast_os._exit(0)

    def on_alarm(signum, frame):
        raise HookDeadline()

    try:
        _signal.signal(_signal.SIGTERM, on_term)
        _signal.signal(_signal.SIGALRM, on_alarm)
        _signal.setitimer(_signal.ITIMER_REAL, deadline_seconds)
        where = "stdin"
        raw, _truncated = read_stdin(stdin_fd)
        where = "parse"
        payload = parse_payload(raw, event_name)
        where = "handler"
        context.update(env=env, deadline=started + deadline_seconds - 0.25, executable=sys.argv[0])
        answer = handler(payload, context) if payload is not None else None
        where = "answer"
        data = render_answer(event_name, answer)
        succeeded = True
    except BaseException as exc:  # the fail-open boundary: every failure becomes continue:true
        # a read that found the cache far behind (CACHE_REBUILDING) still leaves its rebuild behind
        data = FAIL_OPEN
        if after.rescue is None:
            log_failure(env, event_name, where, exc)
            data = _failure_answer(event_name, after, exc)
    try:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
    except OSError:
        pass
    output.write(data)
    if watch.pipe is not None:  # the commit's child: the hook process has its answer; go on detached
        fast_os.close(watch.pipe)
        watch.pipe, detach = None, None
    paths, job = _with_maintenance(after.paths, after.work(succeeded=succeeded))
    if job is None:
        return False
    try:
        from intent_loop.hook import deferred

        deferred.finish(paths, job, then=then, detach=detach, deadline_seconds=after.budget or deadline_seconds,
                        log=lambda step, exc: log_failure(env, event_name, step, exc))
    except BaseException as exc:  # the answer is out; nothing here may turn into a crash
        log_failure(env, event_name, "after_answer", exc)
    return True


def _split_commit(paths, event_name, output, after, watch, leave):
    """Fork at the commit's write. The child (returned the pipe to write to) writes, syncs, composes
    the answer and does the work after it; this process, which Codex waits on, never returns:
    it answers with the child's answer, or at ANSWER_LIMIT_SECONDS with what the child reported
    (the lines written or being written: "written, not confirmed"; nothing, the child gone:
    "NOT recorded"), entering no disk syscall, then leaves."""
    from intent_loop.hook import deferred

    split = deferred.split_commit(paths)
    if split is None:  # no fork here: this process commits itself, as before
        watch.split = None
        return None
    side, pipe = split
    if side == "child":
        output.fd, output.framed = pipe, True
        watch.split = None  # split once: a later write in this child is its own
        return pipe
    try:  # never returns: unwinding would release the lock the child holds
        reported, answer, ended = deferred.child_reply(pipe, until=watch.started + ANSWER_LIMIT_SECONDS)
        if answer is None:  # written, or stalled past the point of no return: the lines will be there
            watch.is_written = b"W" in reported or (b"C" in reported and not ended)
            answer = _failure_answer(event_name, after, HookDeadline() if not ended else _ChildGone())
            _signal.setitimer(_signal.ITIMER_REAL, 0)
        output.write(answer)
        (leave or _exit_now)()
    finally:
        fast_os._exit(0)


class _ChildGone(Exception):
    """The commit's child ended without an answer (killed): INTERNAL_ERROR in the answer."""


def _exit_now():
    fast_os._exit(0)


def _failure_answer(event_name, after, exc):
    """continue:true, with what the handler said to tell the user when it fails after accepting
    work the user typed (`after.on_failure`, see handlers); never raises."""
    on_failure = after.on_failure
    if on_failure is None:
        return FAIL_OPEN
    try:
        _signal.setitimer(_signal.ITIMER_REAL, 0.2)  # composing a one-line answer: bounded as well
        return render_answer(event_name, on_failure(exc))
    except BaseException:
        return FAIL_OPEN


def _with_maintenance(paths, job):
    """(paths, job) of the after-answer work, made to exist when only storage maintenance was asked
    for (the detached child runs what the call and its own job asked for: see deferred.run_inline)."""
    if job is not None:
        return paths, job
    maintenance = sys.modules.get("intent_loop.storage.maintenance")  # not loaded: nothing asked
    jobs = maintenance.peek_maintenance() if maintenance is not None else []
    if not jobs:
        return None, None
    return jobs[0][0], lambda deadline: None


def serve(event_name, handler):
    """The hook process's whole life: answer through `run_hook` (deferred work detached), then
    leave at once.

    fast_os._exit skips interpreter teardown (finalizing every loaded module and a GC pass), which
    costs about 3 ms, a quarter of an interpreter start, once the write path is loaded. Nothing
    is lost by it: the answer left through fast_os.write, every file written was closed (and synced
    where durability matters) before the handler returned, and the lock was released, or is held
    by the child that finishes a committed transaction's derived work (AfterAnswer.hand_over).
    The hook-run record goes to that child too when there is one: Codex waits for this process.
    """
    if fast_os.getenv("INTENT_LOOP_EXTRACTING") is not None:  # only the first run after shiv extracted the runtime
        from intent_loop.launch.extracted_runtime import finish_extraction

        finish_extraction()

    def record_run():  # after the answer: doctor's proof that Codex runs us
        from intent_loop.launch import run_record

        run_record.record(fast_os.environment, event_name, sys.argv[0] if sys.argv else None)

    if not run_hook(event_name, handler, detach=True, then=record_run):
        record_run()  # no child to leave it to: here, before the exit Codex waits for
    fast_os._exit(0)


def parse_payload(raw, event_name):
    """The payload dict, or None when it is not a JSON object for this binary's event."""
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        payload = loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(payload, dict) or payload.get("hook_event_name") != event_name:
        return None
    return payload


def log_failure(env, event_name, where, exc):
    """Record a hook failure, codes only (hook/failure_log.py); never raises."""
    try:
        from intent_loop.hook import failure_log

        failure_log.record(env, event_name, where, exc, executable=sys.argv[0] if sys.argv else None)
    except BaseException:  # logging must never turn a fail-open answer into a crash
        pass

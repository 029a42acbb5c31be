"""A separate writer or lock holder for the storage tests (run with `python -I`).

    ledger_worker.py append DATA_ROOT WORKSPACE [--count N] [--events E] [--prefix P] [--request-id R]
                     [--deadline SECONDS] [--barrier-fd FD]
    ledger_worker.py hold DATA_ROOT WORKSPACE [--heartbeat SECONDS]

Output, one line each, flushed at once: `ready` (imports done, barrier passed), `ok <event_id>
<replayed 0|1>` after every mutate() that RETURNED (so a test may demand that event), `error
<code>` and exit 3 on an IntentLoopError; `locked <token>` and, after stdin closes, `released`.

Stop hook, installed before the storage modules load by wrapping intent_loop.base.fast_os.rename / .replace in this
process only: IL_TEST_STOP_AT=<step> makes the worker print `stopping <step>` and stop itself
(SIGSTOP; IL_TEST_STOP_SIGNAL=KILL kills instead) exactly there, so a test can inspect the
lock while the worker is frozen and then SIGKILL it:
    prepared    before renaming the prepared ledger.lock.<token>.tmp/ into place (gate held)
    locked      right after ledger.lock/ was installed
    ledger-temp before replacing the ledger with the written, fsynced temp file (a new ledger,
                a cut torn tail)
    replaced    right after the ledger was replaced (before the directory sync and release)
    appending   before the first byte of an append to the existing ledger
    appended-partly  after only the first line of the request was appended
    appended    after every line was appended, before the sync
    releasing   before moving ledger.lock/ aside to release it (gate held)
    reclaiming  before moving a dead holder's ledger.lock/ aside (gate held)
    reclaimed   right after moving a dead holder's ledger.lock/ aside (gate held)
"""
import os
import select
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _stop_hook(step, sig):
    """Wrap the library's os.rename / os.replace so this process freezes (or dies) at `step`."""
    real_rename, real_replace = os.rename, os.replace

    def stop():
        sys.stdout.write(f"stopping {step}\n")
        sys.stdout.flush()
        os.kill(os.getpid(), sig)

    def lock_move(src, dst):
        src, dst = os.fspath(src), os.fspath(dst)
        if src.endswith(".tmp") and dst.endswith("ledger.lock"):
            return "install"
        if src.endswith("ledger.lock") and dst.endswith(".released"):
            return "release"
        if src.endswith("ledger.lock") and dst.endswith(".reclaimed"):
            return "reclaim"
        return None

    def rename(src, dst, *args, **kwargs):
        move = lock_move(src, dst)
        if (step, move) in (("prepared", "install"), ("releasing", "release"), ("reclaiming", "reclaim")):
            stop()
        real_rename(src, dst, *args, **kwargs)
        if (step, move) in (("locked", "install"), ("reclaimed", "reclaim")):
            stop()

    def replace(src, dst, *args, **kwargs):
        is_ledger = os.fspath(dst).endswith(os.sep + "ledger.jsonl")
        if step == "ledger-temp" and is_ledger:
            stop()
        real_replace(src, dst, *args, **kwargs)
        if step == "replaced" and is_ledger:
            stop()

    from intent_loop.base import fast_os as lib_os

    def append_write(real_write, fd, data):
        if step == "appending":
            stop()
        if step == "appended-partly":
            data = bytes(data)
            written = real_write(fd, data[: data.index(b"\n") + 1])
            stop()
            return written
        written = real_write(fd, data)
        if step == "appended":
            stop()
        return written

    lib_os.rename, lib_os.replace = rename, replace
    _wrap_ledger_appends(append_write)


def _wrap_ledger_appends(append_write):
    """Route the library's write() calls on a descriptor opened O_APPEND on the ledger through
    `append_write(real_write, fd, data)`; every other write goes straight through."""
    from intent_loop.base import fast_os as lib_os

    real_open, real_write = lib_os.open, lib_os.write
    append_fds = set()

    def open_(path, flags, *args, **kwargs):
        fd = real_open(path, flags, *args, **kwargs)
        if os.fspath(path).endswith(os.sep + "ledger.jsonl") and flags & os.O_APPEND:
            append_fds.add(fd)
        return fd

    def write(fd, data):
        if fd not in append_fds:
            return real_write(fd, data)
        return append_write(real_write, fd, data)

    lib_os.open, lib_os.write = open_, write


def _slow_appends(pause):
    """IL_TEST_SLOW_APPEND=<seconds>: an append writes one line per write() with a pause after
    each, so a test that kills the worker at random lands between the lines of a request."""
    def append_write(real_write, fd, data):
        data = bytes(data)
        stop = data.find(b"\n") + 1 or len(data)
        written = real_write(fd, data[:stop])
        time.sleep(pause)
        return written

    _wrap_ledger_appends(append_write)


def _options(argv):
    opts = {}
    it = iter(argv)
    for name in it:
        if not name.startswith("--"):
            raise SystemExit(f"unexpected argument {name!r}")
        opts[name[2:]] = next(it)
    return opts


def _say(text):
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def run_append(paths, opts, counting, IntentLoopError):
    count = int(opts.get("count", "1"))
    per_request = int(opts.get("events", "1"))
    prefix = opts.get("prefix", f"w{os.getpid()}")
    timeout = float(opts.get("deadline", "30"))
    reducer = counting.CountingReducer()
    for index in range(count):
        request_id = opts.get("request-id") or f"{prefix}-{index}"
        value = opts.get("value", f"{prefix}-{index}")
        try:
            mutation = counting.append_value(paths, reducer, value, request_id=request_id, timeout=timeout,
                                             events=per_request)
            events, replayed = mutation.events, mutation.replayed
        except IntentLoopError as exc:
            _say(f"error {exc.code}")
            return 3
        _say(f"ok {events[0]['event_id']} {int(replayed)}")
    return 0


def run_hold(paths, opts, lock_mod, paths_mod):
    paths_mod.ensure_project_layout(paths)
    heartbeat = float(opts.get("heartbeat", "0"))
    # no keepalive thread: the tests decide when this holder shows progress (--heartbeat)
    with lock_mod.ProjectLock(paths.dir, deadline=time.monotonic() + 10.0, keepalive=False) as held:
        _say(f"locked {held.token}")
        while True:  # hold until the test closes our stdin
            ready, _, _ = select.select([sys.stdin], [], [], heartbeat or None)
            if ready and not os.read(sys.stdin.fileno(), 1):
                break
            held.heartbeat()
    _say("released")
    return 0


def main(argv):
    sys.path[:0] = [os.path.join(REPO, "lib"), REPO]
    step = os.environ.get("IL_TEST_STOP_AT")
    if step:
        sig = signal.SIGKILL if os.environ.get("IL_TEST_STOP_SIGNAL") == "KILL" else signal.SIGSTOP
        _stop_hook(step, sig)
    if os.environ.get("IL_TEST_SLOW_APPEND"):
        _slow_appends(float(os.environ["IL_TEST_SLOW_APPEND"]))
    from intent_loop.errors import IntentLoopError
    from intent_loop.storage import lock as lock_mod
    from intent_loop.storage import paths as paths_mod
    from tests.helpers import counting

    mode, data_root, workspace, *rest = argv
    opts = _options(rest)
    paths = paths_mod.project_paths(data_root, workspace)
    if "barrier-fd" in opts:  # every worker blocks here until the test closes the pipe's write end
        os.read(int(opts["barrier-fd"]), 1)
    _say("ready")
    if mode == "append":
        return run_append(paths, opts, counting, IntentLoopError)
    if mode == "hold":
        return run_hold(paths, opts, lock_mod, paths_mod)
    raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

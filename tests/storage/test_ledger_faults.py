"""Faults: I/O errors injected at os level, and writers SIGKILLed at random and at chosen protocol steps."""
import errno
import hashlib
import json
import os
import random
import time

import pytest

from helpers.counting import CountingReducer, append_value
from helpers.files import all_paths, files_containing, open_fd_count, read_bytes, residue
from helpers.procs import Worker, worker_args
from intent_loop.base import fast_os as lib_os
from intent_loop.base import platform
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import lock as lock_mod
from intent_loop.storage import reading
from intent_loop.storage.cache import checkpoint

START_TIMEOUT = 20
NEXT_WRITER_DEADLINE = 2.0  # what a hook gets


# -- injected I/O errors ------------------------------------------------------------------------------

class LedgerTempFaults:
    """Makes os-level calls fail, but only for the ledger's temp file (or its final rename/sync)."""

    def __init__(self, monkeypatch, project):
        self.monkeypatch = monkeypatch
        self.project = project
        self.temp_fds = set()
        self.triggered = 0

    def _is_ledger_temp(self, path):
        name = os.path.basename(os.fspath(path))
        return (os.path.dirname(os.fspath(path)) == self.project.dir
                and name.startswith("ledger.jsonl.") and name.endswith(".tmp"))

    def _track_temp_fds(self):
        real_open, real_close = os.open, os.close

        def tracking_open(path, flags, mode=0o777, *, dir_fd=None):
            fd = real_open(path, flags, mode, dir_fd=dir_fd)
            if self._is_ledger_temp(path):
                self.temp_fds.add(fd)
            return fd

        def tracking_close(fd):
            self.temp_fds.discard(fd)
            return real_close(fd)

        self.monkeypatch.setattr(lib_os, "open", tracking_open)
        self.monkeypatch.setattr(lib_os, "close", tracking_close)

    def _fail(self, err):
        self.triggered += 1
        raise OSError(err, os.strerror(err))

    def at(self, stage, err):
        if stage == "write":
            self._track_temp_fds()
            real_write = os.write

            def short_then_failing_write(fd, data):
                if fd not in self.temp_fds:
                    return real_write(fd, data)
                if not self.triggered and len(data) > 1:
                    self.triggered += 1  # a short write lands first, then the disk is full
                    return real_write(fd, bytes(data[: len(data) // 2]))
                self._fail(err)

            self.monkeypatch.setattr(lib_os, "write", short_then_failing_write)
        elif stage == "fsync":
            self._track_temp_fds()
            real_fsync = platform.fsync_file

            def failing_fsync(fd):
                if fd in self.temp_fds:
                    self._fail(err)
                return real_fsync(fd)

            self.monkeypatch.setattr(platform, "fsync_file", failing_fsync)
        elif stage == "replace":
            real_replace = os.replace

            def failing_replace(src, dst, *args, **kwargs):
                if os.fspath(dst) == self.project.ledger:
                    self._fail(err)
                return real_replace(src, dst, *args, **kwargs)

            self.monkeypatch.setattr(lib_os, "replace", failing_replace)
        elif stage == "directory-fsync":
            real_sync_dir = platform.fsync_directory

            def failing_sync_dir(path):
                if os.fspath(path) == self.project.dir:
                    self._fail(err)
                return real_sync_dir(path)

            self.monkeypatch.setattr(platform, "fsync_directory", failing_sync_dir)
        else:
            raise ValueError(stage)


def _temp_litter(root):
    return [p for p in all_paths(root) if p.endswith(".tmp")]


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("stage", ["write", "fsync", "replace"])
@pytest.mark.parametrize("history", [0], ids=["first-write"])  # appends to a ledger: test_ledger_append.py
def test_failure_before_the_rename_is_write_failed_and_changes_nothing(project, monkeypatch, stage, err, history):
    for index in range(history):
        append_value(project, CountingReducer(), f"v{index}", request_id=f"v-{index}")
    before = read_bytes(project.ledger) if history else None
    with monkeypatch.context() as patched:
        faults = LedgerTempFaults(patched, project)
        faults.at(stage, err)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "doomed", request_id="doomed")

    assert faults.triggered
    assert info.value.code == ErrorCode.WRITE_FAILED
    assert (read_bytes(project.ledger) if os.path.exists(project.ledger) else None) == before
    assert _temp_litter(project.data_root) == [] and residue(project.data_root) == []
    assert reading.load_verified(project, CountingReducer()).count == history
    mutation = append_value(project, CountingReducer(), "doomed", request_id="doomed")
    replayed = mutation.replayed
    assert not replayed and reading.verify_all(project, CountingReducer()).count == history + 1


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_directory_sync_failure_is_durability_uncertain_and_the_retry_returns_the_events(project, monkeypatch, err):
    """Creating the ledger renames a temp file into place: that rename is durable only with the directory."""
    with monkeypatch.context() as patched:
        faults = LedgerTempFaults(patched, project)
        faults.at("directory-fsync", err)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "maybe", request_id="maybe", events=2)

    assert faults.triggered
    assert info.value.code == ErrorCode.DURABILITY_UNCERTAIN
    assert reading.verify_all(project, CountingReducer()).state["values"] == ["maybe", "maybe"]
    assert reading.load_verified(project, CountingReducer()).count == 2
    assert _temp_litter(project.data_root) == [] and residue(project.data_root) == []
    stored = [json.loads(line) for line in read_bytes(project.ledger).splitlines()]
    mutation = append_value(project, CountingReducer(), "maybe", request_id="maybe", events=2)
    events, replayed = mutation.events, mutation.replayed
    assert replayed and events == stored


def test_any_write_failing_is_write_failed_not_a_raw_os_error(project, monkeypatch):
    """ENOSPC on every write (the lock's owner record included) must still be WRITE_FAILED, with no litter."""
    append_value(project, CountingReducer(), "v0", request_id="v-0")
    before = read_bytes(project.ledger)
    fds_before = open_fd_count()

    def full_disk(_fd, _data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patched:
        patched.setattr(lib_os, "write", full_disk)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "doomed", request_id="doomed")

    assert info.value.code == ErrorCode.WRITE_FAILED
    assert read_bytes(project.ledger) == before
    assert residue(project.data_root) == []
    assert open_fd_count() == fds_before  # the prepared owner record's descriptor was closed


def test_cache_write_failure_never_fails_a_mutation(project, monkeypatch):
    append_value(project, CountingReducer(), "v0", request_id="v-0")
    real_replace = os.replace

    def no_cache(src, dst, *args, **kwargs):
        if os.fspath(dst).endswith(checkpoint.ROOT_FILE):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(src, dst, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(lib_os, "replace", no_cache)
        mutation = append_value(project, CountingReducer(), "v1", request_id="v-1")
        events, replayed = mutation.events, mutation.replayed

    assert not replayed and len(events) == 1
    assert reading.load_verified(project, CountingReducer()).state["values"] == ["v0", "v1"]
    assert _temp_litter(project.data_root) == []


def test_quarantine_failure_leaves_the_torn_ledger_byte_identical(project, monkeypatch):
    append_value(project, CountingReducer(), "v0", request_id="v-0")
    with open(project.ledger, "ab") as fh:
        fh.write(b'{"torn-')
    before = read_bytes(project.ledger)
    real_replace = os.replace

    def failing_ledger_replace(src, dst, *args, **kwargs):
        if os.fspath(dst) == project.ledger:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(lib_os, "replace", failing_ledger_replace)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "v1", request_id="v-1")

    assert info.value.code == ErrorCode.WRITE_FAILED
    assert read_bytes(project.ledger) == before
    assert _temp_litter(project.data_root) == []
    append_value(project, CountingReducer(), "v1", request_id="v-1")
    assert reading.verify_all(project, CountingReducer()).count == 2


# -- orphans left by killed writers ------------------------------------------------------------------

@pytest.mark.parametrize("where", ["dir", "cache_dir", "private_dir", "quarantine_dir"])
def test_strictly_named_orphan_temps_are_removed_under_the_lock(project, where):
    append_value(project, CountingReducer(), "v0", request_id="v-0")
    target = {"dir": "ledger.jsonl", "cache_dir": checkpoint.ROOT_FILE, "private_dir": "ab12.json",
              "quarantine_dir": "20260101T000000Z-0a1b2c3d-torn-tail.json"}[where]
    directory = getattr(project, where)
    orphan = os.path.join(directory, f"{target}.{'c' * 32}.tmp")
    lookalikes = [os.path.join(directory, name) for name in (f"{target}.notes.tmp", f"{target}.{'c' * 31}.tmp")]
    for path in [orphan, *lookalikes]:
        with open(path, "wb") as fh:
            fh.write(b"left by a killed writer")

    append_value(project, CountingReducer(), "v1", request_id="v-1")

    assert not os.path.exists(orphan)
    assert all(os.path.exists(path) for path in lookalikes)  # never anything not strictly ours


# -- SIGKILL at random points -----------------------------------------------------------------------

def _next_writer_succeeds(project, value):
    """The next writer gets the lock within its 2 s deadline and appends (a hook's budget)."""
    started = time.monotonic()
    mutation = append_value(project, CountingReducer(), value, request_id=value, timeout=NEXT_WRITER_DEADLINE)
    events, _ = mutation.events, mutation.replayed
    elapsed = time.monotonic() - started
    assert elapsed < NEXT_WRITER_DEADLINE
    return events[0]["event_id"]


def _is_young_empty_preparation(path):
    """A writer killed between mkdir(ledger.lock.<token>.tmp) and creating its owner record leaves an
    empty directory that looks exactly like a live writer mid-preparation; the protocol spares it
    for OWNERLESS_GRACE seconds and removes it after that."""
    return (path.endswith(".tmp") and os.path.basename(path).startswith("ledger.lock.")
            and os.path.isdir(path) and not os.listdir(path)
            and time.time() - os.lstat(path).st_mtime <= lock_mod.OWNERLESS_GRACE + 10)


def _backdate_young_preparations(project):
    past = time.time() - lock_mod.OWNERLESS_GRACE - 60
    for path in residue(project.dir):
        if os.path.isdir(path) and not os.listdir(path):
            os.utime(path, (past, past))


def _lock_residue(project):
    """Residue a killed writer may not leave once the next writer held the lock. Temp files inside
    quarantine/ are left to test_strictly_named_orphan_temps_are_removed_under_the_lock."""
    return [p for p in residue(project.dir)
            if not _is_young_empty_preparation(p) and not p.startswith(project.quarantine_dir + os.sep)]


def _check_ledger_after_crash(project, promised_ids, torn_tails):
    verified = reading.verify_all(project, CountingReducer())
    on_disk = {json.loads(line)["event_id"] for line in read_bytes(project.ledger).splitlines()}
    assert verified.torn_tail == 0
    assert promised_ids <= on_disk, f"lost acknowledged events: {sorted(promised_ids - on_disk)[:5]}"
    assert len(on_disk) == verified.count  # no duplicated event ids
    assert _lock_residue(project) == []
    records = [json.loads(read_bytes(os.path.join(project.quarantine_dir, name)))
               for name in os.listdir(project.quarantine_dir) if name.endswith(".json")]
    digests = {(r["byte_length"], r["sha256"]) for r in records}
    for tail, marker in torn_tails:
        assert (len(tail), hashlib.sha256(tail).hexdigest()) in digests
        assert files_containing(project.data_root, marker) == []


def test_writers_sigkilled_at_random_points_lose_nothing_acknowledged(project):
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    print(f"random seed {seed}")  # shown by pytest when this test fails
    promised, torn_tails = set(), []
    promised.add(_next_writer_succeeds(project, "start"))
    for trial in range(90):
        if trial % 9 == 4:  # a crashed appender's partial line, for a killed writer to meet
            marker = f"TORN-{trial}-{os.urandom(4).hex()}".encode()
            tail = b'{"actor":"user","payload":{"secret":"' + marker
            with open(project.ledger, "ab") as fh:
                fh.write(tail)
            torn_tails.append((tail, marker))
        args = worker_args("append", project.data_root, project.root, "--count", 40,
                           "--prefix", f"t{trial}", "--deadline", 10)
        with Worker(args) as worker:
            worker.wait_for("ready", timeout=START_TIMEOUT)
            time.sleep(rng.uniform(0, 0.03))
            worker.kill()
            worker.finish(timeout=START_TIMEOUT)
            promised.update(worker.reported())
        promised.add(_next_writer_succeeds(project, f"after-{trial}"))
        _check_ledger_after_crash(project, promised, torn_tails)
    _backdate_young_preparations(project)  # as if the grace had passed
    _next_writer_succeeds(project, "final")
    assert [p for p in residue(project.dir) if not p.startswith(project.quarantine_dir + os.sep)] == []
    assert len(promised) > 90


# -- SIGSTOP/SIGKILL at chosen protocol steps ---------------------------------------------------------

STEPS = ["prepared", "locked", "ledger-temp", "replaced", "appending", "appended-partly", "appended",
         "releasing", "reclaiming", "reclaimed"]
REPLACE_STEPS = ("ledger-temp", "replaced")  # an existing ledger is replaced only to cut a torn tail


def _leave_dead_holder(project):
    """A writer killed right after installing ledger.lock/: the lock a reclaimer must recover."""
    args = worker_args("append", project.data_root, project.root, "--prefix", "dead-holder", "--deadline", 10)
    with Worker(args, env_extra={"IL_TEST_STOP_AT": "locked", "IL_TEST_STOP_SIGNAL": "KILL"}) as worker:
        worker.finish(timeout=START_TIMEOUT)
    assert os.path.isdir(project.lock_dir)


def _contender_times_out(project):
    """A separate writer with a short deadline must not get past a live (frozen) worker."""
    args = worker_args("append", project.data_root, project.root, "--prefix", "contender", "--deadline", 0.3)
    with Worker(args) as contender:
        code, lines = contender.finish(timeout=START_TIMEOUT)
    assert (code, lines[-1]) == (3, f"error {ErrorCode.LOCK_TIMEOUT}"), lines


@pytest.mark.parametrize("repeat", range(2))
@pytest.mark.parametrize("step", STEPS)
def test_writer_killed_at_a_chosen_step(project, step, repeat):
    promised, torn_tails = {_next_writer_succeeds(project, "before")}, []
    if repeat or step in REPLACE_STEPS:
        marker = f"TORN-{step}-{os.urandom(4).hex()}".encode()
        tail = b'{"actor":"agent","payload":{"x":"' + marker
        with open(project.ledger, "ab") as fh:
            fh.write(tail)
        torn_tails.append((tail, marker))
    if step.startswith("reclaim"):
        _leave_dead_holder(project)
    before = read_bytes(project.ledger)
    args = worker_args("append", project.data_root, project.root, "--prefix", f"stopped-{step}", "--deadline", 10,
                       "--events", 3)

    with Worker(args, env_extra={"IL_TEST_STOP_AT": step}) as worker:
        worker.wait_for(f"stopping {step}", timeout=START_TIMEOUT)
        worker.wait_stopped(timeout=START_TIMEOUT)
        _contender_times_out(project)  # frozen is alive: never robbed
        frozen_view = read_bytes(project.ledger)
        worker.kill()
        promised.update(worker.reported())

    cut = before[: len(before) - sum(len(tail) for tail, _ in torn_tails)]  # a torn tail is cut before appending
    assert frozen_view in (before, cut) or step in ("replaced", "appended-partly", "appended", "releasing")
    assert frozen_view == before or torn_tails or step in ("replaced", "appended-partly", "appended", "releasing")
    if step == "appended-partly":  # one line of a three-event request: never projected
        assert reading.load_verified(project, CountingReducer()).count == before.count(b"\n")
    promised.add(_next_writer_succeeds(project, "after"))
    _check_ledger_after_crash(project, promised, torn_tails)
    assert _temp_litter(project.dir) == []

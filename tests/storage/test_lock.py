"""The project lock: live holders are never robbed; dead, owner-less and pid-reused holders are recovered."""
import fcntl
import json
import os
import sys
import threading
import time

import pytest

from helpers.files import open_fd_count, residue
from helpers.procs import Worker, worker_args
from intent_loop.base import fast_os as lib_os
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import lock as lock_mod
from intent_loop.storage import paths as paths_mod

START_TIMEOUT = 20  # generous: a worker normally starts in well under a second
RECOVERY_BOUND = 1.5  # "well under 0.5 s" required; 3x margin for a loaded 2-core machine


@pytest.fixture
def layout(project):
    paths_mod.ensure_project_layout(project)
    return project


def _holder(project, *options):
    """A separate process that takes the project lock and holds it until its stdin closes."""
    return Worker(worker_args("hold", project.data_root, project.root, *options), stdin_pipe=True)


def _owner(project):
    with open(os.path.join(project.lock_dir, "owner.json"), "rb") as fh:
        return json.loads(fh.read())


def _timed_acquire(project, *, timeout, **kwargs):
    """(elapsed seconds, error code or None) of one acquire+release with a deadline `timeout` away."""
    start = time.monotonic()
    try:
        with lock_mod.ProjectLock(project.dir, deadline=start + timeout, **kwargs):
            pass
    except IntentLoopError as exc:
        return time.monotonic() - start, exc.code
    return time.monotonic() - start, None


def _write_owner_dir(project, record, *, age=0.0):
    """Install a hand-made ledger.lock/ (as an older or foreign writer would leave it)."""
    os.mkdir(project.lock_dir, 0o700)
    owner = os.path.join(project.lock_dir, "owner.json")
    if record is not None:
        with open(owner, "w") as fh:
            fh.write(json.dumps(record))
    if age:
        past = time.time() - age
        if record is not None:
            os.utime(owner, (past, past))
        os.utime(project.lock_dir, (past, past))
    return owner


def _start_time_of_self():
    from intent_loop.base import platform

    return platform.process_start_time(os.getpid())


def test_acquire_installs_an_owner_record_and_release_removes_everything(layout):
    with lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 5) as held:
        owner = _owner(layout)
        assert held.is_held()

    assert owner["pid"] == os.getpid() and owner["token"] == held.token
    assert set(owner) >= {"pid", "token", "process_start", "acquired_at"}
    assert residue(layout.dir) == []


def test_live_holder_is_never_robbed(layout):
    with _holder(layout) as holder:
        token = holder.wait_for("locked ", timeout=START_TIMEOUT).split()[1]

        elapsed, code = _timed_acquire(layout, timeout=1.0)

        assert code == ErrorCode.LOCK_TIMEOUT
        assert elapsed < 1.0 + 1.0
        assert _owner(layout)["token"] == token and holder.proc.poll() is None
        holder.close_stdin()
        assert holder.finish(timeout=START_TIMEOUT)[0] == 0
    assert residue(layout.dir) == []


def test_silent_live_holder_makes_waiters_give_up_without_robbing_it(layout):
    with _holder(layout) as holder:
        token = holder.wait_for("locked ", timeout=START_TIMEOUT).split()[1]

        elapsed, code = _timed_acquire(layout, timeout=30.0, silent_after=0.3)

        assert code == ErrorCode.LOCK_TIMEOUT
        assert elapsed < 0.3 * 10
        assert _owner(layout)["token"] == token


def test_heartbeating_holder_is_not_silent(layout):
    with _holder(layout, "--heartbeat", 0.02) as holder:
        holder.wait_for("locked ", timeout=START_TIMEOUT)

        elapsed, code = _timed_acquire(layout, timeout=2.0, silent_after=0.5)

        assert code == ErrorCode.LOCK_TIMEOUT
        assert elapsed >= 1.9  # waited for its own deadline, not the 0.5 s silence limit


def test_sigkilled_holder_is_recovered_at_once(layout):
    with _holder(layout) as holder:
        holder.wait_for("locked ", timeout=START_TIMEOUT)
        killed_at = time.monotonic()
        holder.kill()

        _elapsed, code = _timed_acquire(layout, timeout=2.0)
        since_kill = time.monotonic() - killed_at

    assert code is None
    assert since_kill < RECOVERY_BOUND


def test_waiter_takes_over_as_soon_as_the_holder_is_killed(layout):
    outcome = {}

    def wait_for_lock():
        outcome["elapsed"], outcome["code"] = _timed_acquire(layout, timeout=20.0)
        outcome["done_at"] = time.monotonic()

    with _holder(layout) as holder:
        holder.wait_for("locked ", timeout=START_TIMEOUT)
        waiter = threading.Thread(target=wait_for_lock)
        waiter.start()
        time.sleep(0.3)
        assert waiter.is_alive()  # still waiting behind a live holder
        killed_at = time.monotonic()
        holder.kill()
        waiter.join(timeout=20)

    assert outcome["code"] is None
    assert outcome["done_at"] - killed_at < RECOVERY_BOUND


def test_ownerless_lock_older_than_the_grace_is_recovered_at_once(layout):
    _write_owner_dir(layout, None, age=lock_mod.OWNERLESS_GRACE + 30)

    elapsed, code = _timed_acquire(layout, timeout=2.0)

    assert code is None and elapsed < RECOVERY_BOUND
    assert residue(layout.dir) == []


def test_ownerless_lock_is_respected_during_the_grace(layout):
    _write_owner_dir(layout, None, age=lock_mod.OWNERLESS_GRACE - 1.0)

    early = _timed_acquire(layout, timeout=0.3)
    late = _timed_acquire(layout, timeout=1.0 + 4.0)

    assert early[1] == ErrorCode.LOCK_TIMEOUT
    assert late[1] is None


def test_unreadable_owner_record_without_kernel_lock_is_dead(layout):
    owner = _write_owner_dir(layout, None)
    with open(owner, "w") as fh:
        fh.write("{not json")

    elapsed, code = _timed_acquire(layout, timeout=2.0)

    assert code is None and elapsed < RECOVERY_BOUND


def test_pid_reuse_without_kernel_lock_is_dead(layout):
    """The pid is alive (it is this process) but started at another time and holds no flock."""
    _write_owner_dir(layout, {"pid": os.getpid(), "token": "f" * 32, "process_start": "1", "acquired_at": time.time()})

    elapsed, code = _timed_acquire(layout, timeout=2.0)

    assert code is None and elapsed < RECOVERY_BOUND


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process start times are read from /proc")
def test_pid_reuse_is_dead_even_while_the_owner_file_is_flocked(layout):
    owner = _write_owner_dir(layout, {"pid": os.getpid(), "token": "e" * 32, "process_start": "1", "acquired_at": 0})
    fd = os.open(owner, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        elapsed, code = _timed_acquire(layout, timeout=2.0)
    finally:
        os.close(fd)

    assert code is None and elapsed < RECOVERY_BOUND


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process start times are read from /proc")
def test_flocked_owner_with_matching_pid_and_start_is_live(layout):
    record = {"pid": os.getpid(), "token": "d" * 32, "process_start": _start_time_of_self(), "acquired_at": 0}
    owner = _write_owner_dir(layout, record)
    fd = os.open(owner, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        elapsed, code = _timed_acquire(layout, timeout=0.5)
        still_there = _owner(layout)["token"]
    finally:
        os.close(fd)

    assert code == ErrorCode.LOCK_TIMEOUT and elapsed < 0.5 + 1.0
    assert still_there == "d" * 32


def test_release_leaves_a_lock_that_is_no_longer_ours(layout):
    held = lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 5)
    held.acquire()
    os.rename(layout.lock_dir, layout.lock_dir + ".stolen")
    foreign = _write_owner_dir(layout, {"pid": 1, "token": "c" * 32, "process_start": None, "acquired_at": 0})

    held.release()

    assert os.path.isfile(foreign) and _owner(layout)["token"] == "c" * 32
    assert not held.is_held()


def test_release_twice_and_release_without_acquire_are_harmless(layout):
    never = lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 5)
    never.release()
    with lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 5) as held:
        pass
    held.release()

    assert residue(layout.dir) == []


def test_clean_residue_spares_a_live_preparer_and_removes_the_dead(layout):
    live = layout.lock_dir + "." + "a" * 32 + ".tmp"
    os.mkdir(live)
    live_fd = os.open(os.path.join(live, "owner.json"), os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(live_fd, fcntl.LOCK_EX)
    dead = [layout.lock_dir + "." + "b" * 32 + suffix for suffix in (".tmp", ".reclaimed", ".released")]
    for path in dead:
        os.mkdir(path)
        with open(os.path.join(path, "owner.json"), "w") as fh:
            fh.write("{}")
    past = time.time() - 60
    os.utime(dead[0], (past, past))
    try:
        with lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 5) as held:
            held.clean_residue()
            left = sorted(os.listdir(layout.dir))
    finally:
        os.close(live_fd)

    assert os.path.basename(live) in left
    assert not any(os.path.basename(path) in left for path in dead)


def test_refused_acquire_leaves_no_prepared_directory(layout, outside):
    """A refusal (UNSAFE_PATH here) must clean up the contender's ledger.lock.<token>.tmp/ and its fd."""
    os.symlink(outside, layout.lock_dir)
    fds_before = open_fd_count()

    with pytest.raises(IntentLoopError) as info:
        lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 2).acquire()

    assert info.value.code == ErrorCode.UNSAFE_PATH
    assert [p for p in residue(layout.dir) if p.endswith(".tmp")] == []
    assert open_fd_count() == fds_before


def test_liveness_probe_on_a_fresh_owner_record_does_not_fail_the_preparing_writer(layout, monkeypatch):
    """A holder's clean_residue() probes waiters' prepared owner records with a brief shared flock.
    If that probe lands between a waiter creating its owner.json and locking it, the waiter must
    wait a moment, not fail: 32 real writers hit this now and then as LOCK_CONFLICT."""
    real_open = os.open
    probes = []

    def open_then_probe(path, flags, mode=0o777, *, dir_fd=None):
        fd = real_open(path, flags, mode, dir_fd=dir_fd)
        if os.fspath(path).endswith(".tmp" + os.sep + "owner.json") and flags & os.O_CREAT and not probes:
            probe = real_open(path, os.O_RDONLY)
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # exactly what is_kernel_lock_held() does
            probes.append(threading.Timer(0.05, os.close, (probe,)))  # and it lets go a moment later
            probes[-1].start()
        return fd

    monkeypatch.setattr(lib_os, "open", open_then_probe)
    try:
        elapsed, code = _timed_acquire(layout, timeout=2.0)
    finally:
        for timer in probes:
            timer.join()

    assert probes, "the probe was never placed"
    assert code is None and elapsed < RECOVERY_BOUND


def test_the_no_progress_window_is_shorter_than_every_ceiling():
    hook = lock_mod.ProjectLock("/nonexistent", deadline=time.monotonic() + 1.75)
    cli = lock_mod.ProjectLock("/nonexistent", deadline=time.monotonic() + 10.0)
    assert hook.silent_after == lock_mod.HOOK_WINDOW < 1.75
    assert cli.silent_after == lock_mod.CLI_WINDOW < 10.0
    assert lock_mod.KEEPALIVE_EVERY * 4 <= lock_mod.HOOK_WINDOW


def test_a_command_line_holder_keeps_heartbeating_while_it_works(layout):
    """A CLI transaction that holds the lock longer than a waiter's window, without calling
    heartbeat() itself, is not taken for silent: its keepalive thread touches the owner record."""
    held = lock_mod.ProjectLock(layout.dir, deadline=time.monotonic() + 10.0)
    held.acquire()
    try:
        before = os.stat(os.path.join(layout.lock_dir, "owner.json")).st_mtime_ns
        time.sleep(0.6)
        after = os.stat(os.path.join(layout.lock_dir, "owner.json")).st_mtime_ns
        assert after > before
        elapsed, code = _timed_acquire(layout, timeout=1.5, silent_after=0.4)
        assert code == ErrorCode.LOCK_TIMEOUT and elapsed >= 1.4  # its own ceiling, not the 0.4 s window
    finally:
        held.release()
    assert not os.path.exists(layout.lock_dir)

"""The in-place append (storage/append.py): I/O faults at every step, and files that must get no byte."""
import errno
import json
import os
import random
import time

import pytest

from helpers.counting import CountingReducer, append_value
from helpers.files import read_bytes
from helpers.procs import Worker, worker_args
from intent_loop.base import fast_os as lib_os
from intent_loop.base import platform
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import append as append_mod
from intent_loop.storage import reading


def _seed(project, count=3):
    for index in range(count):
        append_value(project, CountingReducer(), f"v{index}", request_id=f"v-{index}")
    return read_bytes(project.ledger)


class AppendFaults:
    """Fails os-level calls made on the ledger's append descriptor only."""

    def __init__(self, monkeypatch, project):
        self.monkeypatch = monkeypatch
        self.project = project
        self.fds = set()
        self.triggered = 0
        real_open, real_close = os.open, os.close

        def tracking_open(path, flags, *args, **kwargs):
            fd = real_open(path, flags, *args, **kwargs)
            if os.fspath(path) == project.ledger and flags & os.O_APPEND:
                self.fds.add(fd)
            return fd

        def tracking_close(fd):
            self.fds.discard(fd)
            return real_close(fd)

        monkeypatch.setattr(lib_os, "open", tracking_open)
        monkeypatch.setattr(lib_os, "close", tracking_close)

    def _fail(self, err):
        self.triggered += 1
        raise OSError(err, os.strerror(err))

    def write(self, err, *, after_lines=0):
        """The first `after_lines` lines land, then the disk fails (a short write, then an error)."""
        real_write = os.write

        def failing_write(fd, data):
            if fd not in self.fds:
                return real_write(fd, data)
            if after_lines and not self.triggered:
                data = bytes(data)
                cut = 0
                for _ in range(after_lines):
                    cut = data.index(b"\n", cut) + 1
                self.triggered += 1
                return real_write(fd, data[:cut])
            self._fail(err)

        self.monkeypatch.setattr(lib_os, "write", failing_write)

    def sync(self, err):
        real_sync = platform.sync_data

        def failing_sync(fd):
            if fd in self.fds:
                self._fail(err)
            return real_sync(fd)

        self.monkeypatch.setattr(platform, "sync_data", failing_sync)

    def truncate(self, err):
        real_truncate = os.ftruncate

        def failing_truncate(fd, length):
            if fd in self.fds:
                self._fail(err)
            return real_truncate(fd, length)

        self.monkeypatch.setattr(lib_os, "ftruncate", failing_truncate)


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EIO], ids=["ENOSPC", "EIO"])
@pytest.mark.parametrize("after_lines", [0, 1, 2], ids=["first-byte", "after-one-line", "after-two-lines"])
def test_a_failed_write_is_cut_back_and_the_ledger_is_byte_identical(project, monkeypatch, err, after_lines):
    before = _seed(project)
    with monkeypatch.context() as patched:
        faults = AppendFaults(patched, project)
        faults.write(err, after_lines=after_lines)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "doomed", request_id="doomed", events=3)

    assert faults.triggered
    assert info.value.code == ErrorCode.WRITE_FAILED and "nothing was changed" in info.value.message
    assert read_bytes(project.ledger) == before
    assert not append_value(project, CountingReducer(), "doomed", request_id="doomed", events=3).replayed
    assert reading.verify_all(project, CountingReducer()).count == 6


@pytest.mark.parametrize("err", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_a_failed_sync_is_durability_uncertain_and_the_retry_returns_the_events(project, monkeypatch, err):
    _seed(project)
    with monkeypatch.context() as patched:
        faults = AppendFaults(patched, project)
        faults.sync(err)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "maybe", request_id="maybe", events=2)

    assert faults.triggered and info.value.code == ErrorCode.DURABILITY_UNCERTAIN
    stored = [json.loads(line) for line in read_bytes(project.ledger).splitlines()[3:]]
    retry = append_value(project, CountingReducer(), "maybe", request_id="maybe", events=2)
    assert retry.replayed and retry.events == stored
    assert reading.verify_all(project, CountingReducer()).count == 5


def test_a_partial_write_that_cannot_be_cut_is_quarantined_by_the_next_change(project, monkeypatch):
    before = _seed(project)
    with monkeypatch.context() as patched:
        faults = AppendFaults(patched, project)
        faults.write(errno.EIO, after_lines=1)
        faults.truncate(errno.EIO)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "doomed", request_id="doomed", events=3)

    assert info.value.code == ErrorCode.WRITE_FAILED and "next change" in info.value.message
    assert read_bytes(project.ledger) != before  # one line of three is left behind ...
    assert reading.load_verified(project, CountingReducer()).count == 3  # ... and never projected
    append_value(project, CountingReducer(), "after", request_id="after")
    assert reading.verify_all(project, CountingReducer()).state["values"] == ["v0", "v1", "v2", "after"]
    (record,) = os.listdir(project.quarantine_dir)
    assert json.loads(read_bytes(os.path.join(project.quarantine_dir, record)))["kind"] == "incomplete_request"


# -- files that must get no byte ------------------------------------------------------------------------

def _swap_before_append(monkeypatch, project, make_replacement):
    """Replace the ledger after it was verified, right before the append opens it."""
    real = append_mod.open_for_append

    def swapping(path, verified_fd, verified_length):
        make_replacement()
        return real(path, verified_fd, verified_length)

    monkeypatch.setattr(append_mod, "open_for_append", swapping)


@pytest.mark.parametrize("kind", ["renamed-copy", "symlink", "fifo", "hardlink"])
def test_a_ledger_swapped_during_the_append_gets_no_byte(project, monkeypatch, tmp_path, kind):
    before = _seed(project)
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(before)
    moved = project.ledger + ".moved"

    def replace():
        if kind == "renamed-copy":  # same content, another inode
            os.rename(project.ledger, moved)
            outside.rename(project.ledger)
        elif kind == "symlink":
            os.rename(project.ledger, moved)
            os.symlink(outside, project.ledger)
        elif kind == "fifo":
            os.rename(project.ledger, moved)
            os.mkfifo(project.ledger)
        else:  # a second name for the verified file itself
            os.link(project.ledger, str(tmp_path / "second-name.jsonl"))

    with monkeypatch.context() as patched:
        _swap_before_append(patched, project, replace)
        started = time.monotonic()
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "doomed", request_id="doomed")
    assert time.monotonic() - started < 5  # a FIFO never blocks the writer

    assert info.value.code == ErrorCode.UNSAFE_PATH
    if kind == "hardlink":
        assert read_bytes(project.ledger) == before
    else:
        assert read_bytes(moved) == before
        target = project.ledger if kind != "symlink" else str(outside)
        if kind != "fifo":
            assert read_bytes(target) == before


def test_a_ledger_that_grew_outside_the_lock_gets_no_byte(project, monkeypatch):
    before = _seed(project)

    def grow():
        with open(project.ledger, "ab") as fh:
            fh.write(b"stray")

    with monkeypatch.context() as patched:
        _swap_before_append(patched, project, grow)
        with pytest.raises(IntentLoopError) as info:
            append_value(project, CountingReducer(), "doomed", request_id="doomed")
    assert info.value.code == ErrorCode.WRITE_FAILED
    assert read_bytes(project.ledger) == before + b"stray"


# -- SIGKILL between the lines of a request ----------------------------------------------------------------

def test_writers_killed_between_the_lines_of_their_requests_lose_nothing_acknowledged(project):
    """Workers append three-line requests one line per write with a pause between them (IL_TEST_SLOW_APPEND),
    and are killed at random: readers never project a partial request and the next writer cuts it."""
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    print(f"random seed {seed}")
    promised = set()
    for trial in range(40):
        args = worker_args("append", project.data_root, project.root, "--count", 5, "--events", 3,
                           "--prefix", f"k{trial}", "--deadline", 10)
        with Worker(args, env_extra={"IL_TEST_SLOW_APPEND": "0.004"}) as worker:
            worker.wait_for("ready", timeout=20)
            time.sleep(rng.uniform(0, 0.05))
            during = reading.load_verified(project, CountingReducer(), write_cache=False)
            assert during.count % 3 == 0 and len(during.state["values"]) == during.count
            worker.kill()
            worker.finish(timeout=20)
            promised.update(worker.reported())
        mutation = append_value(project, CountingReducer(), f"after-{trial}", request_id=f"after-{trial}", events=3)
        promised.add(mutation.events[0]["event_id"])
        verified = reading.verify_all(project, CountingReducer())
        assert verified.torn_tail == 0 and verified.count % 3 == 0
        on_disk = {json.loads(line)["event_id"] for line in read_bytes(project.ledger).splitlines()}
        assert promised <= on_disk
    assert len(os.listdir(project.quarantine_dir)) > 0  # some kills did land between lines

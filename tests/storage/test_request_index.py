"""The request-id index (cache/requests-2.idx): bounded reads, stale and missing tables, rebuilds."""
import os
import time

import pytest

from helpers.counting import CountingReducer, append_value
from helpers.files import read_bytes
from intent_loop.base import fast_os as lib_os
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import maintenance, reading, replacement, request_index, request_scan, transaction


def _index(project):
    return os.path.join(project.cache_dir, request_index.INDEX_FILE)


def _fill(project, count, *, events=1, pad=0):
    for index in range(count):
        append_value(project, CountingReducer(), f"v{index}", request_id=f"req-{index}", events=events,
                     extra={"pad": "x" * pad} if pad else None)


def _run_maintenance():
    for _paths, job in maintenance.take_maintenance():
        job(time.monotonic() + 30)


class ReadCounter:
    """Counts bytes read from the index file and from the ledger during one mutation."""

    def __init__(self, monkeypatch, project):
        self.index = self.ledger = 0
        self.fds = {}
        real_open, real_pread, real_preadv = os.open, os.pread, os.preadv

        def open_(path, flags, *args, **kwargs):
            fd = real_open(path, flags, *args, **kwargs)
            path = os.fspath(path)
            if path in (_index(project), project.ledger):
                self.fds[fd] = "index" if path == _index(project) else "ledger"
            return fd

        def pread(fd, size, offset):
            data = real_pread(fd, size, offset)
            self._count(fd, len(data))
            return data

        def preadv(fd, buffers, offset):
            got = real_preadv(fd, buffers, offset)
            self._count(fd, got)
            return got

        monkeypatch.setattr(lib_os, "open", open_)
        monkeypatch.setattr(lib_os, "pread", pread)
        monkeypatch.setattr(lib_os, "preadv", preadv)

    def _count(self, fd, n):
        kind = self.fds.get(fd)
        if kind:
            setattr(self, kind, getattr(self, kind) + n)


def _bytes_read_by_one_append(monkeypatch, project, request_id):
    with monkeypatch.context() as patched:
        counter = ReadCounter(patched, project)
        append_value(project, CountingReducer(), "probe", request_id=request_id)
    return counter


def test_a_lookup_reads_the_same_few_bytes_at_any_size(project, monkeypatch):
    _fill(project, 20)
    small = _bytes_read_by_one_append(monkeypatch, project, "probe-small")
    _fill(project, 600)
    large = _bytes_read_by_one_append(monkeypatch, project, "probe-large")

    assert os.path.getsize(project.ledger) > 100 * 600
    assert large.index == small.index <= 4096  # lookup and insert: the header and one probe window each
    assert large.ledger <= small.ledger + 256  # the checkpoint's last line and the covered line only


def test_an_exact_retry_is_found_through_the_index_and_other_parameters_are_refused(project):
    _fill(project, 50, events=2)
    again = append_value(project, CountingReducer(), "v17", request_id="req-17", events=2)
    assert again.replayed and [e["payload"]["value"] for e in again.events] == ["v17", "v17"]
    with pytest.raises(IntentLoopError) as info:
        append_value(project, CountingReducer(), "other", request_id="req-17")
    assert info.value.code == ErrorCode.REQUEST_ID_REUSED


@pytest.mark.parametrize("damage", ["missing", "old-format", "garbage", "stale-after-rewrite"])
def test_a_missing_or_untrusted_index_still_finds_retries_and_is_rebuilt_after_the_answer(project, damage):
    _fill(project, 30, pad=3000)  # more than a mutation catches up in place (_CATCH_UP_LIMIT)
    maintenance.take_maintenance()
    if damage == "missing":
        os.unlink(_index(project))
    elif damage == "old-format":
        os.unlink(_index(project))
        with open(os.path.join(project.cache_dir, "requests.idx"), "wb") as fh:
            fh.write(b"0" * 32 + b" 0 100 " + b"0" * 16 + b"\n")
    elif damage == "garbage":
        with open(_index(project), "r+b") as fh:
            fh.write(os.urandom(4096))
    else:  # a table that covered a ledger since rewritten: its covered line no longer matches
        with open(_index(project), "r+b") as fh:
            head = fh.read(64)
            fh.seek(40)
            fh.write(b"f" * 16 if head[40:56] != b"f" * 16 else b"e" * 16)

    assert append_value(project, CountingReducer(), "v3", request_id="req-3", extra={"pad": "x" * 3000}).replayed
    assert not append_value(project, CountingReducer(), "new", request_id="req-new").replayed
    assert any(name == "request-index" for (_dir, name) in maintenance._requested)
    _run_maintenance()

    assert not os.path.exists(os.path.join(project.cache_dir, "requests.idx"))
    table = request_index._open(project, create=False)
    try:
        assert table is not None and table.count == 31
    finally:
        os.close(table.fd)
    assert append_value(project, CountingReducer(), "new", request_id="req-new").replayed
    assert reading.verify_all(project, CountingReducer()).count == 31


def test_the_scan_without_an_index_finds_a_request_split_across_read_chunks(project, monkeypatch):
    monkeypatch.setattr(request_scan, "SCAN_CHUNK", 97)  # every line straddles a chunk boundary
    _fill(project, 12, events=3)
    monkeypatch.setattr(request_index, "_CATCH_UP_LIMIT", 0)  # as if the ledger were large
    os.unlink(_index(project))
    again = append_value(project, CountingReducer(), "v7", request_id="req-7", events=3)
    assert again.replayed and len(again.events) == 3
    _run_maintenance()
    table = request_index._open(project, create=False)
    try:
        assert table.count == 12
    finally:
        os.close(table.fd)


def test_deletion_style_rewrites_leave_a_table_the_ledger_no_longer_vouches_for(project):
    _fill(project, 5)
    with transaction.Transaction(project, CountingReducer(), deadline=time.monotonic() + 10) as tx:
        lines = read_bytes(project.ledger).splitlines(keepends=True)
        replacement.replace_ledger(tx, b"".join(lines[:3]), expect_count=3)
    assert not append_value(project, CountingReducer(), "v4", request_id="req-4").replayed
    assert append_value(project, CountingReducer(), "v1", request_id="req-1").replayed


def test_a_small_unindexed_gap_is_caught_up_in_place(project):
    _fill(project, 10)
    os.unlink(_index(project))
    maintenance.take_maintenance()
    assert append_value(project, CountingReducer(), "v3", request_id="req-3").replayed
    assert maintenance.take_maintenance() == []  # nothing left for after the answer
    table = request_index._open(project, create=False)
    try:
        assert table.count == 10 and table.covered_end == os.path.getsize(project.ledger)
    finally:
        os.close(table.fd)


def test_a_symlinked_index_is_never_followed(project, tmp_path):
    _fill(project, 3)
    os.unlink(_index(project))
    outside = tmp_path / "outside.idx"
    outside.write_bytes(b"precious")
    os.symlink(outside, _index(project))
    assert append_value(project, CountingReducer(), "v1", request_id="req-1").replayed
    assert outside.read_bytes() == b"precious"

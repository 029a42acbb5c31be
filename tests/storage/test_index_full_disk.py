"""Issue 33 item 9 (A2): a write into the request index that fails (ENOSPC on a nearly full disk)
is WRITE_FAILED at its cause, and never costs a mutation its answer: the index is derived, so a
failed catch-up counts as a stale table (the ledger is scanned) and a failed record after the
durable append asks for a rebuild. Through the write-failing seam (platform.pwrite, the only
writer of the table), in this process and in the MCP server's dispatch."""
import errno
import os
import time

import pytest

from helpers.counting import CountingReducer, append_value
from helpers.mcp_client import InProcessMcp, run_hook
from intent_loop.base import platform
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import maintenance, reading, request_index


def _full_disk(calls):
    def pwrite(_fd, _data, _offset):
        calls.append(_offset)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return pwrite


def _indexed_project(project):
    append_value(project, CountingReducer(), "v0", request_id="req-0")
    for _paths, job in maintenance.take_maintenance():  # the table, built as after a hook's answer
        job(time.monotonic() + 30)
    append_value(project, CountingReducer(), "v1", request_id="req-1")
    assert os.path.exists(os.path.join(project.cache_dir, request_index.INDEX_FILE))


def test_a_failed_table_write_is_write_failed_at_its_cause(project, monkeypatch):
    _indexed_project(project)
    fd = os.open(os.path.join(project.cache_dir, request_index.INDEX_FILE), os.O_RDWR)
    try:
        monkeypatch.setattr(platform, "pwrite", _full_disk([]))
        with pytest.raises(IntentLoopError) as info:
            request_index.Table(fd, request_index.INITIAL_CAPACITY).cover(10, 0, "0" * 64)
    finally:
        os.close(fd)
    assert info.value.code == ErrorCode.WRITE_FAILED and "disk is full" in str(info.value)


def test_appends_go_on_while_every_table_write_fails_and_retries_still_replay(project, monkeypatch):
    _indexed_project(project)
    calls = []
    with monkeypatch.context() as patched:
        patched.setattr(platform, "pwrite", _full_disk(calls))
        # the first append's record fails after the durable append (a gap the table does not cover);
        # the next ones fail in the catch-up of that gap, before their append: both were raw OSErrors
        for index in range(2, 5):
            mutation = append_value(project, CountingReducer(), f"v{index}", request_id=f"req-{index}")
            assert not mutation.replayed
        assert append_value(project, CountingReducer(), "v3", request_id="req-3").replayed
    assert len(calls) >= 3
    assert reading.verify_all(project, CountingReducer()).state["values"] == ["v0", "v1", "v2", "v3", "v4"]
    for _paths, job in maintenance.take_maintenance():  # room again: the table is rebuilt and used
        job(time.monotonic() + 30)
    assert append_value(project, CountingReducer(), "v2", request_id="req-2").replayed


def test_an_mcp_write_on_a_full_disk_index_is_recorded_not_internal_error(tmp_path, monkeypatch):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    run_hook("UserPromptSubmit", env, cwd=str(ws), session_id="s1", prompt="intent: goal ship it", from_source=True)
    run_hook("UserPromptSubmit", env, cwd=str(ws), session_id="s1", prompt="intent: must keep it", turn_id="t2",
             from_source=True)
    calls = []
    with InProcessMcp(env) as server:
        server.initialize()
        assert server.call("intent_add_evidence", {"statement": "tests pass 0"}, workspace=str(ws), thread="s1")["ok"]
        monkeypatch.setattr(platform, "pwrite", _full_disk(calls))
        for index in (1, 2):
            envelope = server.call("intent_add_evidence", {"statement": f"tests pass {index}"}, workspace=str(ws),
                                   thread="s1")
            assert envelope["ok"], envelope  # was INTERNAL_ERROR on the second: the catch-up's raw ENOSPC
    assert len(calls) >= 2

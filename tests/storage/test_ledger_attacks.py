"""Hostile layouts: links, hard links, FIFOs and swapped lock directories are refused; nothing outside is written."""
import fcntl
import json
import os
import time

import pytest

from helpers.counting import CountingReducer, append_value
from helpers.files import read_bytes, tree_bytes
from intent_loop.base import fast_os as lib_os
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading
from intent_loop.storage.cache import checkpoint


def _refused(project, *, codes=(ErrorCode.UNSAFE_PATH,)):
    """A mutation is refused with one of `codes`."""
    with pytest.raises(IntentLoopError) as write_info:
        append_value(project, CountingReducer(), "attack", request_id="attack", timeout=3.0)
    assert write_info.value.code in codes


def _read_refused(project):
    with pytest.raises(IntentLoopError) as read_info:  # the read path refuses too
        reading.load_verified(project, CountingReducer())
    assert read_info.value.code == ErrorCode.UNSAFE_PATH


@pytest.fixture
def seeded(project):
    """A project with two events, so there is a real ledger, cache and lock history to attack."""
    append_value(project, CountingReducer(), "one", request_id="one")
    append_value(project, CountingReducer(), "two", request_id="two")
    return project


def _fake_project_dir(outside, project):
    """A plausible project directory outside the data root (what a link would point at)."""
    target = outside / "project"
    target.mkdir()
    (target / "ledger.jsonl").write_bytes(b"outside ledger bytes\n")
    return target


def test_projects_dir_symlinked_outside_is_refused(project, outside):
    (outside / "projects" / project.project_id).mkdir(parents=True)
    (outside / "projects" / project.project_id / "ledger.jsonl").write_bytes(b"outside\n")
    os.makedirs(project.data_root)
    os.symlink(outside / "projects", os.path.join(project.data_root, "projects"))
    before = tree_bytes(outside)

    _refused(project)
    _read_refused(project)

    assert tree_bytes(outside) == before


def test_project_dir_symlinked_outside_is_refused(project, outside):
    target = _fake_project_dir(outside, project)
    os.makedirs(os.path.join(project.data_root, "projects"))
    os.symlink(target, project.dir)
    before = tree_bytes(outside)

    _refused(project)
    _read_refused(project)

    assert tree_bytes(outside) == before


def test_ledger_symlinked_outside_is_refused(seeded, outside):
    os.unlink(seeded.ledger)
    os.symlink(outside / "precious.txt", seeded.ledger)
    before = tree_bytes(outside)

    _refused(seeded)
    _read_refused(seeded)

    assert tree_bytes(outside) == before


def test_ledger_hardlinked_outside_is_refused(seeded, outside):
    os.link(seeded.ledger, outside / "hardlink.jsonl")
    before = tree_bytes(outside)
    ledger_before = read_bytes(seeded.ledger)

    _refused(seeded)
    _read_refused(seeded)

    assert tree_bytes(outside) == before
    assert read_bytes(seeded.ledger) == ledger_before


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_non_regular_ledger_is_refused_without_blocking(seeded, kind):
    os.unlink(seeded.ledger)
    if kind == "fifo":
        os.mkfifo(seeded.ledger, 0o600)
    else:
        os.mkdir(seeded.ledger)

    started = time.monotonic()
    _refused(seeded)
    _read_refused(seeded)

    assert time.monotonic() - started < 5  # an open() of the FIFO would have blocked forever


@pytest.mark.parametrize("sub", ["quarantine_dir", "private_dir", "cache_dir"])
def test_project_subdirectory_symlinked_outside_is_refused_by_writers(seeded, outside, sub):
    path = getattr(seeded, sub)
    for name in os.listdir(path):
        os.unlink(os.path.join(path, name))
    os.rmdir(path)
    os.symlink(outside, path)
    with open(seeded.ledger, "ab") as fh:
        fh.write(b'{"torn')  # gives the quarantine something to write
    before = tree_bytes(outside)

    _refused(seeded)
    reading.load_verified(seeded, CountingReducer())

    assert tree_bytes(outside) == before


def test_cache_state_file_symlinked_outside_is_never_followed(seeded, outside):
    state = os.path.join(seeded.cache_dir, checkpoint.ROOT_FILE)
    os.unlink(state)
    os.symlink(outside / "precious.txt", state)
    before = tree_bytes(outside)

    count = reading.load_verified(seeded, CountingReducer()).count
    append_value(seeded, CountingReducer(), "three", request_id="three")

    assert count == 2
    assert tree_bytes(outside) == before
    assert reading.load_verified(seeded, CountingReducer()).count == 3


def test_lock_directory_replaced_by_a_symlink_is_refused(seeded, outside):
    (outside / "owner.json").write_text(json.dumps({"pid": 1, "token": "0" * 32}))
    past = time.time() - 3600
    os.utime(outside, (past, past))
    os.symlink(outside, seeded.lock_dir)
    before = tree_bytes(outside)
    ledger_before = read_bytes(seeded.ledger)

    _refused(seeded, codes=(ErrorCode.UNSAFE_PATH, ErrorCode.LOCK_CONFLICT))

    assert tree_bytes(outside) == before
    assert read_bytes(seeded.ledger) == ledger_before


def test_owner_record_symlinked_outside_is_never_followed(seeded, outside):
    os.mkdir(seeded.lock_dir)
    os.symlink(outside / "precious.txt", os.path.join(seeded.lock_dir, "owner.json"))
    past = time.time() - 3600
    os.utime(seeded.lock_dir, (past, past))
    before = tree_bytes(outside)

    append_value(seeded, CountingReducer(), "three", request_id="three")

    assert tree_bytes(outside) == before
    assert reading.verify_all(seeded, CountingReducer()).count == 3


@pytest.mark.parametrize("suffix", [".reclaimed", ".released", ".tmp"])
def test_lock_residue_symlinked_outside_is_unlinked_not_followed(seeded, outside, suffix):
    os.symlink(outside, seeded.lock_dir + "." + "9" * 32 + suffix)
    before = tree_bytes(outside)

    append_value(seeded, CountingReducer(), "three", request_id="three")

    assert tree_bytes(outside) == before


@pytest.mark.parametrize("directory", ["dir", "cache_dir", "private_dir"])
def test_orphan_temp_name_symlinked_outside_is_unlinked_not_followed(seeded, outside, directory):
    target_name = "ledger.jsonl" if directory == "dir" else checkpoint.ROOT_FILE
    os.symlink(outside / "precious.txt", os.path.join(getattr(seeded, directory), f"{target_name}.{'7' * 32}.tmp"))
    before = tree_bytes(outside)

    append_value(seeded, CountingReducer(), "three", request_id="three")

    assert tree_bytes(outside) == before


def _dead_lock(project):
    """A ledger.lock/ whose owner holds no kernel lock: provably dead, to be reclaimed."""
    os.mkdir(project.lock_dir)
    with open(os.path.join(project.lock_dir, "owner.json"), "w") as fh:
        fh.write(json.dumps({"pid": 2**22 + 7, "token": "1" * 32, "process_start": None, "acquired_at": 0}))


@pytest.mark.parametrize("swap_in", ["symlink-outside", "live-owner-directory"])
def test_lock_directory_swapped_mid_reclaim_is_not_deleted(seeded, outside, monkeypatch, swap_in):
    """Between inspecting the dead holder and moving its directory aside, another directory appears."""
    _dead_lock(seeded)
    (outside / "owner.json").write_text(json.dumps({"pid": 1, "token": "2" * 32}))
    live_dir = seeded.lock_dir + ".live-holder"
    os.mkdir(live_dir)
    live_owner = os.path.join(live_dir, "owner.json")
    with open(live_owner, "w") as fh:
        fh.write(json.dumps({"pid": os.getpid(), "token": "3" * 32, "process_start": None, "acquired_at": 0}))
    live_fd = os.open(live_owner, os.O_RDONLY)
    fcntl.flock(live_fd, fcntl.LOCK_EX)
    real_rename = os.rename
    swaps = []

    def rename_with_swap(src, dst, *args, **kwargs):
        if os.fspath(src) == seeded.lock_dir and os.fspath(dst).endswith(".reclaimed") and not swaps:
            swaps.append(dst)
            real_rename(seeded.lock_dir, seeded.lock_dir + ".dead-aside")
            if swap_in == "symlink-outside":
                os.symlink(outside, seeded.lock_dir)
            else:
                real_rename(live_dir, seeded.lock_dir)
        return real_rename(src, dst, *args, **kwargs)

    before_outside = tree_bytes(outside)
    ledger_before = read_bytes(seeded.ledger)
    try:
        with monkeypatch.context() as patched:
            patched.setattr(lib_os, "rename", rename_with_swap)
            with pytest.raises(IntentLoopError) as info:
                append_value(seeded, CountingReducer(), "three", request_id="three", timeout=3.0)
        if swap_in == "symlink-outside":
            swapped_in_survived = os.path.islink(seeded.lock_dir)
        else:
            owner = json.loads(read_bytes(os.path.join(seeded.lock_dir, "owner.json")))
            swapped_in_survived = owner["token"] == "3" * 32
    finally:
        os.close(live_fd)

    assert swaps, "the reclaim rename never happened"
    assert info.value.code in (ErrorCode.LOCK_CONFLICT, ErrorCode.UNSAFE_PATH)
    assert swapped_in_survived
    assert tree_bytes(outside) == before_outside
    assert read_bytes(seeded.ledger) == ledger_before


def test_ensure_project_layout_refuses_a_file_in_place_of_a_directory(project):
    os.makedirs(os.path.join(project.data_root, "projects"))
    with open(project.dir, "w") as fh:
        fh.write("not a directory")

    with pytest.raises(IntentLoopError) as info:
        paths_mod.ensure_project_layout(project)

    assert info.value.code == ErrorCode.UNSAFE_PATH

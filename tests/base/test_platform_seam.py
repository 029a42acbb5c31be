"""The platform seam (base/platform.py, issue 27): every facility a platform may lack or refuse has
its fallback there, and each fallback runs here on Linux by removing or refusing the facility."""
import errno
import os
import time

import pytest

from intent_loop.base import fast_os, platform
from intent_loop.intent.state import REDUCER
from intent_loop.storage import ledger, reading
from intent_loop.storage.ledger import Draft
from intent_loop.storage.paths import project_paths
from intent_loop.storage.transaction import Transaction


@pytest.fixture
def project(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    return project_paths(str(tmp_path / "data"), str(ws))


def _appended(project, count):
    for n in range(count):
        with Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
            task = f"{n:08x}-0000-4000-8000-000000000000"
            tx.append([Draft("task_started", task, "user", {"mode": "on", "initial_claims": []})],
                      request_id=f"r-{n}", fingerprint="f")


def test_reads_without_preadv_give_the_same_bytes_and_the_same_verdict(project, monkeypatch):
    _appended(project, 5)
    fd, st = ledger.open_ledger(project)
    try:
        with_preadv = [ledger.read_range(fd, start, st.st_size) for start in (0, 1, 100, st.st_size - 3)]
        monkeypatch.delattr(fast_os, "preadv")  # macOS before 11, and Pythons built without it
        without = [ledger.read_range(fd, start, st.st_size) for start in (0, 1, 100, st.st_size - 3)]
    finally:
        fast_os.close(fd)
    assert without == with_preadv and without[0] == open(project.ledger, "rb").read()
    assert reading.verify_all(project, REDUCER).count == 5


class _FakeFcntl:
    """fcntl with F_FULLFSYNC, refusing it (`refuse`: an errno) or counting it."""
    F_FULLFSYNC = 51

    def __init__(self, refuse=None):
        self.refuse, self.calls = refuse, 0

    def __getattr__(self, name):  # flock and its constants: the real module's
        import fcntl

        return getattr(fcntl, name)

    def fcntl(self, fd, op):
        assert op == self.F_FULLFSYNC
        self.calls += 1
        if self.refuse is not None:
            raise OSError(self.refuse, os.strerror(self.refuse))
        return 0


def _as_macos(monkeypatch, fake):
    monkeypatch.setattr(platform, "IS_MACOS", True)
    monkeypatch.setattr(platform, "_fcntl", lambda: fake)
    monkeypatch.setattr(platform, "_FULL_SYNC_REFUSED", set())
    fsyncs = []
    real = fast_os.fsync
    monkeypatch.setattr(fast_os, "fsync", lambda fd: (fsyncs.append(fd), real(fd))[1])
    return fsyncs


def test_a_mac_syncs_with_f_fullfsync_and_not_fsync(tmp_path, monkeypatch):
    fake = _FakeFcntl()
    fsyncs = _as_macos(monkeypatch, fake)
    before = dict(platform.SYNCS)
    with open(tmp_path / "f", "wb") as fh:
        platform.fsync_file(fh.fileno())
        platform.sync_data(fh.fileno())  # macOS has no fdatasync: the full sync as well
    assert fake.calls == 2 and fsyncs == []
    assert platform.SYNCS["full"] - before["full"] == 2


@pytest.mark.parametrize("refusal", [errno.EINVAL, errno.ENOTSUP, errno.ENOTTY])
def test_a_filesystem_that_refuses_f_fullfsync_gets_fsync_and_is_not_asked_again(tmp_path, monkeypatch, refusal):
    fake = _FakeFcntl(refuse=refusal)
    fsyncs = _as_macos(monkeypatch, fake)
    before = dict(platform.SYNCS)
    with open(tmp_path / "f", "wb") as fh:
        for _ in range(3):
            platform.fsync_file(fh.fileno())
    assert len(fsyncs) == 3 and fake.calls == 1  # refused once: that filesystem gets fsync from then on
    assert platform.SYNCS["fsync"] - before["fsync"] == 3 and platform.SYNCS["full"] == before["full"]


def test_an_append_still_lands_durably_where_f_fullfsync_is_refused(project, monkeypatch):
    _as_macos(monkeypatch, _FakeFcntl(refuse=errno.EINVAL))
    _appended(project, 3)
    assert reading.verify_all(project, REDUCER).count == 3


def test_without_fdatasync_an_append_syncs_with_fsync(tmp_path, monkeypatch):
    monkeypatch.delattr(fast_os, "fdatasync")
    before = dict(platform.SYNCS)
    with open(tmp_path / "f", "wb") as fh:
        platform.sync_data(fh.fileno())
    assert platform.SYNCS["fsync"] - before["fsync"] == 1 and platform.SYNCS["fdatasync"] == before["fdatasync"]


def test_every_sync_of_a_mutation_is_counted_and_a_slow_sync_costs_its_delay(project, monkeypatch):
    _appended(project, 1)
    slept = []
    monkeypatch.setattr(platform, "_SLOW_SYNC", 0.004)
    monkeypatch.setattr(platform.time, "sleep", slept.append)
    before = sum(platform.SYNCS.values()) - platform.SYNCS["directory"]
    _appended(project, 1)
    made = sum(platform.SYNCS.values()) - platform.SYNCS["directory"] - before
    assert made >= 1 and slept == [0.004] * made  # the ledger's own sync at least, each one slowed


def test_the_slow_sync_knob_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("INTENT_LOOP_SLOW_SYNC_MS", "7.5")
    assert platform._slow_sync_seconds() == 0.0075
    for bad in ("", "x", "-3"):
        monkeypatch.setenv("INTENT_LOOP_SLOW_SYNC_MS", bad)
        assert platform._slow_sync_seconds() == 0.0


# -- one directory, one project, however it is spelled --------------------------------------------
def _case_insensitive_below(monkeypatch, top):
    """Make lstat and listdir behave as a case-insensitive filesystem below `top` (as WSL's /mnt/c
    or a FAT volume): any spelling of a name there resolves to the entry as it is stored."""
    real_lstat, real_listdir = fast_os.lstat, fast_os.listdir

    def stored(path):
        if not path.casefold().startswith(top.casefold()):
            return path
        out = top
        for part in path[len(top):].split("/")[1:]:
            names = {n.casefold(): n for n in real_listdir(out)}
            out += "/" + names.get(part.casefold(), part)
        return out

    monkeypatch.setattr(fast_os, "lstat", lambda path, *a, **k: real_lstat(stored(path), *a, **k))
    monkeypatch.setattr(fast_os, "listdir", lambda path=".": real_listdir(stored(path)))


@pytest.mark.parametrize("typed", ["proj/Sub", "PROJ/sub", "Proj/SUB", "pRoJ/sUb"])
def test_every_spelling_of_a_directory_on_a_case_insensitive_filesystem_is_its_stored_one(tmp_path, monkeypatch,
                                                                                            typed):
    (tmp_path / "vol" / "Proj" / "Sub").mkdir(parents=True)
    top = str(tmp_path / "vol")
    _case_insensitive_below(monkeypatch, top)
    assert platform.on_disk_spelling(f"{top}/{typed}") == f"{top}/Proj/Sub"


def test_on_a_case_sensitive_filesystem_two_spellings_stay_two_directories(tmp_path):
    (tmp_path / "Proj").mkdir()
    (tmp_path / "proj").mkdir()
    assert platform.on_disk_spelling(str(tmp_path / "proj")) == str(tmp_path / "proj")
    assert platform.on_disk_spelling(str(tmp_path / "Proj")) == str(tmp_path / "Proj")
    assert project_paths(str(tmp_path / "d"), str(tmp_path / "proj")).project_id != \
        project_paths(str(tmp_path / "d"), str(tmp_path / "Proj")).project_id


class _GetPath(_FakeFcntl):
    F_GETPATH = 50

    def __init__(self, stored):
        super().__init__()
        self.stored = stored

    def fcntl(self, fd, op, arg=None):
        assert op == self.F_GETPATH and len(arg) == 1024
        return self.stored.encode("utf-8") + b"\0" * (1024 - len(self.stored.encode("utf-8")))


@pytest.mark.parametrize("stored", ["/Users/me/Proj", "/Users/me/Cafe\u0301"])  # as typed: /users/me/proj, café
def test_a_mac_takes_the_kernels_name_for_the_directory_in_nfc(tmp_path, monkeypatch, stored):
    import unicodedata

    monkeypatch.setattr(platform, "IS_MACOS", True)
    monkeypatch.setattr(platform, "_fcntl", lambda: _GetPath(stored))
    assert platform.on_disk_spelling(str(tmp_path)) == unicodedata.normalize("NFC", stored)


def test_a_project_recorded_under_another_spelling_keeps_its_id(tmp_path):
    from intent_loop.storage.paths import ProjectPaths, _recorded_id, project_id_for

    data, given, stored = str(tmp_path / "data"), "/Users/me/proj", "/Users/me/Proj"
    assert _recorded_id(data, stored, given) == project_id_for(stored)  # nothing recorded: the stored spelling
    legacy = ProjectPaths(data, project_id_for(given))  # what the build before issue 27 recorded
    os.makedirs(legacy.dir)
    assert _recorded_id(data, stored, given) == legacy.project_id  # recorded: it stays found
    assert _recorded_id(data, stored, stored) == project_id_for(stored)  # typed as stored: its own id
    os.makedirs(ProjectPaths(data, project_id_for(stored)).dir)
    assert _recorded_id(data, stored, given) == project_id_for(stored)  # both exist: the stored one wins


def test_mount_information_comes_from_the_seam_and_is_optional(tmp_path):
    """Linux's /proc/self/mountinfo (escaped mount points, the type after the '-' field); where it
    does not exist (macOS) the project-root check does without it."""
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                         "30 22 0:5 / /proc rw,nosuid - proc proc rw\n"
                         "31 22 0:6 / /mnt/my\\040disk rw shared:1 - vfat /dev/sdb1 rw\n")
    assert platform.filesystem_type("/proc/self", str(mountinfo)) == "proc"
    assert platform.filesystem_type("/mnt/my disk/x", str(mountinfo)) == "vfat"
    assert platform.filesystem_type("/home/u/proj", str(mountinfo)) == "ext4"
    assert platform.filesystem_type("/home/u/proj", str(tmp_path / "absent")) is None


def test_the_seam_counts_the_bytes_written_to_storage(project):
    before = platform.WRITTEN["bytes"]
    _appended(project, 1)  # the ledger's first line (a replace), the cache, the request index
    first = platform.WRITTEN["bytes"] - before
    ledger_bytes = os.path.getsize(project.ledger)
    assert first >= ledger_bytes
    _appended(project, 2)  # ... then appends: each counted again
    assert platform.WRITTEN["bytes"] - before - first >= os.path.getsize(project.ledger) - ledger_bytes > 0


def test_the_mcp_server_finds_a_project_recorded_under_another_spelling_as_the_hooks_do(tmp_path, monkeypatch):
    """A Mac (simulated: the kernel names `.../proj` as `.../Proj`) with a project recorded by the
    build before issue 27 under the spelling Codex gave: the MCP binding keeps its id, like the hooks."""
    from intent_loop.mcp.binding import bind
    from intent_loop.storage.paths import ProjectPaths, project_id_for

    given = tmp_path / "proj"
    given.mkdir()
    stored = str(tmp_path / "Proj")
    monkeypatch.setattr(platform, "on_disk_spelling", lambda path: path.replace("/proj", "/Proj"))
    data = str(tmp_path / "data")
    meta = {"codex/sandbox-state-meta": {"sandboxCwd": given.as_uri()}, "threadId": "t-1"}
    env = {"INTENT_LOOP_DATA_DIR": data}

    def bound():
        return bind(meta, {}, env=env, executable=None, ask_roots=lambda: None).paths

    assert bound().project_id == project_id_for(stored) and bound().root == stored  # nothing recorded yet
    legacy = ProjectPaths(data, project_id_for(str(given)))
    os.makedirs(legacy.dir)
    assert bound().project_id == legacy.project_id  # recorded under the given spelling: it stays found
    assert bound().project_id == project_paths(data, str(given)).project_id  # as a hook finds it

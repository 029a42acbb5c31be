"""Issue 33 item 4: the Guard file's directory swapped for a symbolic link to another project's
Guard directory never redirects a write, a rename, an unlink or a .gitignore there. Tested twice:
a deterministic seam that swaps between the directory's open and each step, and a bounded loop
that swaps (renameat2 RENAME_EXCHANGE where libc has it, else rename pairs) while publications,
restorations and withdrawals run. In both, every byte of the other project stays as it was."""
import ctypes
import ctypes.util
import hashlib
import os
import threading
import time

import pytest

from helpers.typed_commands import typed_runner
from intent_loop.errors import IntentLoopError
from intent_loop.guard import guard_dir, provider
from intent_loop.intent.state import ProjectReducer
from intent_loop.storage import transaction

REDUCER = ProjectReducer()


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home-swap"))
    monkeypatch.delenv("EFG_CONTRACT_PATH", raising=False)


run = typed_runner("swap-session")


def refresh(project, workspace):
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 20) as tx:
        return provider.refresh(tx, workspace=workspace, env={})


def tree_hashes(root):
    """Every file, directory and link under `root`, with the bytes or target of each."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = "link:" + os.readlink(path)
            elif os.path.isdir(path):
                found[rel] = "dir"
            else:
                with open(path, "rb") as fh:
                    found[rel] = hashlib.sha256(fh.read()).hexdigest()
    return found


@pytest.fixture
def other(tmp_path):
    """Another project's Guard directory, with its own contract and .gitignore."""
    directory = tmp_path / "other-project" / ".execution-fidelity"
    directory.mkdir(parents=True)
    (directory / "contract.json").write_bytes(b'{"the other project": "its own contract"}\n')
    (directory / ".gitignore").write_bytes(b"*\n")
    return str(directory)


class Swapper:
    """Put a link to `other` where the workspace's Guard directory is, and back."""

    def __init__(self, workspace, other):
        self.directory = os.path.join(workspace, ".execution-fidelity")
        self.aside = os.path.join(workspace, ".execution-fidelity.aside")
        self.other = other
        self.swaps = 0

    def swap(self, _step=None):
        if os.path.isdir(self.directory) and not os.path.islink(self.directory):
            os.rename(self.directory, self.aside)
        elif os.path.lexists(self.directory):
            return
        os.symlink(self.other, self.directory)
        self.swaps += 1

    def back(self):
        if os.path.islink(self.directory):
            os.unlink(self.directory)
        if os.path.isdir(self.aside):
            os.rename(self.aside, self.directory)


@pytest.mark.parametrize("operation", ["publish", "restore", "withdraw", "create"])
def test_a_swap_between_the_directorys_open_and_each_step_never_reaches_the_other_project(
        monkeypatch, tmp_path, project, workspace, other, operation):
    before = tree_hashes(os.path.dirname(other))
    swapper = Swapper(workspace, other)
    if operation != "create":
        run(project, workspace, "intent: goal ship the parser")
    if operation == "restore":
        with open(os.path.join(workspace, ".execution-fidelity", "contract.json"), "wb") as fh:
            fh.write(b"")
    monkeypatch.setattr(guard_dir, "_between", swapper.swap)
    try:
        if operation == "publish":
            run(project, workspace, "intent: must keep the API")
        elif operation == "restore":
            assert refresh(project, workspace)["action"] == "restored"
        elif operation == "withdraw":
            run(project, workspace, "intent: off")
        else:  # the directory is created, then swapped before its .gitignore and the file
            run(project, workspace, "intent: goal ship the parser")
    finally:
        monkeypatch.setattr(guard_dir, "_between", lambda step: None)
        swapped = swapper.swaps
        swapper.back()
    assert swapped >= 1
    assert tree_hashes(os.path.dirname(other)) == before


def test_a_link_on_the_way_is_refused_before_anything_is_written(project, workspace, other):
    before = tree_hashes(os.path.dirname(other))
    os.symlink(other, os.path.join(workspace, ".execution-fidelity"))
    with pytest.raises(IntentLoopError) as caught:
        guard_dir.open_guard_dir(os.path.join(workspace, ".execution-fidelity", "contract.json"),
                                 os.path.realpath(workspace), create=True)
    assert caught.value.code in ("PROVIDER_PATH_FOREIGN", "PROVIDER_PATH_OUTSIDE")
    result = run(project, workspace, "intent: goal ship the parser").publication
    assert result["action"] in ("error", "outside") and result["code"] in ("PROVIDER_PATH_FOREIGN",
                                                                          "PROVIDER_PATH_OUTSIDE")
    assert tree_hashes(os.path.dirname(other)) == before


def _exchange():
    """renameat2(RENAME_EXCHANGE) through libc, or None where it is missing."""
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name, use_errno=True) if name else None
    function = getattr(libc, "renameat2", None) if libc is not None else None
    if function is None:
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2

    def exchange(a, b):
        return function(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0

    return exchange


def _empty_without_following(directory):
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        os.close(os.open("contract.json", os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=fd))
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_swap_loop_raced_against_publications_restorations_and_withdrawals(project, workspace, other):
    before = tree_hashes(os.path.dirname(other))
    run(project, workspace, "intent: goal ship the parser")
    directory = os.path.join(workspace, ".execution-fidelity")
    link = os.path.join(workspace, ".execution-fidelity.link")
    os.symlink(other, link)
    exchange = _exchange()
    stop = threading.Event()
    swaps = [0]

    def loop():
        deadline = time.monotonic() + 20
        while not stop.is_set() and time.monotonic() < deadline:
            if exchange is not None and exchange(directory, link):
                swaps[0] += 1
                continue
            try:  # rename pairs: the directory aside, the link in its place, and back
                os.rename(directory, directory + ".aside")
                os.rename(link, directory)
                swaps[0] += 1
                os.rename(directory, link)
                os.rename(directory + ".aside", directory)
            except OSError:
                pass

    swapper = threading.Thread(target=loop, daemon=True)
    swapper.start()
    outcomes = set()
    try:
        started = time.monotonic()
        for round_ in range(40):
            if time.monotonic() - started > 15:
                break
            for prompt in (f"intent: must keep rule {round_}", "intent: off", "intent: on"):
                publication = run(project, workspace, prompt).publication or {}
                outcomes.add(publication.get("action"))
            _empty_without_following(directory)  # a takeover (never through the link: the test's own write)
            try:
                outcomes.add(refresh(project, workspace)["action"])
            except IntentLoopError as exc:  # a refusal, as refresh_quietly reports it
                outcomes.add(exc.code)
    finally:
        stop.set()
        swapper.join(timeout=30)
    assert not swapper.is_alive()
    assert swaps[0] > 10, swaps[0]
    # the other project's directory: not one byte written, renamed or removed there
    other_now = tree_hashes(os.path.dirname(other))
    assert other_now == before, (outcomes, other_now)
    assert "restored" in outcomes or "published" in outcomes, outcomes  # the race let some work through


def test_a_killed_writers_temp_file_is_cleaned_and_only_ours(project, workspace):
    """Issue 33 item 9: `contract.json.<32 hex>.tmp` a killed writer left goes at the next write;
    files that only look alike stay."""
    run(project, workspace, "intent: goal ship the parser")
    directory = os.path.join(workspace, ".execution-fidelity")
    ours = os.path.join(directory, "contract.json." + "a1" * 16 + ".tmp")
    alike = ["contract.json.notours.tmp", "contract.json." + "a1" * 15 + ".tmp", "other.json." + "b2" * 16 + ".tmp"]
    for name in [ours] + [os.path.join(directory, n) for n in alike]:
        with open(name, "wb") as fh:
            fh.write(b"{}")
    os.symlink("/etc/passwd", os.path.join(directory, "contract.json." + "c3" * 16 + ".tmp"))
    run(project, workspace, "intent: must keep the API")
    left = sorted(os.listdir(directory))
    assert os.path.basename(ours) not in left
    assert set(alike) <= set(left) and "contract.json." + "c3" * 16 + ".tmp" in left  # a link is not ours


@pytest.mark.parametrize("swapped", ["upper", "lower"])
def test_a_nested_efg_contract_path_is_walked_component_by_component(monkeypatch, tmp_path, project, workspace,
                                                                      other, swapped):
    """EFG_CONTRACT_PATH=a/b/guard.json: a link swapped in for `a` or `a/b` between the walk and the
    write never carries the write into the other project."""
    env = {"EFG_CONTRACT_PATH": "a/b/guard.json"}
    before = tree_hashes(os.path.dirname(other))

    def publish(prompt):
        return run(project, workspace, prompt, env=env).publication

    assert publish("intent: goal ship the parser")["action"] == "published"
    target = os.path.join(workspace, "a") if swapped == "upper" else os.path.join(workspace, "a", "b")
    aside = target + ".aside"

    def swap(_step):
        if not os.path.islink(target):
            os.rename(target, aside)
            os.symlink(other, target)

    monkeypatch.setattr(guard_dir, "_between", swap)
    try:
        result = publish("intent: must keep the API")
    finally:
        monkeypatch.setattr(guard_dir, "_between", lambda step: None)
    assert os.path.islink(target)  # the swap happened mid-write
    os.unlink(target)
    os.rename(aside, target)
    assert result["action"] == "published", result  # written through the descriptor already held
    with open(os.path.join(workspace, "a", "b", "guard.json"), "rb") as fh:
        assert b"keep the API" in fh.read()
    assert tree_hashes(os.path.dirname(other)) == before


def test_the_syncs_after_the_answer_use_the_descriptors_held_since_the_write(monkeypatch, tmp_path, other):
    """The deferred syncs never reopen a name: a link swapped in meanwhile is never followed."""
    ws = tmp_path / "ws"
    ws.mkdir()
    path = ws / ".execution-fidelity" / "contract.json"
    later = []
    provider.write_document(str(path), b"{}\n", sync_later=later.append, project_root=str(ws))
    assert path.read_bytes() == b"{}\n" and len(later) == 2  # the temp cleanup, then the syncs
    before = tree_hashes(os.path.dirname(other))
    Swapper(str(ws), other).swap()
    opened = []

    def no_open(*args, **kwargs):
        opened.append(args)
        raise OSError("opened by name")

    monkeypatch.setattr(guard_dir.posix, "open", no_open)
    for job in later:
        job()
    monkeypatch.undo()
    assert opened == []
    assert tree_hashes(os.path.dirname(other)) == before


def test_a_record_that_lags_behind_our_own_publication_is_no_takeover(project, workspace):
    """A crash (or a failed record write) after the rename leaves the record at the previous write:
    the file, whole and as the ledger records it, is ours; nothing is restored, the record heals."""
    from intent_loop.guard import file_state

    run(project, workspace, "intent: goal ship the parser")
    path = os.path.join(workspace, ".execution-fidelity", "contract.json")
    first = file_state.read_record(project, path)
    run(project, workspace, "intent: must keep the API")
    assert file_state.read_record(project, path)["contract_version"] == first["contract_version"] + 1
    file_state.write_record(project, path, first)  # as if the second record write was lost
    result = refresh(project, workspace)
    assert result["action"] == "unchanged", result
    assert file_state.read_record(project, path)["contract_version"] == first["contract_version"] + 1

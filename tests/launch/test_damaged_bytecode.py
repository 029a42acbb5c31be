"""A .pyc cut short after its valid 16-byte header (what a full disk left: CPython's own atomic write
ignores a short write) is a cache miss, never a failure (issue 33, item 6): the module is compiled
from source and its .pyc rewritten whole, on every hook path, lazily imported modules included,
through the source launcher (bytecode under <data root>/pycache) and through the binaries (the
extracted runtime's __pycache__). doctor finds and clears such files."""
import importlib.util
import json
import marshal
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.dist import DIST, requires_dist
from helpers.hook_binaries import events, fixture, prompt_payload
from helpers.settle import settle
from intent_loop.launch import extracted_runtime
from intent_loop.launch.binaries import BY_NAME

ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.path.realpath(sys.executable)
SESSION = "sess-1"
# One module on each path loaded before the answer, and one imported lazily (inside a function),
# for Stop and the command prompt in the work after the answer.
CUT = {
    "intent-loop-session-start": ("intent_loop/hook/handlers.py", "intent_loop/intent/session_view.py"),
    "intent-loop-user-prompt": ("intent_loop/hook/runtime.py", "intent_loop/storage/transaction.py"),
    "intent-loop-stop": ("hooks/stop.py", "intent_loop/guard/publishing.py"),
    "intent-loop": ("intent_loop/cli/main.py", "intent_loop/errors.py"),
}


class SourceRun:
    """The committed source launcher run from a copy of the tree, as Codex's plugin copy is."""

    def __init__(self, tmp_path):
        self.tree = tmp_path / "plugin"
        for part in ("lib", "hooks"):
            shutil.copytree(ROOT / part, self.tree / part, ignore=shutil.ignore_patterns("__pycache__"))

    def run(self, name, env, ws, payload=None, argv=()):
        entry = "cli" if name == "intent-loop" else BY_NAME[name].entry
        return _run([str(self.tree / "hooks" / "intent-loop"), entry, *argv], env, ws, payload)

    def pyc(self, env, name, relative):
        base = "lib" if relative.startswith("intent_loop/") else ""
        source = os.path.join(str(self.tree), base, relative)
        return Path(env["INTENT_LOOP_DATA_DIR"] + "/pycache" + _cache_from_source(source, prefix=True))


class Binaries:
    def run(self, name, env, ws, payload=None, argv=()):
        return _run([str(DIST / name), *argv], env, ws, payload)

    def pyc(self, env, name, relative):
        build_id = extracted_runtime.build_id_of(str(DIST / name))
        site = f"{env['INTENT_LOOP_DATA_DIR']}/runtime/{build_id}/{name}_{build_id}/site-packages"
        return Path(_cache_from_source(f"{site}/{relative}", prefix=False))


def _cache_from_source(source, *, prefix):
    if prefix:  # sys.pycache_prefix layout: the source's absolute directory, below the prefix
        head, tail = os.path.split(source)
        return os.path.join(head, tail[:-3] + f".{sys.implementation.cache_tag}.pyc")
    return importlib.util.cache_from_source(source)


def _run(argv, env, ws, payload):
    data = json.dumps(payload).encode() if payload is not None else b""
    done = subprocess.run(argv, input=data, capture_output=True, env=env, cwd=ws, timeout=60)
    assert b"Traceback" not in done.stderr, done.stderr.decode()
    if payload is not None:
        settle(env["INTENT_LOOP_DATA_DIR"], ws)
    return done


@pytest.fixture
def place(tmp_path):
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "INTENT_LOOP_PYTHON": PYTHON}
    return env, str(ws)


def _every_path(way, env, ws, turn, prompt):
    """Each hook path once (a resumed session, a command prompt, its Stop) and a command."""
    answers = {}
    resume = fixture("session_start.resume.json", ws, session_id=SESSION)
    answers["intent-loop-session-start"] = way.run("intent-loop-session-start", env, ws, resume)
    answers["intent-loop-user-prompt"] = way.run("intent-loop-user-prompt", env, ws,
                                                 prompt_payload(ws, prompt, turn=turn, session=SESSION))
    stop = fixture("stop.turn1.json", ws, session_id=SESSION, turn_id=turn)
    answers["intent-loop-stop"] = way.run("intent-loop-stop", env, ws, stop)
    answers["intent-loop"] = way.run("intent-loop", env, ws, argv=("status", "--json"))
    return answers


def _is_whole(pyc, header):
    data = pyc.read_bytes()
    return data[:16] == header and isinstance(marshal.loads(data[16:]), type(_is_whole.__code__))


@pytest.mark.parametrize("way", ["source", pytest.param("binaries", marks=requires_dist)])
def test_bytecode_cut_after_its_header_is_recompiled_and_every_hook_still_records(way, place, tmp_path):
    env, ws = place
    runner = SourceRun(tmp_path) if way == "source" else Binaries()
    runner.run("intent-loop-user-prompt", env, ws, prompt_payload(ws, "intent: goal ship it", session=SESSION))
    _every_path(runner, env, ws, "turn-B", "intent: must keep the API")  # every path writes its bytecode
    cut = {}
    for name, modules in CUT.items():
        for relative in modules:
            pyc = runner.pyc(env, name, relative)
            assert pyc.is_file(), pyc  # the path did load it
            header = pyc.read_bytes()[:16]
            pyc.write_bytes(header)  # what a full disk left: the valid header, nothing after it
            cut[pyc] = header
    before = [e["event_type"] for e in events(env, ws)]
    answers = _every_path(runner, env, ws, "turn-C", "intent: forbid action:network")
    after = [e["event_type"] for e in events(env, ws)]
    # the prompt's claim and the Stop's result signal are in the ledger; the resumed session's
    # view and the command still answer
    assert len(after) > len(before) and after.count("result_signal_observed") == before.count(
        "result_signal_observed") + 1, (before, after)
    assert after.count("claim_added") == before.count("claim_added") + 1, (before, after)
    start = json.loads(answers["intent-loop-session-start"].stdout)
    assert "keep the API" in start["hookSpecificOutput"]["additionalContext"]
    status = answers["intent-loop"]
    assert status.returncode == 0 and json.loads(status.stdout)["chain"]["ok"] is True, status.stderr
    assert [str(pyc) for pyc, header in cut.items() if not _is_whole(pyc, header)] == []


@requires_dist
def test_doctor_clears_damaged_bytecode_and_says_so_once(place):
    env, ws = place
    runner = Binaries()
    runner.run("intent-loop-stop", env, ws, fixture("stop.turn1.json", ws, session_id=SESSION, turn_id="t"))
    runner.run("intent-loop-user-prompt", env, ws, prompt_payload(ws, "intent: goal ship it", session=SESSION))
    runner.run("intent-loop-stop", env, ws, fixture("stop.turn1.json", ws, session_id=SESSION, turn_id="turn-A"))
    pyc = runner.pyc(env, "intent-loop-stop", "intent_loop/guard/publishing.py")
    pyc.write_bytes(pyc.read_bytes()[:16])
    short = runner.pyc(env, "intent-loop-stop", "hooks/stop.py")
    short.write_bytes(short.read_bytes()[:4096] if len(short.read_bytes()) > 4096 else short.read_bytes()[:40])

    def bytecode_check():
        done = runner.run("intent-loop", env, ws, argv=("doctor", "--json"))
        return next(c for c in json.loads(done.stdout)["checks"] if c["name"] == "bytecode")

    first = bytecode_check()
    assert not first["ok"] and first["detail"].startswith("cleared 2 ") and first["next_action"], first
    assert not pyc.exists() and not short.exists()
    assert bytecode_check()["ok"]


def test_a_linked_pycache_is_neither_read_nor_written(place, tmp_path):
    """<data root>/pycache planted as a link to a directory elsewhere: the source launcher writes
    no bytecode through it (and reads none from it), the hook still records, doctor names it."""
    env, ws = place
    runner = SourceRun(tmp_path)
    runner.run("intent-loop-user-prompt", env, ws, prompt_payload(ws, "intent: goal ship it", session=SESSION))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(Path(env["INTENT_LOOP_DATA_DIR"]) / "pycache", ignore_errors=True)
    (Path(env["INTENT_LOOP_DATA_DIR"]) / "pycache").symlink_to(elsewhere)
    _every_path(runner, env, ws, "turn-B", "intent: must keep the API")
    assert os.listdir(elsewhere) == []
    assert [e["event_type"] for e in events(env, ws)].count("claim_added") == 1  # the prompt of turn-B
    doctor = runner.run("intent-loop", env, ws, argv=("doctor", "--json"))
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "bytecode")
    assert not check["ok"] and check["detail"].startswith("UNSAFE_PATH"), check


def test_a_linked_runtime_directory_of_an_install_is_never_written_through(place, tmp_path):
    """runtime/<install id>/ planted as a link: the hook's run record is not written there."""
    from intent_loop.launch import run_record

    env, ws = place
    runner = SourceRun(tmp_path)
    runner.run("intent-loop-user-prompt", env, ws, prompt_payload(ws, "intent: goal ship it", session=SESSION))
    install = run_record.source_install_id(str(runner.tree))
    planted = Path(env["INTENT_LOOP_DATA_DIR"]) / "runtime" / install
    shutil.rmtree(planted)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted.symlink_to(elsewhere)
    runner.run("intent-loop-stop", env, ws, fixture("stop.turn1.json", ws, session_id=SESSION, turn_id="t2"))
    assert os.listdir(elsewhere) == []
    assert [e["event_type"] for e in events(env, ws)].count("result_signal_observed") == 1


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give a directory to another user")
def test_a_pycache_of_another_user_is_neither_read_nor_written(place, tmp_path):
    env, ws = place
    runner = SourceRun(tmp_path)
    runner.run("intent-loop-user-prompt", env, ws, prompt_payload(ws, "intent: goal ship it", session=SESSION))
    pycache = Path(env["INTENT_LOOP_DATA_DIR"]) / "pycache"
    shutil.rmtree(pycache, ignore_errors=True)
    pycache.mkdir()
    os.chown(pycache, 12345, -1)
    _every_path(runner, env, ws, "turn-B", "intent: must keep the API")
    assert os.listdir(pycache) == []
    assert [e["event_type"] for e in events(env, ws)].count("claim_added") == 1

"""Issue 23 through the built binaries: a FIFO swapped in for the ledger never hangs a reader, and a
huge sparse file in cache/ is never read whole (it is damaged: the cache is rebuilt)."""
import json
import os
import subprocess
import time

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import DIST, hook, project_of, prompt_payload

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws
CLI = os.path.join(DIST, "intent-loop")


def test_a_fifo_in_place_of_the_ledger_is_refused_at_once(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship the parser"), env)
    ledger = project_of(env, ws).ledger
    os.rename(ledger, ledger + ".real")
    os.mkfifo(ledger)
    for argv in (["show"], ["status", "--json"], ["claim", "add", "must", "keep", "the", "API"], ["verify"]):
        started = time.monotonic()
        done = subprocess.run([CLI, *argv], cwd=ws, env=env, capture_output=True, timeout=30)
        assert time.monotonic() - started < 10, argv
        assert done.returncode != 3 and b"Traceback" not in done.stderr, (argv, done.stderr)
    _out, answer, elapsed = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep docs", turn="t2"), env)
    assert elapsed < 5 and "NOT recorded" in answer["systemMessage"]


def test_a_huge_sparse_cache_file_is_not_read_whole(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship the parser"), env)
    cache = project_of(env, ws).cache_dir
    shards = [n for n in os.listdir(cache) if n.startswith("v3.") and "root" not in n]
    assert shards
    for name in shards:
        with open(os.path.join(cache, name), "r+b") as fh:
            fh.truncate(512 << 20)  # sparse: costs no disk, but a whole read would take 512 MiB of memory
    started = time.monotonic()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", CLI, "show"], cwd=ws, env=env, capture_output=True,
                          timeout=60) if os.path.exists("/usr/bin/time") else None
    if done is not None:
        assert done.returncode == 0 and b"ship the parser" in done.stdout, done.stderr
        peak_kib = int(done.stderr.decode().strip().splitlines()[-1])
        assert peak_kib < 200 * 1024, peak_kib
    _out, answer, elapsed = hook("SessionStart", hook_binaries.fixture("session_start.startup.json", ws,
                                                                      session_id="sess-1", source="clear"), env)
    assert "ship the parser" in json.dumps(answer) and time.monotonic() - started < 30


def test_a_swap_loop_between_the_ledger_and_a_fifo_never_hangs_a_reader(env, ws):
    """The race the lstat-then-open pattern lost: a FIFO renamed into place between the two."""
    import threading

    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship the parser"), env)
    ledger = project_of(env, ws).ledger
    real, fifo = ledger + ".real", ledger + ".fifo"
    os.link(ledger, real)
    stop = threading.Event()

    def swap():
        while not stop.is_set():
            if not os.path.exists(fifo):
                os.mkfifo(fifo)
            os.replace(fifo, ledger)
            time.sleep(0.0005)
            os.link(real, real + ".tmp")
            os.replace(real + ".tmp", ledger)
            time.sleep(0.0005)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        for _ in range(12):
            done = subprocess.run([CLI, "show"], cwd=ws, env=env, capture_output=True, timeout=20)
            assert done.returncode != 3 and b"Traceback" not in done.stderr, done.stderr
    finally:
        stop.set()
        swapper.join(timeout=5)

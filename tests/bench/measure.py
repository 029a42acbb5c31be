"""Running one process for a benchmark: wall time, peak RSS and bytes written to storage.

Bytes written are `ru_oublock` x 512 from `os.wait4`: on Linux the kernel counts a page when a
process dirties it in the page cache (`/proc/PID/io` write_bytes), so a write is counted whether
or not it was synced yet, and a file rewritten in place counts again. A hook answers first and
leaves its ledger write to a detached child (hook/deferred.py: fork, setsid); that child is not a
child of whoever started the hook, so its usage would be lost. So every measured process is
started by a small helper process (SPAWNER below) that is a child subreaper (Linux
`prctl(PR_SET_CHILD_SUBREAPER)`): when the hook exits, its orphaned child is re-parented to the
helper, which reaps it with `wait4` and adds its bytes and RSS. The moment the last of them has
exited is when the hook's work is written ("until written").

Why a helper and not the benchmark itself: Linux carries a process's RSS high-water mark across
fork and exec (`ru_maxrss` of a child that the benchmark spawned after building a 100,000-event
history in memory reads as the benchmark's own 350 MB). The helper is a fresh `python3 -I -S`
that keeps nothing (it reads the child's output in 64 KiB pieces, keeping only its head and the
tail of stderr), so a measured process's peak RSS reads its own, never below the helper's
~10 MB. The helper times the child itself, from just before `posix_spawn` to `wait4`.

What "written" counts depends on how the file's pages sit in the page cache. On Linux 6.x ext4
caches a file in large folios when it was written in large pieces (sendfile, one big write), and
dirtying one byte of a folio counts (and later writes back) the whole folio: one 32-byte slot
written into a request index that `shutil.copyfile` had put back reads as 128 KiB. intent-loop
itself writes those files in small pieces (an index slot, an appended line), so the benchmarks
restore their projects with `copy_tree`, which writes every file in page-sized pieces as those
writers leave them; a cold file read back from disk is cached in small folios either way.

Where the subreaper is not available (not Linux), the detached work is waited for with the
caller's `wait_for` (pending_work.wait_idle) and bytes are reported as unknown (None).
"""
import json
import os
import subprocess
import sys
import sysconfig

# Every measured process runs the interpreter behind the bench's own (a venv's bin/python3 is a
# symlink to it), as a hook's launcher would: never a venv wrapper or a pyenv shim.
PYTHON = os.path.realpath(sys.executable)
# That interpreter's own site-packages are not the venv's: they may lack the pinned packages
# (orjson) entirely (pyenv's 3.12 and 3.13 here) or hold other versions (3.11 here has a global
# orjson, which hid the difference). A measured process that needs them puts this first on sys.path.
PINNED_PACKAGES = sysconfig.get_paths()["purelib"]

SPAWNER = r"""
import json, os, select, sys, time
try:
    import ctypes
    SUBREAPER = ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
except Exception:
    SUBREAPER = False
out = os.fdopen(os.dup(1), "w")
for request in sys.stdin:
    r = json.loads(request)
    data = r["data"].encode("latin-1")
    pin, pout, perr = os.pipe(), os.pipe(), os.pipe()
    actions = [(os.POSIX_SPAWN_DUP2, pin[0], 0), (os.POSIX_SPAWN_DUP2, pout[1], 1), (os.POSIX_SPAWN_DUP2, perr[1], 2)]
    if r["cwd"]:
        os.chdir(r["cwd"])
    started = time.perf_counter()
    pid = os.posix_spawn(r["cmd"][0], r["cmd"], r["env"], file_actions=actions)
    os.chdir("/")
    for fd in (pin[0], pout[1], perr[1]):
        os.close(fd)
    try:
        os.write(pin[1], data)
    except BrokenPipeError:
        pass
    os.close(pin[1])
    head, tail, open_fds = b"", b"", {pout[0], perr[0]}
    while open_fds:
        for fd in select.select(list(open_fds), [], [])[0]:
            chunk = os.read(fd, 65536)
            if not chunk:
                os.close(fd)
                open_fds.discard(fd)
            elif fd == pout[0]:
                if len(head) < 65536:
                    head = (head + chunk)[:65536]
            else:
                tail = (tail + chunk)[-4096:]
    _pid, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - started
    written, rss = usage.ru_oublock * 512, usage.ru_maxrss * 1024
    deadline = time.monotonic() + r["timeout"]
    late = False
    while SUBREAPER:
        try:
            child, _status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if child == 0:
            if time.monotonic() > deadline:
                late = True
                break
            time.sleep(0.0005)
            continue
        written += usage.ru_oublock * 512
        rss = max(rss, usage.ru_maxrss * 1024)
    landed = time.perf_counter() - started
    out.write(json.dumps({"elapsed": elapsed, "landed": landed, "written": written if SUBREAPER else None,
                          "rss": rss, "returncode": os.waitstatus_to_exitcode(status), "late": late,
                          "stdout": head.decode("latin-1"), "stderr": tail.decode("latin-1")}) + "\n")
    out.flush()
"""
_SPAWNER = None


def _spawner():
    global _SPAWNER
    if _SPAWNER is None:
        _SPAWNER = subprocess.Popen([PYTHON, "-I", "-S", "-c", SPAWNER], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True, encoding="utf-8")
    return _SPAWNER


def become_subreaper():
    """True when the helper can count what a hook leaves running (Linux)."""
    return sys.platform.startswith("linux")


class Run:
    """One measured process: `elapsed` (s, until it exited), `landed` (s, until it and every
    descendant it left behind exited), `written` (bytes, all of them, or None when unknown),
    `rss` (peak RSS of the largest of them, bytes), `returncode`, `stdout` (its first 64 KiB),
    `stderr` (its last 4 KiB)."""

    __slots__ = ("elapsed", "landed", "written", "rss", "returncode", "stdout", "stderr")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))


def run(cmd, *, data=b"", env=None, cwd=None, capture=True, wait_for=None, timeout=120):
    """Run `cmd` (an absolute path first) with `data` (at most 60 KB) on stdin through the helper;
    wait for it and for what it left running. `wait_for(timeout)` is the fallback wait for
    detached work where the helper cannot see it. `capture` is accepted for symmetry: the helper
    always keeps only the head of stdout."""
    del capture
    if len(data) > 60000:
        raise ValueError("measure.run passes at most 60 KB on stdin")
    helper = _spawner()
    request = {"cmd": [str(c) for c in cmd], "env": dict(os.environ if env is None else env),
               "cwd": str(cwd) if cwd else None, "data": data.decode("latin-1"), "timeout": timeout}
    helper.stdin.write(json.dumps(request) + "\n")
    helper.stdin.flush()
    answer = helper.stdout.readline()
    if not answer:
        raise SystemExit("bench: the measuring helper died")
    result = json.loads(answer)
    if result.pop("late"):
        raise SystemExit(f"bench: work left by {cmd[0]} still runs after {timeout} s")
    if result["written"] is None and wait_for is not None and not wait_for(timeout):
        raise SystemExit(f"bench: work left by {cmd[0]} did not finish in {timeout} s")
    result["stdout"] = result["stdout"].encode("latin-1")
    result["stderr"] = result["stderr"].encode("latin-1")
    return Run(**result)


PAGE = 4096


def copy_in_pages(source, target):
    """shutil copy function: the bytes of `source` written to `target` one page per write(2),
    mode copied (see the module docstring for why not sendfile)."""
    import shutil

    with open(source, "rb") as src, open(target, "wb", buffering=0) as dst:
        while True:
            page = src.read(PAGE)
            if not page:
                break
            dst.write(page)
    shutil.copymode(source, target)
    return target


def copy_tree(source, target):
    import shutil

    return shutil.copytree(source, target, copy_function=copy_in_pages)


def percentile(samples, fraction):
    """The nearest-rank percentile (p95: the 38th of 40 sorted samples)."""
    ordered = sorted(samples)
    index = max(0, min(len(ordered) - 1, int(round(fraction * len(ordered) + 0.5)) - 1))
    return ordered[index]


def kib(value):
    return "n/a" if value is None else f"{value / 1024:.0f} KiB"


def mib(value):
    return "n/a" if value is None else f"{value / 2**20:.0f} MiB"


def size_text(value):
    """Bytes in the unit that keeps it short (KiB up to 10 MiB, then MiB)."""
    if value is None:
        return "n/a"
    return f"{value / 1024:.1f} KiB" if value < 10 * 2**20 else f"{value / 2**20:.1f} MiB"

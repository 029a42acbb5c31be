"""Running one process for a benchmark: wall time, peak RSS and bytes written to storage.

Bytes written are `ru_oublock` x 512 from `os.wait4`: on Linux the kernel counts a page when a
process dirties it in the page cache (`/proc/PID/io` write_bytes), so a write is counted whether
or not it was synced yet, and a file rewritten in place counts again. A hook answers first and
leaves its ledger write to a detached child (hook/deferred.py: fork, setsid); that child is not
a child of the benchmark, so its usage would be lost. The benchmark therefore makes itself a
child subreaper (Linux `prctl(PR_SET_CHILD_SUBREAPER)`): when the hook exits its orphaned child
is re-parented to the benchmark, which reaps it with `wait4` and adds its bytes and RSS. The
moment the last of them has exited is when the hook's work is written ("until written").

Where the subreaper is not available (not Linux), `run` falls back to the hook's own process and
`pending_work.wait_idle` and reports the bytes as unknown (None).
"""
import os
import subprocess
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER = None


def become_subreaper():
    """True once orphaned descendants of this process are re-parented to it (Linux only)."""
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = False
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _SUBREAPER = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            pass
    return _SUBREAPER


class Run:
    """One measured process: `elapsed` (s, until it exited), `landed` (s, until it and every
    descendant it left behind exited), `written` (bytes, all of them, or None when unknown),
    `rss` (peak RSS of the largest of them, bytes), `returncode`, `stdout`, `stderr`."""

    __slots__ = ("elapsed", "landed", "written", "rss", "returncode", "stdout", "stderr")

    def __init__(self, **fields):
        for name in self.__slots__:
            setattr(self, name, fields.get(name))


def _drain(stream, sink):
    sink.append(stream.read())
    stream.close()


def run(cmd, *, data=b"", env=None, cwd=None, capture=True, wait_for=None, timeout=120):
    """Run `cmd` with `data` on stdin; wait for it and (subreaper) for what it left running.

    `wait_for(timeout)` is the fallback wait for detached work without the subreaper.
    Output goes to pipes (read by threads), never to a file, so it is not counted as written.
    """
    subreaper = become_subreaper()
    out, err = [], []
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, env=env, cwd=cwd,
                            stdout=subprocess.PIPE if capture else subprocess.DEVNULL, stderr=subprocess.PIPE)
    readers = [threading.Thread(target=_drain, args=(proc.stderr, err))]
    if capture:
        readers.append(threading.Thread(target=_drain, args=(proc.stdout, out)))
    for reader in readers:
        reader.start()
    try:
        if data:
            proc.stdin.write(data)
        proc.stdin.close()
    except BrokenPipeError:
        pass
    _pid, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    for reader in readers:
        reader.join()
    written, rss = usage.ru_oublock * 512, usage.ru_maxrss * 1024
    if subreaper:
        deadline = time.monotonic() + timeout
        while True:
            try:
                pid, _status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                if time.monotonic() > deadline:
                    raise SystemExit(f"bench: work left by {cmd[0]} still runs after {timeout} s")
                time.sleep(0.0005)
                continue
            written += usage.ru_oublock * 512
            rss = max(rss, usage.ru_maxrss * 1024)
    else:
        written = None
        if wait_for is not None and not wait_for(timeout):
            raise SystemExit(f"bench: work left by {cmd[0]} did not finish in {timeout} s")
    landed = time.perf_counter() - started
    return Run(elapsed=elapsed, landed=landed, written=written, rss=rss, returncode=proc.returncode,
               stdout=out[0] if out else b"", stderr=err[0] if err else b"")


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

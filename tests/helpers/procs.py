"""Worker processes for the storage tests: spawned in their own session, read with timeouts, always reaped.

A test uses `with Worker(...) as w:`; leaving the block kills the worker's whole process group
if it is still running and waits for it, so no test can leave a child behind.
"""
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

HELPERS = Path(__file__).resolve().parent
WORKER_SCRIPT = HELPERS / "ledger_worker.py"


def worker_args(*args):
    """The command line running ledger_worker.py with this interpreter, isolated (-I)."""
    return [sys.executable, "-I", str(WORKER_SCRIPT), *(str(a) for a in args)]


class Worker:
    """One child process whose stdout+stderr are read line by line without ever blocking forever."""

    def __init__(self, args, *, env_extra=None, pass_fds=(), stdin_pipe=False):
        env = dict(os.environ)
        env.update(env_extra or {})
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            pass_fds=pass_fds,
            start_new_session=True,
        )
        self.pid = self.proc.pid
        self.lines = []
        self._unread = []
        self._buffer = b""
        self._eof = False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    # -- output ------------------------------------------------------------------------------
    def _fill(self, deadline):
        """Read whatever arrives before `deadline`; False when nothing more can come in time."""
        if self._eof:
            return False
        fd = self.proc.stdout.fileno()
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        chunk = os.read(fd, 65536)
        if not chunk:
            self._eof = True
            if self._buffer:
                self._push(self._buffer.decode("utf-8", "replace"))
                self._buffer = b""
            return False
        self._buffer += chunk
        *complete, self._buffer = self._buffer.split(b"\n")
        for line in complete:
            self._push(line.decode("utf-8", "replace"))
        return True

    def _push(self, line):
        self.lines.append(line)
        self._unread.append(line)

    def wait_for(self, prefix, *, timeout):
        """The next output line starting with `prefix`; fails the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            while self._unread:
                line = self._unread.pop(0)
                if line.startswith(prefix):
                    return line
            if not self._fill(deadline) and (self._eof or time.monotonic() >= deadline):
                raise AssertionError(f"worker {self.pid} never printed {prefix!r}; output so far: {self.lines}")

    def finish(self, *, timeout):
        """Wait for the exit, read all output; returns (returncode, all lines). Kills on timeout."""
        deadline = time.monotonic() + timeout
        while not self._eof and time.monotonic() < deadline:
            self._fill(deadline)
        if not self._eof:
            self.kill()
            raise AssertionError(f"worker {self.pid} did not finish within {timeout}s; output: {self.lines}")
        return self.proc.wait(timeout=max(0.1, deadline - time.monotonic())), list(self.lines)

    def reported(self, prefix="ok "):
        """The second field of every line that starts with `prefix` (the worker's event ids)."""
        return [line.split()[1] for line in self.lines if line.startswith(prefix)]

    # -- signals -----------------------------------------------------------------------------
    def wait_stopped(self, *, timeout):
        """Block until the worker is stopped by SIGSTOP (it stops itself at a hook point)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WUNTRACED | os.WNOHANG)
            if pid == self.pid:
                if os.WIFSTOPPED(status):
                    return
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                raise AssertionError(
                    f"worker {self.pid} exited ({self.proc.returncode}) instead of stopping: {self.lines}")
            time.sleep(0.002)
        raise AssertionError(f"worker {self.pid} did not stop within {timeout}s; output: {self.lines}")

    def kill(self):
        """SIGKILL the worker's process group and reap it (the kernel then drops its flocks)."""
        if self.proc.returncode is None:
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=10)

    def close_stdin(self):
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()

    def close(self):
        if self.proc.poll() is None:
            self.kill()
        self.close_stdin()
        self.proc.stdout.close()

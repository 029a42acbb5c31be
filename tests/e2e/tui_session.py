"""What driving either host's interactive TUI in tmux shares (codex_session.CodexSession and
claude_session.ClaudeSession): start it in a private tmux server (test_real_codex._Tmux) and wait for
it to come up, read the screen, type a line, wait until no turn runs, quit, and leave nothing behind."""
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_real_codex import _Tmux, _wait_for  # noqa: E402


class TuiSession:
    """A subclass names its host (NAME), what its screen shows while a turn runs (BUSY) and the slash
    command that quits it (QUIT), and calls _start from its __init__."""

    NAME = "host"
    BUSY = ("esc to interrupt",)
    QUIT = "/quit"

    def _start(self, command, *, cwd, env, ready, timeout):
        self.tmux = _Tmux(command, cwd=cwd, env=env)
        try:
            if not self.wait_screen(ready, timeout):
                raise AssertionError(f"the {self.NAME} TUI did not come up:\n{self.screen()}")
        except BaseException:
            self.close()  # a failed start must not leave the host running
            raise
        time.sleep(0.5)  # let the prompt settle before typing

    def screen(self):
        return self.tmux.screen()

    def wait_screen(self, predicate, timeout=30):
        """Wait until predicate(screen) (or a substring) holds; returns the screen or ""."""
        return self.tmux.wait_screen(predicate, timeout)

    def type_line(self, text):
        self.tmux.type_line(text)

    def wait_idle(self, timeout=30):
        """Wait until no turn runs (none of BUSY on the screen)."""
        return self.wait_screen(lambda s: not any(busy in s for busy in self.BUSY), timeout)

    def stop(self, timeout=15):
        """QUIT, and wait for the host to exit (its SessionEnd hooks run then); then tear tmux down."""
        try:
            self.wait_idle(timeout)
            self.type_line(self.QUIT)
            _wait_for(lambda: not self._alive(), time.monotonic() + timeout)
        finally:
            self.close()

    def _alive(self):
        try:
            os.kill(self.tmux.pane_pid, 0)
        except ProcessLookupError:
            return False
        return subprocess.run([*self.tmux.base, "has-session", "-t", "e2e"], capture_output=True,
                              timeout=20).returncode == 0

    def close(self):
        """Kill the pane's process group and the tmux server (idempotent)."""
        self.tmux.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

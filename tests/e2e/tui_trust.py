"""Trust a plugin's hooks once, as a user does: in the real Codex TUI (0.169.0), in a pseudo-terminal.

    keys = trust_plugin_hooks(CODEX_BIN, env, workspace, wrap)   # the [hooks.state."..."] keys now in config.toml

Codex runs a plugin's hooks only once the user has trusted them, which `codex exec` cannot do: the
TUI asks at start-up ("Hooks need review / 3 hooks are new or changed") and records the answer in
<codex-home>/config.toml. This helper starts the TUI in a pty of its own (40x120, TERM=xterm-256color),
answers the prompts it shows, in the order it shows them, by their text, and quits.

What 0.169.0 shows, and the keys that answer it (seen through this helper):
- "Folder access / Trust this folder? ..." with "1. Trust and continue / 2. Back to Agent Command
  Center", first, only where `cwd` is a git repository not trusted yet (it writes
  [projects."<cwd>"] trust_level = "trusted"); a plain directory goes straight to the hook review.
- "Hooks need review / 3 hooks are new or changed. / Hooks can run outside the sandbox after you
  trust them." with "1. Review hooks / 2. Trust all and continue / 3. Continue without trusting
  (hooks won't run)". In both menus a digit only moves the selection ("› 2. Trust all and
  continue") and Enter confirms. Sent in one write, "1\r" once lost its Enter (Codex takes keys
  that come too fast for a paste), so the two go half a second apart, and Enter is pressed again
  while the menu stays open. The trust records are in config.toml as soon as the menu closes.
- Then the composer ("Ask Codex to do anything"). One Ctrl-C quits ("Session ID: ..."), but one
  pressed right after the menu closes may be dropped, so it is pressed again while Codex still holds
  the terminal in raw mode. In the offline namespace Codex takes about 4 s to exit (it SIGTERMs the
  plugin's MCP server and waits, and looks up raw.githubusercontent.com and api.github.com).

`--no-daemon`: without it the 0.169.0 TUI starts a shared app-server daemon (`codex app-server
--listen unix:// --managed-daemon`, with the plugin's MCP server under it) in a session of its own,
which outlives the TUI and any kill of its process group.

The TUI draws by diffs (a cell that already holds the right character is not written again), so the
text is matched on a small terminal emulator's screen, not on the byte stream with its escapes
stripped. It also queries the terminal at start-up (cursor position, device attributes, colours),
which the emulator answers as a terminal would.

`wrap` is the argv wrapper of the mock_model fixture in test_real_codex.py (nsenter into the
offline network namespace). At the end, and on timeout, the TUI's whole process group is killed.
"""
import codecs
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import time
import unicodedata
from pathlib import Path

ROWS, COLS = 40, 120
HOOKS_PROMPT = "Hooks need review"
TRUST_ALL = "Trust all and continue"
FOLDER_PROMPT = "Trust this folder?"
FOLDER_YES = "Trust and continue"
COMPOSER = "Ask Codex to do anything"
HOOK_STATE_KEY = re.compile(r'^\[hooks\.state\."(?P<key>[^"]+)"\]\s*$', re.M)


class Screen:
    """Just enough of a VT100/xterm screen for a ratatui application: cursor motion, erasing,
    scroll regions, inserted and deleted lines. feed() returns the answers to the terminal queries
    it saw (cursor position, device attributes, foreground and background colour)."""

    def __init__(self, rows=ROWS, cols=COLS):
        self.rows, self.cols = rows, cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.row = self.col = 0
        self.top, self.bottom = 0, rows - 1
        self.saved = (0, 0)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._pending = ""  # an escape sequence cut by the end of a read

    def text(self):
        return "\n".join("".join(line).rstrip() for line in self.grid)

    # -- the byte stream ---------------------------------------------------------------------
    def feed(self, data):
        replies = []
        stream = self._pending + self._decoder.decode(data)
        self._pending = ""
        i, n = 0, len(stream)
        while i < n:
            ch = stream[i]
            if ch == "\x1b":
                end = self._escape(stream, i, replies)
                if end is None:  # incomplete: wait for the rest
                    self._pending = stream[i:]
                    break
                i = end
                continue
            if ch == "\r":
                self.col = 0
            elif ch in "\n\x0b\x0c":
                self._linefeed()
            elif ch == "\b":
                self.col = max(0, self.col - 1)
            elif ch == "\t":
                self.col = min(self.cols - 1, (self.col // 8 + 1) * 8)
            elif ch >= " " and ch != "\x7f":
                self._put(ch)
            i += 1
        return b"".join(replies)

    def _escape(self, s, i, replies):
        """Handle the escape sequence at s[i]; the index after it, or None if it is incomplete."""
        if i + 1 >= len(s):
            return None
        kind = s[i + 1]
        if kind == "[":
            match = re.compile(r"\[([0-?]*)([ -/]*)([@-~])").match(s, i + 1)
            if match is None:
                return None if re.fullmatch(r"\[[0-?]*[ -/]*", s[i + 1:]) else i + 2
            self._csi(match.group(1), match.group(2), match.group(3), replies)
            return match.end()
        if kind in "]PX^_":  # OSC, DCS, ...: up to BEL or ST
            ends = [e for e in (s.find("\x07", i + 2), s.find("\x1b\\", i + 2)) if e != -1]
            if not ends:
                return None
            end = min(ends)
            if kind == "]":
                self._osc(s[i + 2:end], replies)
            return end + (1 if s[end] == "\x07" else 2)
        if kind in "()*+#%":  # charset designation: one more character
            return None if i + 2 >= len(s) else i + 3
        if kind == "7":
            self.saved = (self.row, self.col)
        elif kind == "8":
            self.row, self.col = self.saved
        elif kind == "M":  # reverse index
            if self.row == self.top:
                self._scroll(-1)
            else:
                self.row = max(0, self.row - 1)
        elif kind == "D":
            self._linefeed()
        elif kind == "E":
            self.col = 0
            self._linefeed()
        elif kind == "c":
            self.__init__(self.rows, self.cols)
        return i + 2

    def _csi(self, params, intermediates, final, replies):
        private = params[:1] if params[:1] in "?<=>" else ""
        numbers = [int(p) if p.isdigit() else 0 for p in params[len(private):].split(";")] if params else []
        first = numbers[0] if numbers and numbers[0] else 1
        if intermediates or (private and final not in "hlc"):
            return  # ?u (keyboard enhancement query) and the like: unanswered, as by xterm
        if final in "Hf":
            row = numbers[0] if numbers and numbers[0] else 1
            col = numbers[1] if len(numbers) > 1 and numbers[1] else 1
            self.row, self.col = min(row, self.rows) - 1, min(col, self.cols) - 1
        elif final == "A":
            self.row = max(0, self.row - first)
        elif final in "Be":
            self.row = min(self.rows - 1, self.row + first)
        elif final in "Ca":
            self.col = min(self.cols - 1, self.col + first)
        elif final == "D":
            self.col = max(0, self.col - first)
        elif final == "E":
            self.row, self.col = min(self.rows - 1, self.row + first), 0
        elif final == "F":
            self.row, self.col = max(0, self.row - first), 0
        elif final in "G`":
            self.col = min(first, self.cols) - 1
        elif final == "d":
            self.row = min(first, self.rows) - 1
        elif final == "J":
            mode = numbers[0] if numbers else 0
            if mode == 0:
                self._erase_line(self.row, self.col, self.cols)
                for r in range(self.row + 1, self.rows):
                    self._erase_line(r, 0, self.cols)
            elif mode == 1:
                for r in range(self.row):
                    self._erase_line(r, 0, self.cols)
                self._erase_line(self.row, 0, self.col + 1)
            else:
                for r in range(self.rows):
                    self._erase_line(r, 0, self.cols)
        elif final == "K":
            mode = numbers[0] if numbers else 0
            start, end = {0: (self.col, self.cols), 1: (0, self.col + 1)}.get(mode, (0, self.cols))
            self._erase_line(self.row, start, end)
        elif final == "X":
            self._erase_line(self.row, self.col, min(self.cols, self.col + first))
        elif final == "P":
            line = self.grid[self.row]
            del line[self.col:self.col + first]
            line.extend([" "] * (self.cols - len(line)))
        elif final == "@":
            line = self.grid[self.row]
            line[self.col:self.col] = [" "] * first
            del line[self.cols:]
        elif final in "LM" and self.top <= self.row <= self.bottom:
            saved_top, self.top = self.top, self.row
            self._scroll(first if final == "M" else -first)
            self.top = saved_top
        elif final == "S":
            self._scroll(first)
        elif final == "T":
            self._scroll(-first)
        elif final == "r":
            top = numbers[0] if numbers and numbers[0] else 1
            bottom = numbers[1] if len(numbers) > 1 and numbers[1] else self.rows
            self.top, self.bottom = top - 1, min(bottom, self.rows) - 1
            self.row = self.col = 0
        elif final == "s":
            self.saved = (self.row, self.col)
        elif final == "u":
            self.row, self.col = self.saved
        elif final == "n" and numbers[:1] == [6]:
            replies.append(f"\x1b[{self.row + 1};{min(self.col, self.cols - 1) + 1}R".encode())
        elif final == "c" and private in ("", "?"):
            replies.append(b"\x1b[?62;22c")
        elif final in "hl" and private == "?" and 1049 in numbers:  # alternate screen: start it blank
            self.grid = [[" "] * self.cols for _ in range(self.rows)]

    def _osc(self, body, replies):
        if body in ("10;?", "11;?"):
            colour = "ffff/ffff/ffff" if body.startswith("10") else "0000/0000/0000"
            replies.append(f"\x1b]{body[:2]};rgb:{colour}\x1b\\".encode())

    # -- the grid ----------------------------------------------------------------------------
    def _put(self, ch):
        if unicodedata.combining(ch):
            return
        width = 2 if unicodedata.east_asian_width(ch) in "WF" else 1
        if self.col + width > self.cols:  # the wrap left pending at the last column
            self.col = 0
            self._linefeed()
        self.grid[self.row][self.col] = ch
        if width == 2:
            self.grid[self.row][self.col + 1] = ""
        self.col += width  # == cols: wrap pending

    def _linefeed(self):
        if self.row == self.bottom:
            self._scroll(1)
        else:
            self.row = min(self.rows - 1, self.row + 1)

    def _scroll(self, count):
        """Scroll the region up by count lines (down if negative)."""
        region = self.grid[self.top:self.bottom + 1]
        blank = [[" "] * self.cols for _ in range(min(abs(count), len(region)))]
        region = region[len(blank):] + blank if count > 0 else blank + region[:len(region) - len(blank)]
        self.grid[self.top:self.bottom + 1] = region

    def _erase_line(self, row, start, end):
        self.grid[row][start:end] = [" "] * (end - start)


class PtyTui:
    """One interactive program in a pseudo-terminal of its own, the pty its controlling terminal."""

    def __init__(self, argv, *, cwd, env, rows=ROWS, cols=COLS):
        import fcntl  # POSIX only: imported here so that the module imports everywhere
        import termios

        self.screen = Screen(rows, cols)
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        # `setsid --ctty`: a new session whose controlling terminal is the pty (stdin), without a
        # preexec_fn in this threaded process. The child is no group leader, so setsid does not fork.
        prefix = ["setsid", "--ctty"] if shutil.which("setsid") else []
        try:
            self.proc = subprocess.Popen([*prefix, *argv], cwd=cwd, env=dict(env, TERM="xterm-256color"),
                                         stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                                         start_new_session=not prefix)
        finally:
            os.close(slave)
        self.eof = False

    def pump(self, seconds):
        """Read and render output (answering terminal queries) for up to `seconds`."""
        end = time.monotonic() + seconds
        while not self.eof:
            left = end - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self.master], [], [], min(left, 0.1))
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every slave end is closed
                chunk = b""
            if not chunk:
                self.eof = True
                break
            replies = self.screen.feed(chunk)
            if replies:
                os.write(self.master, replies)

    def wait_for(self, predicate, deadline):
        """Pump until predicate(screen text) is true or the deadline passes; the last result."""
        while True:
            found = predicate(self.screen.text())
            if found or self.eof or time.monotonic() >= deadline:
                return found
            self.pump(min(0.2, max(0.0, deadline - time.monotonic())))

    def raw_mode(self):
        """Whether the program has the terminal in raw mode (no signals from ^C): it reads keys."""
        import termios

        try:
            return not termios.tcgetattr(self.master)[3] & termios.ISIG  # the slave's settings
        except termios.error:
            return False

    def send(self, keys):
        os.write(self.master, keys.encode() if isinstance(keys, str) else keys)

    def close(self, grace=5):
        """Wait up to `grace` seconds for the program to exit, then kill its process group."""
        deadline = time.monotonic() + grace
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.pump(0.1)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # nothing of the session may outlive it
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.master)


def hook_state_keys(codex_home):
    """The keys of every [hooks.state."..."] table in <codex_home>/config.toml."""
    config = Path(codex_home) / "config.toml"
    return HOOK_STATE_KEY.findall(config.read_text()) if config.exists() else []


def _choose(tui, prompt, label, deadline):
    """In the dialog titled `prompt`, select the option labelled `label` by its digit (sent again
    every two seconds until the selection shows it: a dialog drawn before the TUI reads keys drops
    a key typed at once, as a loaded CI machine showed), then confirm it with Enter half a second
    later, again every two seconds while the dialog stays open."""
    digit = re.search(rf"(\d)\. {re.escape(label)}", tui.screen.text())
    assert digit, f"no numbered option {label!r} on the screen:\n{tui.screen.text()}"
    selected = re.compile(rf"› {digit.group(1)}\. {re.escape(label)}")
    while not selected.search(tui.screen.text()) and time.monotonic() < deadline:
        tui.send(digit.group(1))
        tui.wait_for(selected.search, min(deadline, time.monotonic() + 2))
    assert selected.search(tui.screen.text()), f"option {label!r} was not selected:\n{tui.screen.text()}"
    while time.monotonic() < deadline:
        tui.pump(0.5)
        tui.send("\r")
        if tui.wait_for(lambda text: prompt not in text, min(deadline, time.monotonic() + 2)):
            return
    raise AssertionError(f"{prompt!r} did not close on {label!r}:\n{tui.screen.text()}")


def trust_plugin_hooks(codex_bin, env, cwd, wrap, timeout=60):
    """Start the Codex TUI in `cwd`, choose "Trust all and continue" at its hook review, quit, and
    return the [hooks.state."..."] keys then in $CODEX_HOME/config.toml."""
    codex_home = env["CODEX_HOME"]
    before = set(hook_state_keys(codex_home))
    deadline = time.monotonic() + timeout
    tui = PtyTui(wrap([codex_bin, "--no-daemon"]), cwd=cwd, env=env)
    try:
        hook_review = lambda text: HOOKS_PROMPT in text and TRUST_ALL in text  # noqa: E731
        tui.wait_for(lambda text: hook_review(text) or FOLDER_PROMPT in text, deadline)
        if FOLDER_PROMPT in tui.screen.text():  # a git repository not trusted yet: first
            _choose(tui, FOLDER_PROMPT, FOLDER_YES, deadline)
            tui.wait_for(hook_review, deadline)
        assert hook_review(tui.screen.text()), (
            f"the Codex TUI showed no {HOOKS_PROMPT!r} prompt within {timeout} s "
            f"(exit status: {tui.proc.poll()}); its screen:\n{tui.screen.text()}")
        _choose(tui, HOOKS_PROMPT, TRUST_ALL, deadline)
        trusted = tui.wait_for(lambda _text: set(hook_state_keys(codex_home)) - before, deadline)
        assert trusted, f"no hook trust was written to config.toml; the screen:\n{tui.screen.text()}"
        assert tui.wait_for(lambda text: HOOKS_PROMPT not in text and COMPOSER in text, deadline), \
            f"the hook review did not close:\n{tui.screen.text()}"
        _quit(tui, deadline)
    finally:
        tui.close(grace=max(1.0, min(10.0, deadline - time.monotonic())))
        _stop_daemon(codex_home)
    return hook_state_keys(codex_home)


def _quit(tui, deadline):
    """Ctrl-C on the empty composer quits; one pressed right after the hook review closes may be
    dropped, so press it again every second, but only while the terminal is still in raw mode: once
    Codex has left it to exit, a ^C would be a SIGINT to it mid-exit."""
    pressed = 0.0
    while tui.proc.poll() is None and not tui.eof and time.monotonic() < deadline:
        if tui.raw_mode() and time.monotonic() - pressed >= 1.0:
            tui.send("\x03")
            pressed = time.monotonic()
        tui.pump(0.1)


def _stop_daemon(codex_home):
    """Kill the shared app-server daemon of this Codex home, should one have started despite
    --no-daemon: it runs in a session of its own, out of reach of the TUI's process group."""
    for pid_file in (Path(codex_home) / "app-server-daemon").glob("*.pid"):
        try:
            pid = int(json.loads(pid_file.read_text())["pid"])
            if b"app-server" in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError, TypeError):
            pass

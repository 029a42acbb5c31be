"""Which host runs this hook (Codex or Claude Code), and the Codex process that started it, read
from /proc (Linux; elsewhere nothing is known).

The host is told by what only one host sends (docs/hosts.md): Claude Code's own variables, never
CLAUDE_PLUGIN_ROOT or CLAUDE_PLUGIN_DATA, which Codex sets for plugin hooks too; and Codex's
`turn_id` in a prompt or Stop payload, which wins (a Codex run from a Claude Code shell inherits
Claude Code's variables).

Codex tells a hook neither its sandbox nor when it started, so both are read where they are: the
command line of the nearest ancestor process that is Codex (hook/exposure.py reads the sandbox
from it) and that process's start time (guard/efg_runs.py takes a Guard record written before it
for an earlier run of the session, a `codex resume`). Every read is bounded and never follows a
FIFO; a missing /proc answers None.
"""
from intent_loop.base import fast_os

CLAUDE_CODE_VARIABLES = ("CLAUDECODE", "CLAUDE_PROJECT_DIR", "CLAUDE_CODE_ENTRYPOINT")
HOSTS = ("codex", "claude-code")


def on_claude_code(env, payload=None):
    """Whether Claude Code runs this hook (or this MCP server: `payload` None)."""
    if payload is not None and isinstance(payload.get("turn_id"), str):
        return False
    return any(env.get(name) for name in CLAUDE_CODE_VARIABLES)


def host_of(env, payload=None):
    """"claude-code" or "codex" (HOSTS)."""
    return "claude-code" if on_claude_code(env, payload) else "codex"


_ANCESTORS = 4  # hook launcher <- sh -c <- codex (native) <- node wrapper: the Codex process is near
_CMDLINE_CAP = 64 << 10


def codex_ancestor(*, _proc="/proc"):
    """(pid, argv) of the nearest ancestor process that is Codex, or None (no /proc, none found)."""
    pid = "self"
    for _ in range(_ANCESTORS):
        pid = _parent_pid(_proc, pid)
        if pid is None or pid <= 1:
            return None
        argv = read_small(f"{_proc}/{pid}/cmdline", _CMDLINE_CAP)
        if argv is None:
            return None
        args = [arg.decode("utf-8", "replace") for arg in argv.split(b"\0") if arg]
        if any(fast_os.path.basename(arg) == "codex" for arg in args[:2]):
            return pid, args
    return None


def started_at(pid, *, _proc="/proc"):
    """When process `pid` started, in epoch seconds (to a clock tick), or None: its stat's start
    time counts clock ticks since boot, and /proc/stat's btime is the boot in epoch seconds."""
    fields = _stat_fields(_proc, pid)
    boot = read_small(f"{_proc}/stat", 1 << 16)
    if fields is None or boot is None:
        return None
    try:
        ticks = int(fields[19])  # field 22 of stat(5), counted after the ")" that ends field 2
        btime = next(int(line.split()[1]) for line in boot.splitlines() if line.startswith(b"btime "))
        hertz = fast_os.sysconf("SC_CLK_TCK")
    except (IndexError, ValueError, StopIteration, OSError):
        return None
    return btime + ticks / hertz if hertz > 0 else None


def _stat_fields(proc, pid):
    stat = read_small(f"{proc}/{pid}/stat", 4096)
    return None if stat is None else stat.rpartition(b")")[2].split()  # the name may hold ")"


def _parent_pid(proc, pid):
    fields = _stat_fields(proc, pid)
    try:
        return int(fields[1])
    except (TypeError, IndexError, ValueError):
        return None


def read_small(path, cap):
    """At most `cap` bytes of a regular file or a /proc entry, never following a FIFO; None on error."""
    try:
        fd = fast_os.open(path, fast_os.O_RDONLY | fast_os.O_NONBLOCK)
    except OSError:
        return None
    try:
        return fast_os.read(fd, cap)
    except OSError:
        return None
    finally:
        fast_os.close(fd)

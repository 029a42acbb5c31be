"""The exclusive project lock: a `ledger.lock/` directory whose owner record is kernel-locked.

Protocol (why each step exists):
- A contender prepares `ledger.lock.<token>.tmp/` holding a complete `owner.json` on which it
  already holds an exclusive flock, then renames it to `ledger.lock/`. So no lock directory ever
  exists without an owner, and the holder's liveness is provable: the kernel drops the flock the
  instant the holder dies, however it dies (SIGKILL included).
- The owner record is not fsynced. Every process reads it through the page cache, so it is
  complete for them the moment it is written; it could only be lost in a power failure, after
  which no process holds a flock, so any lock left behind is provably dead whatever its record
  says (an empty or unreadable record counts as "not held"). The sync cost one more disk flush on
  every mutation and bought nothing.
- Every transition of `ledger.lock/` (install, reclaim, release) happens while holding a short
  flock on the project directory itself (the "gate"). Between our own processes that makes
  "judge the holder dead, then move its directory away" atomic, so a live holder is never robbed.
- Reclaimed and released directories are renamed to `ledger.lock.<token>.reclaimed/` and
  `.released/` (the markers) before removal; leftovers are cleaned under the lock later.
- Waiters give up at their own deadline (their absolute ceiling), and earlier if a live holder
  shows no progress (a new owner token or a fresh heartbeat) for the no-progress window, which is
  shorter than every ceiling: 1 s for a waiter with at most 3 s to go (a hook), 5 s otherwise
  (the command line). Any progress restarts the window.
- Holders heartbeat at least every quarter of the smallest window: a lock taken with more than
  3 s to its deadline (the command line's long holders: delete, recover, a big import) touches
  its owner record from a thread every 0.25 s while held (storage/keepalive.py); a hook's short
  transaction heartbeats at its steps.
- A lock handed to a forked child (a hook's committed transaction, finished after its answer)
  is adopted by that child before the parent exits (`adopt_held`): under the gate the owner
  record is rewritten with the child's pid and start time, and the child heartbeats from a
  thread until it releases. Otherwise a waiter would find the recorded pid dead beside a flock
  the child still holds, and reclaim a live lock.
"""
import time

from intent_loop.base import fast_os, platform
from intent_loop.base.canonical import dumps, loads
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.atomic import write_all

OWNER_FILE = "owner.json"
OWNERLESS_GRACE = 2.0  # an owner-less lock (left by an older writer) is dead after this long
HOOK_WINDOW = 1.0  # no progress for this long: a waiter with a hook's budget gives up (never robs)
CLI_WINDOW = 5.0  # the same for the command line's longer budget
SHORT_BUDGET = 3.0  # a waiter or holder with at most this long to its deadline is a hook
KEEPALIVE_EVERY = 0.25  # a quarter of the smallest window
_RESIDUE_SUFFIXES = (".tmp", ".reclaimed", ".released")
_HELD = []  # the locks this process has installed and not released (adopt_held hands them to a child)


class ProjectLock:
    """Held from acquire() to release(); use as `with ProjectLock(dir, deadline=...) as lock:`."""

    def __init__(self, project_dir, *, deadline, silent_after=None, keepalive=None, _sleep=time.sleep):
        self.project_dir = project_dir
        self.lock_dir = fast_os.path.join(project_dir, "ledger.lock")
        self.deadline = deadline
        short = deadline - time.monotonic() <= SHORT_BUDGET
        self.silent_after = silent_after if silent_after is not None else (HOOK_WINDOW if short else CLI_WINDOW)
        self._keepalive_wanted = (not short) if keepalive is None else keepalive
        self._keepalive = None  # the running keepalive thread's stop event
        self.token = fast_os.urandom(16).hex()
        self._owner_fd = None
        self._installed = False
        self._sleep = _sleep

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc_info):
        self.release()

    # -- acquiring -------------------------------------------------------------------------
    def acquire(self):
        try:
            prepared = self._prepare()
        except IntentLoopError:
            self._abandon(f"{self.lock_dir}.{self.token}.tmp")
            raise
        except OSError as exc:
            self._abandon(f"{self.lock_dir}.{self.token}.tmp")
            raise IntentLoopError(ErrorCode.WRITE_FAILED, f"could not prepare the project lock: {exc.strerror}; "
                                  "check free space and permissions") from exc
        try:
            self._wait_and_install(prepared)
        except BaseException:
            if self._installed:  # installed, then interrupted (a signal while the keepalive starts): ours to give back
                self.release()
            else:
                self._abandon(prepared)
            raise

    def _wait_and_install(self, prepared):
        watched = None  # (token, heartbeat) of the live holder we are waiting behind
        watched_since = time.monotonic()
        pause = 0.001
        while True:
            with _Gate(self.project_dir, self.deadline):
                holder = self._inspect_holder()
                if holder is None:
                    if not fast_os.path.isdir(prepared):  # cleaned away by a reclaimer; prepare again
                        self._close_owner()
                        prepared = self._prepare()
                    fast_os.rename(prepared, self.lock_dir)
                    self._installed = True
                    _HELD.append(self)
                    if self._keepalive_wanted:
                        self._start_keepalive()
                    return
                if holder["dead"]:
                    self._reclaim(holder)
                    continue
            progress = (holder.get("token"), holder.get("heartbeat"))
            now = time.monotonic()
            if progress != watched:
                watched, watched_since = progress, now
            elif now - watched_since > self.silent_after:
                raise IntentLoopError(
                    ErrorCode.LOCK_TIMEOUT,
                    f"the project lock is held by live process {holder.get('pid')}, silent for "
                    f"{now - watched_since:.0f}s; it was not taken from it. Check that process, then retry",
                )
            if now >= self.deadline:
                raise IntentLoopError(
                    ErrorCode.LOCK_TIMEOUT,
                    f"the project lock stayed busy (holder pid {holder.get('pid')}) until the deadline; retry",
                )
            self._sleep(min(pause, max(0.0, self.deadline - now)))
            pause = min(pause * 2, 0.02)

    def _prepare(self):
        """Create `ledger.lock.<token>.tmp/owner.json`, flocked, ready to rename (not fsynced: see the
        module's docstring)."""
        prepared = f"{self.lock_dir}.{self.token}.tmp"
        fast_os.mkdir(prepared, 0o700)
        owner_path = fast_os.path.join(prepared, OWNER_FILE)
        fd = fast_os.open(owner_path, fast_os.O_WRONLY | fast_os.O_CREAT | fast_os.O_EXCL
                                      | fast_os.O_NOFOLLOW, 0o600)
        self._owner_fd = fd  # from here on _abandon closes it, whatever fails next
        # A holder cleaning residue may probe this fresh file with a brief shared lock between
        # our open and our flock; wait that out instead of failing.
        if not platform.wait_for_lock(fd, until=self.deadline, pause=0.0005):
            raise IntentLoopError(ErrorCode.LOCK_TIMEOUT, "could not lock a fresh owner record before the deadline")
        write_all(fd, _owner_record(self.token))
        return prepared

    def _inspect_holder(self):
        """None when free; else a dict with `dead` (provably) and what is known of the holder."""
        try:
            st = fast_os.lstat(self.lock_dir)
        except FileNotFoundError:
            return None
        if not fast_os.path.isdir(self.lock_dir) or fast_os.path.islink(self.lock_dir):
            raise IntentLoopError(ErrorCode.UNSAFE_PATH, f"{self.lock_dir} is not a lock directory; remove it by hand")
        owner_path = fast_os.path.join(self.lock_dir, OWNER_FILE)
        try:  # a FIFO, link or directory there is no owner of ours: owner-less, reclaimed after the grace
            fd, _st = paths_mod.open_regular(owner_path)
        except (OSError, IntentLoopError):
            return {"dead": time.time() - st.st_mtime > OWNERLESS_GRACE, "ownerless": True, "ino": st.st_ino}
        try:
            held = platform.is_kernel_lock_held(fd)
            owner_st = fast_os.fstat(fd)
            try:
                record = loads(fast_os.read(fd, 4096))
            except ValueError:
                record = {}
        finally:
            fast_os.close(fd)
        record = record if isinstance(record, dict) else {}
        record.update(ino=st.st_ino, heartbeat=owner_st.st_mtime_ns, dead=not held or _is_pid_gone(record))
        return record

    def _reclaim(self, holder):
        """Move a provably dead holder's directory aside (under the gate) and remove it."""
        marker = f"{self.lock_dir}.{self.token}.reclaimed"
        fast_os.rename(self.lock_dir, marker)
        if fast_os.lstat(marker).st_ino != holder["ino"]:
            # Someone swapped the directory between inspection and rename: not ours to delete.
            if not fast_os.path.exists(self.lock_dir):
                fast_os.rename(marker, self.lock_dir)
            raise IntentLoopError(ErrorCode.LOCK_CONFLICT, "the lock directory changed during reclaim; retry")
        remove_lock_tree(marker)

    def _abandon(self, prepared):
        """Drop a prepared directory that never became the lock (never the installed lock)."""
        self._close_owner()
        if not self._installed:
            remove_lock_tree(prepared)

    def _close_owner(self):
        if self._owner_fd is not None:
            fast_os.close(self._owner_fd)
            self._owner_fd = None

    # -- holding -----------------------------------------------------------------------------
    def _start_keepalive(self):
        """Heartbeat from a thread until release (long holders and adopting children only)."""
        from intent_loop.storage import keepalive

        self._keepalive = keepalive.start(self._owner_fd, every=KEEPALIVE_EVERY)

    def adopt(self):
        """Make this process the lock's recorded owner, in a forked child that inherited the lock (its
        flock is the same open file description), before the parent exits: the module docstring's last
        point; the heartbeat then makes a sync the disk stalls read as a live holder making progress.
        False when the lock is no longer ours (nothing written)."""
        if self._owner_fd is None:
            return False
        self._keepalive = None  # the parent's keepalive thread did not survive the fork
        with _Gate(self.project_dir, time.monotonic() + 1.0):
            if not self.is_held():
                return False
            fast_os.ftruncate(self._owner_fd, 0)
            fast_os.pwrite(self._owner_fd, _owner_record(self.token), 0)
        self._start_keepalive()
        return True

    def heartbeat(self):
        """Show waiters we are making progress (touch the owner record)."""
        if self._owner_fd is not None:
            fast_os.utime(self._owner_fd)

    def is_held(self):
        """True when `ledger.lock/owner.json` is still our own record."""
        if self._owner_fd is None:
            return False
        try:
            current = fast_os.stat(fast_os.path.join(self.lock_dir, OWNER_FILE), follow_symlinks=False)
        except OSError:
            return False
        mine = fast_os.fstat(self._owner_fd)
        return (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev)

    def release(self):
        """Give the lock back. Never raises: the guarded work is already durable or rolled back.

        SIGTERM and SIGINT are held back while it runs: a handler that raises (the hooks' fail-open
        handler exits) would otherwise leave the directory behind when the signal lands between its
        steps; they are delivered as soon as the lock is given back."""
        blocked = platform.hold_signals(("SIGTERM", "SIGINT"))
        try:
            self._release()
        finally:
            platform.release_signals(blocked)

    def _release(self):
        stop, self._keepalive = self._keepalive, None
        if stop is not None:
            stop()  # before the descriptor the heartbeat touches is closed
        if self in _HELD:
            _HELD.remove(self)
        if self._owner_fd is None:
            return
        marker = f"{self.lock_dir}.{self.token}.released"
        try:
            with _Gate(self.project_dir, time.monotonic() + 5.0):
                if self.is_held():
                    fast_os.rename(self.lock_dir, marker)
        except (OSError, IntentLoopError):
            pass
        finally:
            self._close_owner()
        remove_lock_tree(marker)

    def clean_residue(self):
        """Remove lock temporaries and markers left by killed processes (call while holding)."""
        directory = self.project_dir
        base = fast_os.path.basename(self.lock_dir) + "."
        for name in fast_os.listdir(directory):
            if not name.startswith(base) or not name.endswith(_RESIDUE_SUFFIXES):
                continue
            path = fast_os.path.join(directory, name)
            if name.endswith(".tmp") and _is_being_prepared(path):
                continue  # another waiter's prepared directory
            remove_lock_tree(path)


def holds_any():
    """True while this process holds a project lock (a committed transaction handed over)."""
    return bool(_HELD)


def adopt_held():
    """In a forked child: adopt every lock the parent held (ProjectLock.adopt); how many were."""
    return sum(1 for lock in list(_HELD) if lock.adopt())


class _Gate:
    """A short kernel lock on the project directory that serializes lock-directory transitions."""

    def __init__(self, project_dir, deadline):
        self.project_dir = project_dir
        self.deadline = deadline
        self.fd = None

    def __enter__(self):
        self.fd = fast_os.open(self.project_dir, fast_os.O_RDONLY | getattr(fast_os, "O_DIRECTORY", 0))
        if not platform.wait_for_lock(self.fd, until=self.deadline, pause=0.0005):
            fast_os.close(self.fd)
            raise IntentLoopError(ErrorCode.LOCK_TIMEOUT, "the project lock gate stayed busy until the deadline; retry")
        return self

    def __exit__(self, *exc_info):
        fast_os.close(self.fd)  # closing drops the flock


def _owner_record(token):
    """owner.json's bytes for this process: its pid and start time (a reused pid is told apart)."""
    pid = fast_os.getpid()
    return dumps({"pid": pid, "token": token, "process_start": platform.process_start_time(pid),
                  "acquired_at": time.time()}).encode()


def _is_pid_gone(record):
    pid = record.get("pid")
    if not isinstance(pid, int):
        return False
    if not platform.is_process_alive(pid):
        return True
    recorded = record.get("process_start")
    current = platform.process_start_time(pid)
    return recorded is not None and current is not None and recorded != current


def _is_being_prepared(path):
    owner = fast_os.path.join(path, OWNER_FILE)
    try:
        fd = fast_os.open(owner, fast_os.O_RDONLY | fast_os.O_NOFOLLOW)
    except OSError:
        try:
            return time.time() - fast_os.lstat(path).st_mtime <= OWNERLESS_GRACE
        except OSError:
            return False
    try:
        return platform.is_kernel_lock_held(fd)
    finally:
        fast_os.close(fd)


def remove_lock_tree(path, *, attempts=3, depth=0):
    """Remove a lock directory (flat: it only ever holds owner.json) with bounded retries."""
    for _ in range(attempts):
        try:
            if fast_os.path.islink(path):
                fast_os.unlink(path)
                return
            for name in fast_os.listdir(path):
                entry = fast_os.path.join(path, name)
                if fast_os.path.isdir(entry) and not fast_os.path.islink(entry):
                    if depth >= 4:  # a planted tree this deep is left for a person; the rmdir below fails
                        continue
                    remove_lock_tree(entry, attempts=1, depth=depth + 1)  # a directory planted as owner.json
                else:
                    fast_os.unlink(entry)
            fast_os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.001)

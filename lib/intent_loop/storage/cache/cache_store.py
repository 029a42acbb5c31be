"""The sharded cache (format 3): a small root file, the table pages and shards it vouches for, and
ledger-line pointers.

Layout, all flat in `cache/` so every deletion that clears `cache/` clears it whole:

- `v3.root`: `<sha256 of the body>\\n<canonical JSON>`: the checkpoint, the reducer's small root
  state, a generation id, the page table `{page: count * 2 + slot}` and `recent`, the entries
  `{shard name: count * 2 + slot, or null for a shard gone}` written since the pages were.
- `v3.p-<kind><c>.<slot>`: a table page, same framing, holding `{"gen", "name", "count", "data"}`
  with `data` = `{shard name: count * 2 + slot}` for the shards of one kind whose name's first
  character after the dash is `c` (`t-` tasks, `h-` their hidden claims, `s-` session buckets,
  `g-` signal buckets: at most 64 pages). A shard's entry is `recent`'s if it has one, else its page's.

Why two levels: one flat table in the root (format 2) carried an entry per task for ever (a year
of history: 300 tasks, 22 KiB rewritten by every append). Why `recent`: writing the pages of every
changed shard on every mutation would add files to each append, and on ext4 every file written
costs 8-20 KiB of metadata however small it is. So a mutation writes the shards it changed and
the root, whose `recent` holds their entries; once `recent` passes RECENT_LIMIT entries the save
folds it into the pages it touches. The root stays a few KiB at any history.
- `v3.<name>.<slot>`: one shard, same framing. A page or shard is believed only when its
  generation, name and count are the ones its parent names (the root for a page, its page for a
  shard), so one that is stale (a best-effort write failed), ahead of its parent (killed between
  the two) or edited by hand is detected, never used. Each has two slots and a write goes to
  the one its current parent does not name: a lock-free reader still holding the previous root
  finds its version until it is written twice more.

Nothing here knows the reducer's shapes: the reducer splits its state into root and shards and
joins them back (`intent/state_cache.py` for the project reducer), using `LazyMap` for mappings
that load on first access and `Store.events` to read text back from the verified ledger lines the
cache points at (each line's own hash re-checked), so what the cache says is only positions and
lifecycle, never the words.
"""
import stat

from intent_loop.base import fast_os
from intent_loop.base.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.errors import IntentLoopError
from intent_loop.storage import paths as paths_mod
from intent_loop.storage.line_hash import self_verified_hash

ROOT_FILE = "v3.root"
SHARD_PREFIX = "v3."
RECENT_LIMIT = 32  # entries `recent` holds before a save folds them into the pages
# format 2 (one flat shard table in `v2.root`): removed by the first full save (`v2.seen-*` are
# the hooks' seen records, not the cache's)
OLD_PREFIXES = ("v2.root", "v2.t-", "v2.s-", "v2.g-")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


class Untrusted(Exception):
    """A shard or pointer the root vouches for does not check out: the cache must not be believed."""


# A cache file holds one shard, page or root: far less than this even for a task of 100,000 claims.
# A bigger one (a huge sparse file put there) is damaged: it is never read whole, and gets rebuilt.
FRAMED_CAP = 64 << 20


def read_framed(path):
    """The JSON body of a `<sha256>\\n<body>` file, or None when missing, unsafe, too big or damaged
    (read without following a link, never blocking on a FIFO, at most FRAMED_CAP bytes)."""
    try:
        data = paths_mod.read_capped(path, FRAMED_CAP)
    except (OSError, IntentLoopError):
        return None
    if data is None:
        return None
    digest, body = data[:64], data[65:]
    if data[64:65] != b"\n" or sha256_hex(body).encode() != digest:
        return None
    try:
        doc = loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def write_framed(path, doc):
    """Atomic, not durable: the cache is an accelerator. Raises IntentLoopError on failure."""
    from intent_loop.storage.atomic import replace_atomically

    body = canonical_bytes(doc)
    replace_atomically(path, sha256_hex(body).encode() + b"\n" + body, durable=False)


def shard_path(paths, name, slot):
    return fast_os.path.join(paths.cache_dir, f"{SHARD_PREFIX}{name}.{slot}")


def is_shard_name(name):
    return (isinstance(name, str) and 2 < len(name) <= 80 and name[1] == "-" and _NAME_CHARS.issuperset(name)
            and not name.startswith("p-"))


def page_of(name):
    """The table page that names shard `name`: its kind and the first character after the dash."""
    return "p-" + name[0] + name[2]


def _is_entry(entry):
    return type(entry) is int and entry >= 0


class Store:
    """What one loaded root vouches for: its pages, their shards and the ledger lines below its checkpoint."""

    def __init__(self, paths, *, gen, pages, recent, limit, missing_lf=False, identity=None, tables=None):
        self.paths = paths
        self.gen = gen
        self.pages = pages  # page name -> count * 2 + slot
        self.recent = recent  # shard name -> count * 2 + slot, or None: newer than its page
        self.limit = limit  # pointers must lie inside the verified prefix the root checkpoints
        self.missing_lf = missing_lf  # its last line ends the file without an LF
        self.identity = identity  # the ledger identity the root recorded with its checkpoint
        self._tables = {} if tables is None else tables  # page -> {shard name: entry}, as read
        self._events = {}  # offset -> event, so claims sharing a line read it once

    def _framed(self, name, entry):
        """The data of the page or shard `name` its parent names with `entry`; Untrusted otherwise."""
        if not _is_entry(entry):
            raise Untrusted(name)
        count, slot = divmod(entry, 2)
        doc = read_framed(shard_path(self.paths, name, slot))
        if doc is None or doc.get("gen") != self.gen or doc.get("name") != name or doc.get("count") != count:
            raise Untrusted(name)
        return doc.get("data")

    def table(self, page):
        """{shard name: entry} of one page ({} when the root names no such page); Untrusted on a bad one."""
        table = self._tables.get(page)
        if table is None:
            entry = self.pages.get(page)
            table = {} if entry is None else self._framed(page, entry)
            if not (isinstance(table, dict) and all(is_shard_name(k) and page_of(k) == page and _is_entry(v)
                                                    for k, v in table.items())):
                raise Untrusted(page)
            self._tables[page] = table
        return table

    def checked_tables(self):
        """{page: table} of the pages read and checked so far (a save carries them forward)."""
        return self._tables

    def names(self, kind):
        """Every shard name of one kind ("t", "s", "g") the cache holds (reads that kind's pages)."""
        out = set()
        for page in sorted(self.pages):
            if page[2:3] == kind:
                out.update(self.table(page))
        for name, entry in self.recent.items():
            if not (is_shard_name(name) and (entry is None or _is_entry(entry))):
                raise Untrusted("recent")
            if name[0] == kind:
                out.add(name) if entry is not None else out.discard(name)
        return sorted(out)

    def entry(self, name):
        if not is_shard_name(name):
            return None
        if name in self.recent:
            entry = self.recent[name]
            if not (entry is None or _is_entry(entry)):
                raise Untrusted("recent")
            return entry
        return self.table(page_of(name)).get(name)

    def read(self, name):
        """The shard's data, None when no page names such a shard; Untrusted when it fails a check."""
        entry = self.entry(name)
        return None if entry is None else self._framed(name, entry)

    def events(self, refs):
        """{offset: event} for [(offset, length, event_id), ...]; Untrusted unless every line verifies.

        Each line must lie whole inside the verified prefix (LF before and after, or the end of
        the prefix when its last line lacks the LF), hash to its own
        event_hash, belong to this project and carry the expected event id.
        """
        wanted = {}
        for ref in refs:  # many claims point into one line (an import's 2,000): read and verify it once
            if ref[0] not in self._events and wanted.setdefault(ref[0], ref) != ref:
                raise Untrusted("pointer")  # one offset, two lengths or event ids: a forged pointer
        if wanted:
            self._read_lines(list(wanted.values()))
        return self._events

    def _read_lines(self, refs):
        try:  # never blocking: a FIFO swapped in for the ledger must not hang a reader (issue 23)
            fd = fast_os.open(self.paths.ledger, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
        except OSError:
            raise Untrusted("ledger") from None
        try:
            if not stat.S_ISREG(fast_os.fstat(fd).st_mode):
                raise Untrusted("ledger")
            for offset, length, event_id in refs:
                if not (type(offset) is int and type(length) is int and offset >= 0 and length > 0):
                    raise Untrusted("pointer")
                end = offset + length
                last = self.missing_lf and end == self.limit  # the final line, without its LF
                if not (end < self.limit or last):
                    raise Untrusted("pointer")
                start = offset - 1 if offset else 0
                data = fast_os.pread(fd, end + (0 if last else 1) - start, start)
                line = data[offset - start : end - start]
                if ((not last and data[-1:] != b"\n") or (offset and data[:1] != b"\n") or len(line) != length
                        or self_verified_hash(line) is None):
                    raise Untrusted("line")
                try:
                    event = loads(line)
                except (ValueError, UnicodeDecodeError, RecursionError):
                    raise Untrusted("line") from None
                if (not isinstance(event, dict) or event.get("event_id") != event_id
                        or event.get("project_id") != self.paths.project_id
                        or not isinstance(event.get("payload"), dict)):
                    raise Untrusted("line")
                self._events[offset] = event
        except OSError:
            raise Untrusted("ledger") from None
        finally:
            fast_os.close(fd)

"""The "chain broken at line N" marker `cache/chain-broken.json` that the daily scrub leaves.

The hook read path and a mutation verify only what follows the checkpoint, so damage in the
middle of the ledger (a hand edit, bit rot) would go on being projected from the cache. When the
scrub (`cache_upkeep`) finds it, it removes the checkpoint and writes this marker instead: while
it exists every read and mutation fails with CHAIN_BROKEN_FOUND, so hooks inject nothing and the
Guard file is not published again, until `intent-loop recover` (or a full verification that
passes) removes it. It holds a line number and an error code, never content. Deleting `cache/`
removes it too; the next rebuild verifies in full and finds the damage again.
"""
from intent_loop.base import fast_os
from intent_loop.errors import ErrorCode, IntentLoopError

MARKER_FILE = "chain-broken.json"


def marker_path(paths):
    return fast_os.path.join(paths.cache_dir, MARKER_FILE)


def raise_if_marked(paths):
    """CHAIN_BROKEN_FOUND when the marker exists (one stat on the common path)."""
    path = marker_path(paths)
    try:
        fast_os.lstat(path)
    except FileNotFoundError:
        return
    except OSError:
        return
    line, code = _read(path)
    raise IntentLoopError(ErrorCode.CHAIN_BROKEN_FOUND,
                          f"the daily check found the ledger's chain broken at line {line} ({code}); nothing is "
                          "injected or published until `intent-loop recover` repairs it", line=line)


def _read(path):
    from intent_loop.base.canonical import loads

    try:
        with open(path, "rb") as fh:
            doc = loads(fh.read(4096))
        line, code = doc.get("line"), doc.get("code")
        return (line if type(line) is int else None), (code if isinstance(code, str) else "unknown")
    except (OSError, ValueError, AttributeError):
        return None, "unknown"


def write(paths, error):
    """Replace the checkpoint with the marker (the scrub found `error`)."""
    from intent_loop.base.canonical import canonical_bytes
    from intent_loop.storage.atomic import replace_atomically
    from intent_loop.storage.cache.checkpoint import STATE_FILE

    record = {"kind": "chain_broken", "line": error.line, "code": error.code}
    replace_atomically(marker_path(paths), canonical_bytes(record) + b"\n", durable=False)
    try:
        fast_os.unlink(fast_os.path.join(paths.cache_dir, STATE_FILE))
    except OSError:
        pass


def clear(paths):
    try:
        fast_os.unlink(marker_path(paths))
    except OSError:
        pass

"""Recovery of a damaged ledger: its verified prefix, and cutting the ledger back to it under the lock
(the damaged suffix goes to quarantine with a manifest; nothing verified is ever lost)."""
import time

from intent_loop.storage import fast_os, quarantine
from intent_loop.storage import lock as lock_mod
from intent_loop.storage.canonical import canonical_bytes, sha256_hex
from intent_loop.storage.checkpoint import ROOT_FILE
from intent_loop.storage.event_list import verified_prefix as ledger_verified_prefix
from intent_loop.storage.paths import check_regular_file, ensure_project_layout


def verified_prefix(data, project_id, *, on_progress=None):
    """(prefix_bytes, line_count, first_error or None) of a possibly damaged ledger's bytes."""
    verified, error = ledger_verified_prefix(data, project_id, on_progress=on_progress)
    return data[: verified.size], verified.count, error


def read_bytes(path):
    if check_regular_file(path) is None:
        return b""
    with open(path, "rb") as fh:
        return fh.read()


def cut_to_verified_prefix(paths, *, deadline, on_progress=None):
    """Under the project lock: quarantine the suffix with a manifest, then keep exactly the prefix."""
    from intent_loop.storage.atomic import replace_atomically  # writers only

    ensure_project_layout(paths)
    with lock_mod.ProjectLock(paths.dir, deadline=deadline) as held:
        held.clean_residue()
        data = read_bytes(paths.ledger)  # re-read under the lock
        prefix, count, error = verified_prefix(data, paths.project_id, on_progress=on_progress)
        if error is None:
            return {"applied": False, "verified_lines": count}
        suffix = data[len(prefix):]
        suffix_name, manifest_name = quarantine.recovered_suffix_names(time.time())
        suffix_path = fast_os.path.join(paths.quarantine_dir, suffix_name)
        manifest = {"kind": "recovered_suffix", "byte_length": len(suffix), "sha256": sha256_hex(suffix),
                    "offset": len(prefix), "first_bad_line": error.line, "error_code": error.code,
                    "reason": error.message, "verified_lines": count}
        replace_atomically(suffix_path, suffix, mode=0o600)
        replace_atomically(fast_os.path.join(paths.quarantine_dir, manifest_name), canonical_bytes(manifest) + b"\n",
                           mode=0o600)
        replace_atomically(paths.ledger, prefix)
        try:
            fast_os.unlink(fast_os.path.join(paths.cache_dir, ROOT_FILE))  # its shards then vouch for nothing
        except FileNotFoundError:
            pass
    return {"applied": True, "verified_lines": count, "verified_bytes": len(prefix),
            "quarantine": suffix_path, "manifest": manifest}

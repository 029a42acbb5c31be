"""Guard 0.2.2's own settings and records, as Guard computes and writes them (read only: Guard owns
its state, seed 002).

Settings, from a hook's environment exactly as config.mjs computes them (Codex gives every plugin
hook the same environment, so our hook sees what Guard's hook sees):
- EFG_MODE: lower-cased, no trimming; unset or empty means "shadow", and anything but off, shadow
  or balanced is "shadow" too (shadow only reminds; balanced denies and asks; off does nothing).
- EFG_MAX_STOP_CONTINUATIONS: JavaScript's parseInt (leading space, a sign, the leading digits),
  2 when it reads no number, then held to 0..2.
- EFG_PERSIST: records are kept unless it is "0", "false" or "no" (lower-cased, not trimmed).
- EFG_STATE_DIR: where Guard keeps its per-session records, resolved against the hook's cwd; else
  <CODEX_HOME or ~/.codex>/plugin-data/execution-fidelity-guard/v1.
(EFG_CONTRACT_PATH is guard/location.py's.)

Records (store.mjs): one event record per hook Guard runs, at
`<state root>/sessions/session-<sha256 of the session id>/events/<ISO time with : and . as ->-<id>.json`
(`session:<64 hex>` ids keep their hex), each naming its mode (`facts.guard_mode`) and the
contract it loaded (`contract_ref`, `contract_version`, `facts.contract_status`). A record for
this session written since the Codex process that runs it started is the proof that Guard's hooks
run (an older one is an earlier run of a resumed session). The cost: one listing, one small read.
"""
from intent_loop.base import fast_os
from intent_loop.base.canonical import loads, sha256_hex
from intent_loop.errors import IntentLoopError

MODES = ("off", "shadow", "balanced")
DEFAULT_MODE = "shadow"
DEFAULT_STOPS = 2
MAX_STOPS = 2
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009" \
            "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"


def mode(env):
    requested = (env.get("EFG_MODE") or DEFAULT_MODE).lower()
    return requested if requested in MODES else DEFAULT_MODE


def max_stop_continuations(env):
    """How many extra turns Guard's Stop may ask for after an unverified completion claim."""
    parsed = js_parse_int(env.get("EFG_MAX_STOP_CONTINUATIONS") or "")
    return DEFAULT_STOPS if parsed is None else min(MAX_STOPS, max(0, parsed))


def js_parse_int(text):
    """parseInt(text, 10): None where JavaScript gives NaN."""
    text = text.lstrip(_JS_SPACE)
    sign = -1 if text[:1] == "-" else 1
    if text[:1] in "+-":
        text = text[1:]
    digits = ""
    for char in text:
        if char not in "0123456789":
            break
        digits += char
    return sign * int(digits) if digits else None


def persists(env):
    value = env.get("EFG_PERSIST")
    return (value if value is not None else "true").lower() not in ("0", "false", "no")


def codex_home(env):
    """CODEX_HOME as Node's path.resolve reads it (against this process's cwd), else ~/.codex;
    None when neither names an absolute place."""
    home = env.get("CODEX_HOME")
    if home:
        return _resolve(fast_os.getcwd(), home)
    user_home = env.get("HOME")
    return fast_os.path.join(user_home, ".codex") if user_home and fast_os.path.isabs(user_home) else None


def state_root(env, cwd):
    """Where Guard keeps its records for a hook run in `cwd`, or None when unknown."""
    configured = env.get("EFG_STATE_DIR")
    if configured:
        return _resolve(cwd, configured)
    home = codex_home(env)
    return fast_os.path.join(home, "plugin-data", "execution-fidelity-guard", "v1") if home else None


def state_dir_is_relative(env):
    """EFG_STATE_DIR relative: it resolves into the workspace, which the agent writes."""
    configured = env.get("EFG_STATE_DIR")
    return bool(configured) and not fast_os.path.isabs(configured)


def _resolve(base, value):
    return fast_os.path.normpath(fast_os.path.join(base, value))


_RECORD_CAP = 64 << 10  # Guard's event records are a few hundred bytes
_STAMP_LENGTH = len("2026-12-05T13-48-21-123Z")


def session_directory(state_root, session_id):
    """Guard's folder for one Codex session id (store.mjs sessionDirectoryName)."""
    value = str(session_id)
    hexpart = value[len("session:"):] if value.startswith("session:") else ""
    if not (len(hexpart) == 64 and all(c in "0123456789abcdef" for c in hexpart)):
        hexpart = sha256_hex(value.encode("utf-8", "surrogatepass"))
    return fast_os.path.join(state_root, "sessions", "session-" + hexpart)


def record_stamp(epoch_seconds):
    """An instant spelled as Guard names its record files, so names compare as strings."""
    import time

    whole = int(epoch_seconds // 1)
    millis = int((epoch_seconds - whole) * 1000)
    t = time.gmtime(whole)
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}-{t.tm_min:02d}-"
            f"{t.tm_sec:02d}-{millis:03d}Z")


def newest_run(state_root, session_id, *, since=None):
    """{"at": stamp, "mode", "contract_ref", "contract_version", "contract_status"} of the newest
    event record Guard wrote for this session (at or after `since`, epoch seconds, when given),
    or None when there is none."""
    events = fast_os.path.join(session_directory(state_root, session_id), "events")
    try:
        names = [n for n in fast_os.listdir(events) if n.endswith(".json") and len(n) > _STAMP_LENGTH]
    except OSError:
        return None
    if not names:
        return None
    newest = max(names)
    stamp = newest[:_STAMP_LENGTH]
    if since is not None and stamp < record_stamp(since):
        return None
    run = {"at": stamp, "mode": None, "contract_ref": None, "contract_version": None, "contract_status": None}
    record = _read_record(fast_os.path.join(events, newest))
    facts = record.get("facts") if isinstance(record.get("facts"), dict) else {}
    if facts.get("guard_mode") in ("off", "shadow", "balanced"):
        run["mode"] = facts["guard_mode"]
    if isinstance(facts.get("contract_status"), str):
        run["contract_status"] = facts["contract_status"][:40]
    if isinstance(record.get("contract_ref"), str):
        run["contract_ref"] = record["contract_ref"][:200]
    if type(record.get("contract_version")) is int:
        run["contract_version"] = record["contract_version"]
    return run


def _read_record(path):
    try:
        fd = fast_os.open(path, fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        data = fast_os.read(fd, _RECORD_CAP)
    except OSError:
        return {}
    finally:
        fast_os.close(fd)
    try:
        record = loads(data)
    except (IntentLoopError, ValueError, UnicodeDecodeError):
        return {}
    return record if isinstance(record, dict) else {}

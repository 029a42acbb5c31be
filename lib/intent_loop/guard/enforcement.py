"""What Guard enforces in this session, known from the best source first (issue 34), and the
record of it the hooks leave for the surfaces that cannot see Codex's environment.

The states, each with the words of ops/enforcement_words.py:
- enforced: EFG_MODE=balanced and Guard's hooks run: it denies and asks on structured rules;
- reminders: shadow mode (Guard's default): it only reminds;
- off: EFG_MODE=off;
- not_running: Guard is installed but Codex does not run its hooks (the cause says why);
- not_installed;
- unconfirmed: nothing can prove Guard ran (no records kept, records the agent can write, or
  not seen yet in this session);
- other_host: the session runs in Claude Code, where Guard 0.2.2 does not run at all (its hooks
  are Codex's); the Guard file is still published, for Codex sessions in the same workspace.

The sources, cheapest and surest first: Guard's settings from this hook's environment, which
Codex gives every plugin hook alike (efg_config); Guard's own event record for this session
(efg_runs: one listing and one small read); Codex's files for why not (efg_install, parsed only
when config.toml changed). The CLI runs in the user's terminal and the MCP server gets only
HOME, LANG, PATH and TMPDIR from Codex, so the hooks write what they saw to the project's cache
(`cache/enforcement.json`), and `status`, `show`, `doctor` and `intent_status` report that
record with its age, never their own environment.
"""
import time

from intent_loop.base import fast_os

STATES = ("enforced", "reminders", "off", "not_running", "not_installed", "unconfirmed", "other_host")
# Why a state holds; ops/enforcement_words.py words each (ENFORCEMENT_CAUSES).
CAUSES = ("untrusted", "not_seen", "plugin_disabled", "no_copy", "hooks_disabled", "hooks_feature_off",
          "plugins_feature_off", "node_missing", "no_records", "records_in_workspace", "not_yet")
GUARD_HOOKS = 11  # Guard 0.2.2's hooks.json: one handler for each of 11 events
MODES = ("off", "shadow", "balanced")  # efg_state.MODES, here so that checking a told verdict loads nothing
RECORD = "enforcement.json"
CLAUDE_CODE_SEEN = "claude_code_seen_at"  # when a Claude Code hook last ran here (no Guard on that host)
_RECORD_CAP = 64 << 10
_REFRESH_SECONDS = 600  # an unchanged observation is written again at most this often (its age)


def observe(env, *, cwd, session_id, paths, confirm, record=True, _proc="/proc"):
    """The verdict for this session: {"state", "mode", "cause", "stops", "confirmed", "ran_at",
    "observed_at"}. `confirm`: Guard's SessionStart has run by now (a prompt), so trusted hooks
    that left no record are not running; at SessionStart itself they may still be starting, and
    the last confirmed observation of the same install stands in, unconfirmed. `record`: leave
    the verdict in the project's record (SessionStart writes nothing)."""
    from intent_loop.base.host_process import on_claude_code
    from intent_loop.guard import efg_state as efg_config

    verdict = {"mode": efg_config.mode(env), "stops": efg_config.max_stop_continuations(env),
               "cause": None, "confirmed": True, "ran_at": None, "observed_at": int(time.time())}
    if on_claude_code(env):  # no Guard on this host: nothing to look for; Codex's observation stays Codex's
        verdict["state"] = "other_host"
        if record:
            _note_claude_code(paths, verdict["observed_at"])
        return verdict
    stored = read_record(paths)
    home = efg_config.codex_home(env)
    install = _install_facts(home, stored) if home else None
    state, cause = _install_state(install, env)
    if state is None:
        state, cause = _run_state(env, cwd, session_id, paths, verdict, confirm, _proc)
        if state == "unconfirmed" and cause == "not_yet":
            state = _predicted(stored, verdict, install, state)
            verdict["confirmed"] = False
    verdict.update(state=state, cause=cause)
    if record or (install is not None and install["parsed"]):  # a parse is cached even by SessionStart
        _write_record(paths, stored, verdict, install, observed=record)
    return verdict


def _install_state(install, env):
    """(state, cause) when Codex's files alone decide, else (None, None): Guard may run."""
    from intent_loop.guard import efg_state as efg_config

    if install is None or not (install["facts"]["plugins"] or install["facts"]["user_hooks"]["handlers"]):
        return "not_installed", None
    facts = install["facts"]
    causes = [_plugin_cause(plugin, facts, install["copies"].get(plugin["id"])) for plugin in facts["plugins"]]
    user = facts["user_hooks"]
    if user["handlers"]:
        causes.append(None if facts["features"]["hooks"] and user["trusted"] >= user["handlers"] else
                      "hooks_feature_off" if not facts["features"]["hooks"] else "untrusted")
    if None not in causes:
        return "not_running", causes[0]
    if not _node_on_path(env):
        return "not_running", "node_missing"
    if efg_config.mode(env) == "off":
        return "off", None
    return None, None


def _plugin_cause(plugin, facts, copies):
    if not facts["features"]["hooks"]:
        return "hooks_feature_off"
    if not facts["features"]["plugins"]:
        return "plugins_feature_off"
    if not plugin["enabled"]:
        return "plugin_disabled"
    if not copies:
        return "no_copy"
    if plugin["disabled_hooks"]:
        return "hooks_disabled"
    if plugin["trusted"] < GUARD_HOOKS:
        return "untrusted"
    return None


def _run_state(env, cwd, session_id, paths, verdict, confirm, proc):
    """(state, cause) from Guard's own record of this session."""
    from intent_loop.guard import efg_state as efg_config

    if not efg_config.persists(env):
        return "unconfirmed", "no_records"
    root = efg_config.state_root(env, cwd)
    if root is None or efg_config.state_dir_is_relative(env) or _agent_writes(root, env, paths):
        return "unconfirmed", "records_in_workspace"
    from intent_loop.base.host_process import codex_ancestor, started_at
    from intent_loop.guard.efg_state import newest_run

    codex = codex_ancestor(_proc=proc)
    since = started_at(codex[0], _proc=proc) if codex else None
    run = newest_run(root, session_id, since=None if since is None else since - 1)
    if run is None:
        return ("not_running", "not_seen") if confirm else ("unconfirmed", "not_yet")
    verdict["ran_at"] = run["at"]
    mode = run["mode"] or verdict["mode"]
    verdict["mode"] = mode
    return {"balanced": "enforced", "shadow": "reminders", "off": "off"}[mode], None


def _predicted(stored, verdict, install, state):
    """The last confirmed observation's state, when it saw this same install in the same mode."""
    last = stored.get("observed") if isinstance(stored.get("observed"), dict) else {}
    if last.get("confirmed") is True and last.get("state") in ("enforced", "reminders") \
            and last.get("mode") == verdict["mode"] and install is not None \
            and last.get("install_key") == install.get("key"):
        return last["state"]
    return state


def _agent_writes(root, env, paths):
    """Whether Guard's records lie where the agent may write: the workspace or a temp directory."""
    real = fast_os.path.realpath(root)
    places = [paths.root, "/tmp", "/var/tmp", env.get("TMPDIR") or "/tmp"]
    for place in places:
        if place and fast_os.path.isabs(place):
            place = fast_os.path.realpath(place)
            if real == place or real.startswith(place.rstrip("/") + "/"):
                return True
    return False


def _node_on_path(env):
    """Guard's hooks run `node` from Codex's PATH."""
    for folder in (env.get("PATH") or "").split(":"):
        if folder and fast_os.access(fast_os.path.join(folder, "node"), fast_os.X_OK):
            return True
    return False


def _install_facts(home, stored):
    """{"key", "facts", "copies"}: Codex's files about Guard, parsed again only when config.toml or
    the user-level hooks.json changed since the cached facts."""
    key = [_identity(fast_os.path.join(home, "config.toml")), _identity(fast_os.path.join(home, "hooks.json")), home]
    cached = stored.get("install") if isinstance(stored.get("install"), dict) else {}
    facts = cached.get("facts") if cached.get("key") == key else None
    parsed = False
    if not _facts_shape(facts):
        if not _names_guard(home):  # the common case, no Guard: no TOML or JSON parser (~13 ms to import)
            facts = {"plugins": [], "features": {"hooks": True, "plugins": True},
                     "user_hooks": {"handlers": 0, "trusted": 0}, "config": "ok"}
        else:  # parsed again only when a file changed
            from intent_loop.guard.efg_install import read_facts

            facts, parsed = read_facts(home), True
    copies = {p["id"]: _copy_versions(home, p["marketplace"]) for p in facts["plugins"]}
    return {"key": key, "facts": facts, "copies": copies, "parsed": parsed}


_PLUGIN_BYTES = b"execution-fidelity-guard"
_NAMES_CAP = 4 << 20


def _names_guard(home):
    """Whether config.toml or the user-level hooks.json mentions Guard at all (bytes, no parser)."""
    for name in ("config.toml", "hooks.json"):
        try:
            fd = fast_os.open(fast_os.path.join(home, name), fast_os.O_RDONLY | fast_os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if _PLUGIN_BYTES in fast_os.read(fd, _NAMES_CAP):
                return True
        except OSError:
            return True  # unreadable now: let the parser say what it can
        finally:
            fast_os.close(fd)
    return False


def _copy_versions(home, marketplace):
    """The versions of Guard Codex copied to its plugin cache for one marketplace ([] for none)."""
    folder = fast_os.path.join(home, "plugins", "cache", marketplace, "execution-fidelity-guard")
    try:
        return sorted(name for name in fast_os.listdir(folder) if not name.startswith("."))
    except OSError:
        return []


def _facts_shape(facts):
    """A cached record is a deletable file: only a well-formed one is believed."""
    try:
        return all(isinstance(p["id"], str) and isinstance(p["marketplace"], str) and type(p["trusted"]) is int
                   and type(p["disabled_hooks"]) is int and isinstance(p["enabled"], bool) for p in facts["plugins"]) \
            and type(facts["user_hooks"]["handlers"]) is int and type(facts["user_hooks"]["trusted"]) is int \
            and all(isinstance(facts["features"][k], bool) for k in ("hooks", "plugins"))
    except (TypeError, KeyError):
        return False


def _identity(path):
    try:
        st = fast_os.stat(path)
    except OSError:
        return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def is_told_verdict(told):
    """A verdict as a seen record keeps it, checked field by field (the record is a deletable cache)."""
    return isinstance(told, dict) and told.get("state") in STATES and told.get("mode") in MODES \
        and (told.get("cause") is None or told.get("cause") in CAUSES) \
        and type(told.get("stops")) is int and isinstance(told.get("confirmed"), bool) \
        and isinstance(told.get("user"), bool)


# -- the record the hooks leave --------------------------------------------------------------
def read_record(paths):
    """The project's enforcement record ({} when missing or not ours to believe)."""
    from intent_loop.base.canonical import loads

    try:
        fd = fast_os.open(fast_os.path.join(paths.cache_dir, RECORD),
                          fast_os.O_RDONLY | fast_os.O_NOFOLLOW | fast_os.O_NONBLOCK)
    except OSError:
        return {}
    try:
        data = fast_os.read(fd, _RECORD_CAP + 1)
    except OSError:
        return {}
    finally:
        fast_os.close(fd)
    try:
        record = loads(data) if len(data) <= _RECORD_CAP else {}
    except (ValueError, UnicodeDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def last_observation(paths, record=None):
    """What the hooks last saw, checked: {"state", "mode", "cause", "stops", "confirmed",
    "observed_at"}, or None. `record`: the project's record, when the caller has read it."""
    seen = (read_record(paths) if record is None else record).get("observed")
    if not isinstance(seen, dict) or seen.get("state") not in STATES or type(seen.get("observed_at")) is not int \
            or not (seen.get("cause") is None or seen.get("cause") in CAUSES) or seen.get("mode") not in MODES \
            or type(seen.get("stops")) is not int:
        return None
    return seen


def reported(paths, *, now=None):
    """What the hooks last saw, for a surface that cannot see Codex's environment: the verdict with
    its `age` in whole seconds (state None when only Claude Code's hooks ran), and `claude_code_age`
    when a Claude Code hook ran here; None when no hook has looked yet."""
    now = time.time() if now is None else now
    record = read_record(paths)
    seen = last_observation(paths, record)
    claude = record.get(CLAUDE_CODE_SEEN)
    found = None
    if seen is not None:
        keep = ("state", "mode", "cause", "stops", "confirmed", "ran_at", "observed_at")
        found = dict({key: seen.get(key) for key in keep}, age=int(now - seen["observed_at"]))
    if type(claude) is int:  # a Claude Code session ran here too: what holds there is said beside it
        found = dict(found or {"state": None}, claude_code_age=int(now - claude))
    return found


def _note_claude_code(paths, now):
    """Leave in the record when a Claude Code hook last ran here (at most every _REFRESH_SECONDS), so
    that a terminal's `status` says what holds in those sessions too, beside Codex's observation."""
    stored = read_record(paths)
    seen = stored.get(CLAUDE_CODE_SEEN)
    if type(seen) is int and 0 <= now - seen < _REFRESH_SECONDS:
        return
    _replace_record(paths, dict(stored, **{CLAUDE_CODE_SEEN: now}))


def _write_record(paths, stored, verdict, install, *, observed=True):
    """Leave the verdict and the install facts in the project's record. `observed=False`
    (SessionStart, which may have only a prediction) keeps the stored observation and writes only
    the install facts it had to parse, so the next hook need not parse them again."""
    before = stored.get("observed") if isinstance(stored.get("observed"), dict) else None
    now = dict(verdict, install_key=install["key"] if install else None) if observed else before
    if observed and before is not None:
        same = all(before.get(k) == now.get(k) for k in ("state", "mode", "cause", "stops", "confirmed",
                                                         "install_key"))
        cached_install = stored.get("install") if isinstance(stored.get("install"), dict) else {}
        fresh_install = install is None or cached_install.get("key") == install["key"]
        age = now["observed_at"] - before["observed_at"] if type(before.get("observed_at")) is int else None
        if same and fresh_install and age is not None and 0 <= age < _REFRESH_SECONDS:
            return
    record = {} if now is None else {"observed": now}
    if install is not None:
        record["install"] = {"key": install["key"], "facts": install["facts"]}
    if type(stored.get(CLAUDE_CODE_SEEN)) is int:
        record[CLAUDE_CODE_SEEN] = stored[CLAUDE_CODE_SEEN]
    _replace_record(paths, record)


def _replace_record(paths, record):
    try:
        from intent_loop.storage.paths import check_real_directory

        if not check_real_directory(paths.cache_dir):
            return
        from intent_loop.base.canonical import canonical_bytes
        from intent_loop.storage.atomic import replace_atomically

        replace_atomically(fast_os.path.join(paths.cache_dir, RECORD), canonical_bytes(record), durable=False)
    except Exception:  # a cache: the answer never waits on it  # noqa: BLE001
        return

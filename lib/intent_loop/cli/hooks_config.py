"""The user's <codex-home>/hooks.json: read and check it, merge our hook handlers in or take them
out (every foreign hook and key kept), render it, and write it with a backup. install owns when."""
import json
import os
import shlex
import time

from intent_loop.base.timestamps import format_compact_utc
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.launch.binaries import HOOK_PREFIX, HOOKS, handler_group

HOOKS_FILE = "hooks.json"
TOP_LEVEL_KEYS = ("description", "hooks")


def codex_home_for(option, env):
    if option:
        return os.path.abspath(os.path.expanduser(option))
    if env.get("CODEX_HOME"):
        return os.path.abspath(env["CODEX_HOME"])
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".codex")


def handler_command(binary, python):
    return f"INTENT_LOOP_PYTHON={shlex.quote(python)} {shlex.quote(binary)}"


def desired_groups(dist_dir, python):
    """event -> the matcher group we install."""
    return {hook.event: handler_group(hook, handler_command(os.path.join(dist_dir, hook.name), python))
            for hook in HOOKS}


def is_ours(handler):
    """A handler whose command runs a binary named intent-loop-* (after any VAR=value prefixes)."""
    program = handler_program(handler)
    return program is not None and os.path.basename(program).startswith(HOOK_PREFIX)


def handler_program(handler):
    """The program a handler's command runs (after any VAR=value prefixes, env, exec), or None."""
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return None
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return None
    for word in words:
        if "=" in word.split("/", 1)[0] and not word.startswith("/"):
            continue  # NAME=value assignment
        if word in ("env", "exec"):
            continue
        return word
    return None


CONFIG_READ_CAP = 4 << 20  # Codex's hooks.json is a few KiB; more is not a hooks file to merge into


def _invalid(path, why):
    return IntentLoopError(ErrorCode.HOOKS_CONFIG_INVALID,
                           f"{path} {why}; fix or move it by hand (intent-loop never overwrites it)",
                           details={"path": path})


def load_config(path):
    """(config dict or None when missing, raw bytes or None). Raises HOOKS_CONFIG_INVALID."""
    from intent_loop.storage.paths import read_others_config

    raw = read_others_config(path, CONFIG_READ_CAP, _invalid)  # a link is read through; never a FIFO or /dev/zero
    if raw is None:
        return None, None
    try:
        config = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise _invalid(path, f"is not valid JSON ({exc})") from exc
    except RecursionError:
        raise _invalid(path, "is nested too deeply to be a hooks file") from None
    check_shape(config, path)
    return config, raw


def check_shape(config, path):
    if not isinstance(config, dict):
        raise _invalid(path, "is not a JSON object")
    unknown = sorted(k for k in config if k not in TOP_LEVEL_KEYS)
    if unknown:
        raise _invalid(path, f"has top-level keys Codex does not accept ({', '.join(unknown)}), "
                             "so Codex ignores the whole file")
    if "description" in config and not isinstance(config["description"], str):
        raise _invalid(path, "has a non-string \"description\"")
    hooks = config.get("hooks", {})
    if not isinstance(hooks, dict):
        raise _invalid(path, "has a \"hooks\" that is not an object")
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            raise _invalid(path, f"has hooks.{event} that is not a list")
        for i, group in enumerate(groups):
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                raise _invalid(path, f"has hooks.{event}[{i}] without a \"hooks\" list")
            if "matcher" in group and not isinstance(group["matcher"], str):
                raise _invalid(path, f"has hooks.{event}[{i}].matcher that is not a string")
            for j, handler in enumerate(group["hooks"]):
                if not isinstance(handler, dict):
                    raise _invalid(path, f"has hooks.{event}[{i}].hooks[{j}] that is not an object")


def without_ours(config):
    """A copy of config with every intent-loop handler removed (emptied groups/events dropped)."""
    out = {k: v for k, v in config.items() if k != "hooks"}
    hooks = {}
    for event, groups in config.get("hooks", {}).items():
        kept_groups = []
        for group in groups:
            handlers = [h for h in group["hooks"] if not is_ours(h)]
            if handlers or len(handlers) == len(group["hooks"]):
                kept_groups.append(dict(group, hooks=handlers))
        if kept_groups or not groups:
            hooks[event] = kept_groups
    if "hooks" in config or hooks:
        out["hooks"] = hooks
    return out


def our_entries(config):
    """Sorted (event, matcher, canonical handler) triples of our handlers: what idempotence compares."""
    found = []
    for event, groups in config.get("hooks", {}).items():
        for group in groups:
            for handler in group["hooks"]:
                if is_ours(handler):
                    found.append((event, group.get("matcher"), json.dumps(handler, sort_keys=True)))
    return sorted(found, key=lambda t: (t[0], t[1] or "", t[2]))


def merged(config, groups):
    out = without_ours(config or {})
    hooks = out.setdefault("hooks", {})
    for event, group in groups.items():
        hooks.setdefault(event, []).append(group)
    return out


def render(config):
    return (json.dumps(config, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def unified_diff(path, old_bytes, new_bytes):
    import difflib

    old = (old_bytes or b"").decode("utf-8", "replace").splitlines(keepends=True)
    new = new_bytes.decode("utf-8").splitlines(keepends=True)
    return "".join(difflib.unified_diff(old, new, fromfile=f"{path} (now)" if old_bytes is not None else "/dev/null",
                                        tofile=f"{path} (after --apply)"))


def write_config(path, old_raw, new_bytes):
    """Back up the old file (if any), then replace atomically, keeping its permission bits.

    A symlinked file (a dotfile manager's) is written through: its target is replaced atomically
    in the target's own directory, and the link stays a link."""
    from intent_loop.storage.atomic import replace_atomically

    if os.path.islink(path):
        path = os.path.realpath(path)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    backup = None
    mode = 0o600
    if old_raw is not None:
        try:
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            pass
        stamp = format_compact_utc(time.time())
        backup = f"{path}.bak-{stamp}"
        n = 1
        while os.path.lexists(backup):
            backup = f"{path}.bak-{stamp}-{n}"
            n += 1
        replace_atomically(backup, old_raw, mode=mode)
    replace_atomically(path, new_bytes, mode=mode)
    return backup


# -- commands ------------------------------------------------------------------------------

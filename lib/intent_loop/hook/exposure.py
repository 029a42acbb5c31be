"""Where this session lies outside the threat model (docs/security.md): the agent may write what
intent-loop keeps out of its reach, so the user is told, and doctor says the same. And where a
second store holds this folder's intent (docs/storage.md, "Two stores"): told at the same moment.

The model assumes Codex's sandbox confines the agent to the workspace and the temp directories.
It does not hold when Codex runs without one (`--dangerously-bypass-approvals-and-sandbox`,
`--yolo`, `--sandbox danger-full-access`, `sandbox_mode = "danger-full-access"`), or when the
workspace contains the home folder or the data root. Codex tells a hook neither: its payload's
`permission_mode` follows the approval policy, not the sandbox (every `codex exec` sends
"bypassPermissions", sandboxed or not: seen with 0.169.0), and its environment names no sandbox.
So the sandbox is read where Codex reads it: the command line of the Codex process that started
this hook (Linux: /proc; elsewhere unknown), else config.toml. A mode switched inside the TUI
(`/approvals`, "Full Access") is seen by neither: docs/security.md says so.
"""
from intent_loop.base import fast_os
from intent_loop.base.data_root import other_stores
from intent_loop.base.host_process import codex_ancestor, read_small

UNSANDBOXED = "unsandboxed"
ON_CLAUDE_CODE = "claude_code"  # no sandbox by default, and prompts the agent can send (docs/security.md)
HOLDS_HOME = "workspace_holds_home"
HOLDS_DATA_ROOT = "workspace_holds_data_root"
FULL_ACCESS = "danger-full-access"
_BYPASS_FLAGS = ("--dangerously-bypass-approvals-and-sandbox", "--yolo")
_SANDBOX_FLAGS = ("-s", "--sandbox")
_CONFIG_CAP = 1 << 20


def session_exposures(env, *, project_root, data_root, _proc="/proc"):
    """The reasons (ON_CLAUDE_CODE, UNSANDBOXED, HOLDS_HOME, HOLDS_DATA_ROOT) this session is outside
    the model. Claude Code 2.1.332 runs the agent's commands without an OS sandbox unless the user
    turned one on (and then only where bubblewrap is installed), and the agent's shell holds the
    messaging socket whose messages reach UserPromptSubmit as if typed: the model never holds there."""
    from intent_loop.base.host_process import on_claude_code

    if on_claude_code(env):
        found = [ON_CLAUDE_CODE]
    else:
        found = [UNSANDBOXED] if sandbox_mode(env, _proc=_proc) == FULL_ACCESS else []
    return found + workspace_exposures(env, project_root=project_root, data_root=data_root)


def workspace_exposures(env, *, project_root, data_root):
    """HOLDS_HOME or HOLDS_DATA_ROOT when the workspace contains that folder (the home folder holds
    the default data root, so one reason is enough)."""
    found = []
    home = env.get("HOME")
    if home and fast_os.path.isabs(home) and _contains(project_root, home):
        found.append(HOLDS_HOME)
    elif data_root and _contains(project_root, data_root):
        found.append(HOLDS_DATA_ROOT)
    return found


def _contains(outer, inner):
    """Whether `inner` is `outer` or lies below it, by real paths."""
    outer, inner = fast_os.path.realpath(outer), fast_os.path.realpath(inner)
    return inner == outer or inner.startswith(outer.rstrip(fast_os.sep) + fast_os.sep)


def sandbox_mode(env, *, _proc="/proc"):
    """The sandbox mode of the Codex that runs this hook: its command line wins over config.toml,
    as in Codex; None when neither names one."""
    return argv_sandbox_mode(codex_argv(_proc=_proc)) or config_sandbox_mode(env)


def codex_argv(*, _proc="/proc"):
    """The argv of the nearest ancestor process that is Codex, or None (no /proc, none found)."""
    found = codex_ancestor(_proc=_proc)
    return found[1] if found else None


def argv_sandbox_mode(args):
    """The mode Codex's own flags give: the bypass flags, `-s/--sandbox MODE`, `--full-auto` and a
    `-c sandbox_mode=...` override; None when they name none."""
    mode = None
    for index, arg in enumerate(args or ()):
        if arg in _BYPASS_FLAGS:
            return FULL_ACCESS
        if arg in _SANDBOX_FLAGS and index + 1 < len(args):
            mode = args[index + 1]
        elif arg.startswith("--sandbox="):
            mode = arg.partition("=")[2]
        elif arg == "--full-auto":
            mode = "workspace-write"
        elif arg.startswith("sandbox_mode=") and index and args[index - 1] in ("-c", "--config"):
            mode = _toml_string(arg.partition("=")[2])
    return mode


def config_sandbox_mode(env):
    """config.toml's `sandbox_mode`, top level or in the profile it selects, by a line scan (no TOML
    parser on a hook path): None when absent or unreadable."""
    home = env.get("CODEX_HOME")
    if not home:
        user_home = env.get("HOME")
        home = user_home and fast_os.path.join(user_home, ".codex")
    if not home or not fast_os.path.isabs(home):
        return None
    data = read_small(fast_os.path.join(home, "config.toml"), _CONFIG_CAP)
    if data is None:
        return None
    table, values = "", {}
    for raw in data.decode("utf-8", "replace").splitlines():
        line = raw.strip()
        if line.startswith("["):
            table = line.strip("[] ")
        elif "=" in line and not line.startswith("#"):
            key, _eq, value = line.partition("=")
            values[(table, key.strip())] = _toml_string(value)
    profile = values.get(("", "profile"))
    return values.get((f"profiles.{profile}", "sandbox_mode")) or values.get(("", "sandbox_mode"))


def _toml_string(value):
    value = value.split("#", 1)[0].strip()
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


def exposure_notice(payload, env, paths, *, stores=None):
    """The line SessionStart shows the user when this session is outside the model, or when another
    store holds this folder's intent, else None. Once a session: a compaction continues a session
    already told. `stores`: the other stores, when the caller has looked for them already."""
    if payload.get("source") == "compact":
        return None
    reasons = session_exposures(env, project_root=paths.root, data_root=paths.data_root)
    if stores is None:
        stores = other_stores(env, paths.data_root, paths.project_id)
    if not reasons and not stores:
        return None
    from intent_loop.ops.enforcement_words import exposure_text, other_stores_text  # only then: they cost a start

    return "\n".join(text for text in (exposure_text(reasons), other_stores_text(stores, paths.data_root)) if text)

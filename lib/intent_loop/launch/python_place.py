"""Whether an interpreter lies where the agent cannot write: find_python.sh's location rules, for the
Python side (install's hooks.json, build.py's baked interpreter, doctor), decided without running it."""
import os
import stat

TEMP_PLACES = ("/tmp", "/var/tmp", "/dev/shm", "/private/tmp", "/private/var/tmp")
# The trusted Python roots (find_python.sh, find_trusted_roots, holds the same list): an interpreter,
# and every link hop to it, must lie under one. The system's and Homebrew's, MacPorts', manylinux's,
# conda images' and Nix's directories...
SYSTEM_ROOTS = ("/usr/bin", "/bin", "/usr/local", "/opt/homebrew", "/opt/local", "/opt/python", "/opt/conda",
                "/Library/Frameworks/Python.framework", "/nix/store")
# ... the Python toolchains' under the home folder (pyenv's is $PYENV_ROOT's, when set) ...
HOME_ROOTS = (".local/share/uv/python", ".asdf/installs/python", ".asdf/shims", ".local/share/mise/installs/python",
              ".local/share/mise/shims", "miniconda3/bin", "miniconda3/envs", "anaconda3/bin", "anaconda3/envs",
              "miniforge3/bin", "miniforge3/envs", "mambaforge/bin", "mambaforge/envs", ".local/bin")
# ... and those the user names, colon-separated absolute paths.
ROOTS_VARIABLE = "INTENT_LOOP_PYTHON_ROOTS"
RECORD = "python-record"  # <data root>/runtime/python-record, written by find_python.sh
MAX_HOPS = 16
CONFIG_CAP = 1 << 20  # Codex's config.toml: a few KiB


def _holds_home(place, home):
    """A place that holds the home folder is outside the threat model (docs/security.md)."""
    return place == "/" or bool(home) and (home == place or home.startswith(place.rstrip("/") + "/"))


def _project_root(directory):
    while directory and directory != "/":
        if os.path.lexists(os.path.join(directory, ".git")):
            return directory
        directory = os.path.dirname(directory)
    return None


def agent_places(*, cwd, env):
    """The places the agent may write: the temp directories, $TMPDIR, the cwd and its project root
    (as named and physical), and Codex's writable_roots."""
    found = list(TEMP_PLACES)
    candidates = [env.get("TMPDIR") or ""]
    if (env.get("TMPDIR") or "").startswith(("/var/", "/tmp/")):
        candidates.append("/private" + env["TMPDIR"])
    if cwd:
        physical = os.path.realpath(cwd)
        candidates += [cwd, physical, _project_root(physical) or ""]
    candidates += writable_roots(env)
    home = env.get("HOME") or ""
    for place in candidates:
        place = place.rstrip("/")
        if place.startswith("/") and not _holds_home(place, home):
            found.append(place)
    return found


def codex_config(env):
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or "", ".codex")
    return os.path.join(home, "config.toml")


def writable_roots(env):
    """sandbox_workspace_write.writable_roots from every table ending in that name (profiles too)."""
    import tomllib  # rare paths only (install, build, doctor)

    from intent_loop.errors import IntentLoopError
    from intent_loop.storage.paths import read_through_links

    try:  # never blocks on a FIFO, never reads a link to /dev/zero without end
        data = read_through_links(codex_config(env), CONFIG_CAP)
        config = tomllib.loads(data.decode("utf-8")) if data else {}
    except (OSError, ValueError, IntentLoopError):
        return []
    roots = []

    def walk(table):
        for key, value in table.items():
            if not isinstance(value, dict):
                continue
            if key == "sandbox_workspace_write" and isinstance(value.get("writable_roots"), list):
                roots.extend(r for r in value["writable_roots"] if isinstance(r, str))
            walk(value)

    walk(config)
    return roots


def trusted_roots(env):
    """The trusted Python roots, as named (a root that holds the home folder is not one)."""
    home = (env.get("HOME") or "").rstrip("/")
    home = home if home.startswith("/") else ""
    roots = list(SYSTEM_ROOTS)
    pyenv = env.get("PYENV_ROOT") or ""
    pyenv = pyenv if pyenv.startswith("/") and len(pyenv) > 1 else (home and home + "/.pyenv")
    if pyenv:
        roots += [pyenv.rstrip("/") + "/versions", pyenv.rstrip("/") + "/shims"]
    if home:
        roots += [f"{home}/{under}" for under in HOME_ROOTS]
    for named in (env.get(ROOTS_VARIABLE) or "").split(":"):
        if named.startswith("/") and len(named) > 1 and not _holds_home(named.rstrip("/"), env.get("HOME") or ""):
            roots.append(named.rstrip("/"))
    return roots


def _physical_roots(env):
    return [os.path.realpath(root) for root in trusted_roots(env) if os.path.isdir(root)]


def is_trusted_place(path, physical_roots):
    return any(path.startswith(root.rstrip("/") + "/") for root in physical_roots)


def is_agent_place(path, places):
    return any(path == place or path.startswith(place + "/") for place in places)


def hops_of(name):
    """Every hop from a name to the real file (each its physical directory plus its name); the last
    is the real file. None on a loop, a dangling link or a non-executable."""
    hops = []
    for _ in range(MAX_HOPS):
        if "/" not in name:
            return None
        directory = os.path.realpath(os.path.dirname(name) or "/")
        name = os.path.join(directory, os.path.basename(name))
        hops.append(name)
        try:
            st = os.lstat(name)
        except OSError:
            return None
        if stat.S_ISLNK(st.st_mode):
            name = os.path.join(directory, os.readlink(name))
            continue
        return hops if stat.S_ISREG(st.st_mode) and os.access(name, os.X_OK) else None
    return None


def _above(path):
    while path not in ("", "/"):
        yield path
        path = os.path.dirname(path)
    yield "/"


def _unsafe_owner(path):
    """Why a path is not owned by root or the user, or is world-writable (a link only its owner)."""
    try:
        st = os.lstat(path)
    except OSError:
        return f"{path} cannot be read"
    if st.st_uid not in (0, os.getuid()):
        return f"{path} belongs to another user"
    if not stat.S_ISLNK(st.st_mode) and st.st_mode & stat.S_IWOTH:
        return f"{path} is world-writable"
    return None


def _venv_of(directory):
    for candidate in (directory, os.path.dirname(directory)):
        if os.path.isfile(os.path.join(candidate, "pyvenv.cfg")):
            return os.path.realpath(candidate)
    return None


def _venv_home(venv):
    from intent_loop.errors import IntentLoopError
    from intent_loop.storage.paths import read_through_links

    try:  # the agent may write a workspace venv: a FIFO there never blocks, a link to /dev/zero is capped
        data = read_through_links(os.path.join(venv, "pyvenv.cfg"), CONFIG_CAP) or b""
    except (OSError, IntentLoopError):
        return None
    for line in data.decode("utf-8", "replace").splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            return value.strip()
    return None


def leave_venv(name, places):
    """A venv's python is never run as itself: its first hop out of the venv, or for a --copies venv
    outside the agent's places the `home =` of its pyvenv.cfg with the same name."""
    venv = _venv_of(os.path.dirname(name))
    if venv is None:
        return name
    for hop in hops_of(name) or ():
        if not hop.startswith(venv + "/"):
            return hop
    home = _venv_home(venv)
    if home is None or is_agent_place(venv, places):
        return None
    return os.path.join(home, os.path.basename(name))


def choose(name, *, cwd, env):
    """(the path to run, None) when `name` passes the launchers' rules (find_python.sh), else
    (None, why not). A venv's python is replaced by what it runs; the result and every link hop to it
    lie under a trusted Python root (trusted_roots), outside the agent's places."""
    places = agent_places(cwd=cwd, env=env)
    chosen = leave_venv(name, places)
    if chosen is None:
        return None, f"{name} is in a virtualenv the agent can write (--copies)"
    hops = hops_of(chosen)
    if hops is None:
        return None, f"{chosen} is not an executable file"
    roots = _physical_roots(env)
    for hop in hops:
        if is_agent_place(hop, places):
            return None, f"{hop} lies where the agent can write"
        if not is_trusted_place(hop, roots):
            return None, (f"{hop} lies outside the trusted Python roots (set INTENT_LOOP_PYTHON, or name its "
                          f"directory in {ROOTS_VARIABLE})")
        for path in _above(hop):
            why = _unsafe_owner(path)
            if why:
                return None, why
    return chosen, None


def read_record(root):
    """The interpreter the launchers recorded in <root>/runtime/python-record: {py, py_id, py_checked}."""
    import shlex

    try:
        with open(os.path.join(root, "runtime", RECORD), encoding="utf-8", errors="replace") as fh:
            words = shlex.split(fh.read(64 << 10))
    except (OSError, ValueError):
        return None
    record = dict(word.split("=", 1) for word in words if "=" in word)
    return record if record.get("py") else None

# shellcheck disable=SC1007,SC2015,SC2034,SC2086,SC2154,SC3013
# (The directive: the variables are set by the file that sources this one; `a= b=` empties several
# at once; the unquoted expansions split on IFS=newline under `set -f` on purpose; dash, bash and
# macOS's sh all have `[ -nt ]`.)
# intent-loop: the Python 3.11+ that runs it, for both launchers (POSIX sh, sourced): what every run
# needs, the agent's places and the re-check of the recorded interpreter by the location rules
# (stated in choose_python.sh, which is read only when no record passes, or to say why none runs).
# hooks/intent-loop and each binary's launcher (launch/launcher.sh, which build.py embeds this file
# in) read it on every run. The caller sets `root` (the data root, or empty: launch/data_root.sh,
# which also holds runtime_is_ours) and `is_hook` (1 for a hook); the functions set `py` and
# `py_record_id`. Docs: docs/install.md, "Which Python runs intent-loop".
nl='
'
default_ifs=$IFS  # the shell's own: the loops below split on newlines only, then put it back
# The tools these scripts run (ls, sed, awk, mkdir...) come from a fixed PATH: the user's may name a
# workspace venv's bin/ or an empty entry (the cwd), which the agent writes. The user's PATH is kept
# as the list of interpreter candidates only, and given back to Python (restore_path), which is run
# by its absolute path.
user_path=${PATH-} path_was_set=${PATH+1}
tool_path=/usr/bin:/bin
PATH=$tool_path
restore_path() {
  if [ -n "$path_was_set" ]; then PATH=$user_path; else unset PATH; fi
}

# The interpreter's first statements, before any import: one older than 3.11 says so on stderr and
# exits 3 (a hook's launcher says it once, fail-open); one started from a record compares itself with the
# record's identity (argv[1], "dev ino size mtime_ns version|record path") and removes a record that no
# longer matches, so the next run chooses again. argv[1] is taken off sys.argv either way.
guard_code='import sys
if sys.version_info<(3,11):sys.stderr.write("intent-loop: PYTHON_NOT_FOUND: %s is older than 3.11\n"%sys.executable);sys.exit(3)
_r=sys.argv.pop(1)
if _r:
  import posix
  _i,_,_p=_r.partition("|")
  try:_s=posix.stat(sys.executable);_k="%d %d %d %d %d.%d.%d"%((_s.st_dev,_s.st_ino,_s.st_size,_s.st_mtime_ns)+sys.version_info[:3])
  except OSError:_k=""
  if _i!=_k:
    try:posix.unlink(_p)
    except OSError:pass
'

# -- the agent's places (builtins only: this runs on every use) ----------------------------------
# A place that holds the home folder is outside the threat model (docs/security.md): it is not used,
# or every interpreter of the user's would be refused.
holds_home() {
  [ "$1" = / ] && return 0
  case ${HOME:-} in "$1"|"$1"/*) return 0 ;; esac
  return 1
}

add_agent_place() {
  case $1 in /?*) holds_home "${1%/}" || agent_places=$agent_places$nl${1%/} ;; esac
}

# The cwd (as named and physical: `cd -P .` stays in the same directory and only renames $PWD) and
# the project root above it (the nearest directory with a .git), the temp directories, $TMPDIR.
find_agent_places() {
  codex_config=${CODEX_HOME:-${HOME:-}/.codex}/config.toml
  agent_places="/tmp$nl/var/tmp$nl/dev/shm$nl/private/tmp$nl/private/var/tmp"
  add_agent_place "${TMPDIR:-}"
  case ${TMPDIR:-} in /var/*|/tmp/*) add_agent_place "/private$TMPDIR" ;; esac
  named_pwd=${PWD:-}
  add_agent_place "$named_pwd"
  if cd -P . 2>/dev/null; then
    add_agent_place "$PWD"
    above=$PWD
    while [ -n "$above" ] && [ ! -e "$above/.git" ]; do above=${above%/*}; done
    add_agent_place "$above"
  fi
  PWD=$named_pwd
}

# -- the trusted Python roots (builtins only: this runs on every use) ----------------------------
# An interpreter runs only when its real file, and every link hop to it, lies under one of these, by
# name: directories of the system or of a Python toolchain, which no workspace is, and those the user
# names in INTENT_LOOP_PYTHON_ROOTS (colon-separated absolute paths). The agent may write every
# workspace it was ever run in, not only this session's: the agent's places above are kept out on top.
find_trusted_roots() {
  home=${HOME:-}
  case $home in /?*) ;; *) home= ;; esac
  trusted_roots="/usr/bin$nl/bin$nl/usr/local$nl/opt/homebrew$nl/opt/local$nl/opt/python$nl/opt/conda"
  trusted_roots="$trusted_roots$nl/Library/Frameworks/Python.framework$nl/nix/store"
  pyenv_root=${PYENV_ROOT:-}
  case $pyenv_root in /?*) ;; *) pyenv_root=${home:+$home/.pyenv} ;; esac
  [ -n "$pyenv_root" ] && trusted_roots="$trusted_roots$nl${pyenv_root%/}/versions$nl${pyenv_root%/}/shims"
  if [ -n "$home" ]; then
    home=${home%/}
    for under in .local/share/uv/python .asdf/installs/python .asdf/shims .local/share/mise/installs/python \
        .local/share/mise/shims miniconda3/bin miniconda3/envs anaconda3/bin anaconda3/envs miniforge3/bin \
        miniforge3/envs mambaforge/bin mambaforge/envs .local/bin; do
      trusted_roots="$trusted_roots$nl$home/$under"
    done
  fi
  IFS=:; set -f
  for named in ${INTENT_LOOP_PYTHON_ROOTS:-}; do
    case $named in /?*) holds_home "${named%/}" || trusted_roots="$trusted_roots$nl${named%/}" ;; esac
  done
  IFS=$default_ifs; set +f
}

# Whether a path lies under a trusted Python root (find_trusted_roots ran), as a string.
is_trusted_place() {
  IFS=$nl; set -f
  for trusted in $trusted_roots; do
    case $1 in "$trusted"/*) IFS=$default_ifs; set +f; return 0 ;; esac
  done
  IFS=$default_ifs; set +f
  return 1
}

# Whether a path lies in one of the agent's places (find_agent_places ran), as a string.
is_agent_place() {
  IFS=$nl; set -f
  for place in $agent_places; do
    case $1 in "$place"|"$place"/*) IFS=$default_ifs; set +f; return 0 ;; esac
  done
  IFS=$default_ifs; set +f
  return 1
}

# -- the record of the chosen interpreter ---------------------------------------------------
# py, py_id, py_checked (every path the rules checked, physical, one a line) and py_named (the same
# paths named under the trusted root each lies in), written by remember_python. It is sourced: it
# lies in the data root, which the agent cannot write (its pycache is run too), and only when the
# data root and its runtime/ are real directories of this user's. Codex's config.toml newer than the
# record may have added a writable_roots entry: choose again.
use_recorded_python() {
  record=$root/runtime/python-record
  runtime_is_ours && [ -f "$record" ] && [ ! -L "$record" ] && [ -O "$record" ] || return 1
  [ "$codex_config" -nt "$record" ] && return 1
  py= py_id= py_checked= py_named=
  command . "$record" 2>/dev/null || return 1
  case $py in /*) ;; *) return 1 ;; esac
  [ -n "$py_id" ] && [ -n "$py_named" ] && [ -f "$py" ] && [ -x "$py" ] || return 1
  find_trusted_roots
  IFS=$nl; set -f
  for checked in $py_checked; do
    if is_agent_place "$checked" || [ ! -e "$checked" ]; then
      IFS=$default_ifs; set +f; return 1
    fi
  done
  for checked in $py_named; do
    if ! is_trusted_place "$checked"; then
      IFS=$default_ifs; set +f; return 1
    fi
  done
  IFS=$default_ifs; set +f
  py_record_id="$py_id|$record"
}

# intent-loop: the Python 3.11+ that runs it, for both launchers (POSIX sh, sourced): what every run
# needs, the agent's places and the re-check of the recorded interpreter by the location rules
# (stated in choose_python.sh, which is read only when no record passes, or to say why none runs).
# hooks/intent-loop and each binary's launcher (launch/launcher.sh, which build.py embeds this file
# in) read it on every run. The caller sets `root` (the data root, or empty) and `is_hook` (1 for a
# hook); the functions set `py` and `py_record_id`. Docs: docs/install.md, "Which Python runs
# intent-loop".
nl='
'
default_ifs=$IFS  # the shell's own: the loops below split on newlines only, then put it back

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
# py, py_id and py_checked (every path the rules checked, one a line), written by remember_python.
# It is sourced: it lies in the data root, which the agent cannot write (its pycache is run too).
# Codex's config.toml newer than the record may have added a writable_roots entry: choose again.
use_recorded_python() {
  record=$root/runtime/python-record
  [ -n "$root" ] && [ -f "$record" ] && [ ! -L "$record" ] && [ -O "$record" ] || return 1
  [ "$codex_config" -nt "$record" ] && return 1
  py= py_id= py_checked=
  command . "$record" 2>/dev/null || return 1
  [ -n "$py" ] && [ -n "$py_id" ] && [ -f "$py" ] && [ -x "$py" ] || return 1
  IFS=$nl; set -f
  for checked in $py_checked; do
    if is_agent_place "$checked" || [ ! -e "$checked" ]; then
      IFS=$default_ifs; set +f; return 1
    fi
  done
  IFS=$default_ifs; set +f
  py_record_id="$py_id|$record"
}

# shellcheck disable=SC1007,SC2015,SC2034,SC2086,SC2154,SC3013
# (The directive: the variables are set by the file that sources this one; `a= b=` empties several
# at once; the unquoted expansions split on IFS=newline under `set -f` on purpose; dash, bash and
# macOS's sh all have `[ -nt ]`.)
# intent-loop: what the launchers read only off the common path (POSIX sh): choosing a Python 3.11+
# by the location rules when no recorded interpreter passes, and saying why none runs. find_python.sh,
# sourced on every run, stays small since the shell parses all it reads. hooks/intent-loop sources this
# file; build.py embeds it in each binary's launcher as a string that is eval'ed only then (each
# launcher's load_choosing). Forks are allowed here.
#
# The agent Codex runs has the user's uid and may write the workspace, the temp directories and
# Codex's writable_roots (docs/security.md). So no interpreter is run, not even to ask its version,
# before the place it lives passes the location rules, decided from lstat, readlink and the
# directories' physical paths only:
#   - every link hop and the real file lie under a trusted Python root (find_python.sh,
#     find_trusted_roots: the system's and the Python toolchains' directories, and those named in
#     INTENT_LOOP_PYTHON_ROOTS): the agent may write any workspace it was ever run in, which no
#     rule that knows only this session's cwd can name;
#   - every link hop and the real file, and each directory above them, lie outside the agent's
#     places: the cwd and its project root, $TMPDIR, /tmp, /var/tmp, /dev/shm, a writable_roots entry;
#   - each of them is owned by root or the user, and none but a link is world-writable (group-writable
#     directories such as macOS's admin-group /usr/local/bin pass: the agent is the user, not the group);
#   - a virtualenv's python is never run as itself (its site-packages would be the agent's): its link
#     target, or for a --copies venv outside the agent's places the `home =` of its pyvenv.cfg, is
#     the candidate instead, under the same rules.
# What passed is recorded in $root/runtime/python-record with every path checked, and re-checked
# against the agent's places of this run at every use with builtins only (no fork): the cwd differs
# between sessions. Ownership and modes are checked only when choosing: changing them outside the
# agent's places takes the user's own hands. The Python then compares its own identity (device,
# inode, size, mtime) with the record by one stat (guard_code) and drops a record that differs.

# A Python that passed the rules answers this, run from / (pyenv, asdf and mise shims read the cwd's
# .python-version, which the agent writes): the path to run, then its identity. A shim (a shell
# script) answers with the real interpreter, which starts five times faster and is checked by the
# rules in turn; a stable name (/opt/homebrew/bin/python3.12) is kept over the versioned Cellar path
# it points at, which `brew upgrade` deletes.
python_probe='import os,sys
v=sys.version_info
if v<(3,11):sys.exit(1)
c,e=sys.argv[1],sys.executable
def same(a,b):
  try:return os.path.samefile(a,b)
  except OSError:return False
p=c if same(c,e) else e
if "/Cellar/" in p:
  n="python%d.%d"%v[:2]
  for s in("/opt/homebrew/bin/"+n,"/usr/local/bin/"+n,"/opt/homebrew/opt/python@%d.%d/bin/"%v[:2]+n):
    if same(s,p):p=s;break
s=os.stat(p)
print(p)
print("%d %d %d %d %d.%d.%d"%((s.st_dev,s.st_ino,s.st_size,s.st_mtime_ns)+v[:3]))'

# Record what the search found, where the data root is (a hook creates it; the command line never
# does, so a dry run creates nothing): a temporary file renamed over the old one.
remember_python() {
  [ -n "$root" ] || return 0
  if [ -n "$is_hook" ]; then
    mkdir -p "$root/runtime" 2>/dev/null || return 0
  fi
  runtime_is_ours || return 0
  record=$root/runtime/python-record
  printf 'py=%s\npy_id=%s\npy_checked=%s\npy_named=%s\n' "$(quoted "$py")" "$(quoted "$found_id")" \
    "$(quoted "$checked_paths")" "$(quoted "$named_paths")" >"$record.$$" 2>/dev/null &&
    mv -f "$record.$$" "$record" 2>/dev/null
  rm -f "$record.$$" 2>/dev/null
  return 0
}

quoted() {
  printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

# -- choosing (forks allowed: this runs once, then the record is used) ---------------------------
# Codex's sandbox_workspace_write.writable_roots, from every table ending in that name and the dotted
# key, in the config.toml Codex reads. Roots given on Codex's command line (-c, --add-dir) are not seen.
add_writable_roots() {
  [ -f "$codex_config" ] || return 0
  roots=$(awk '
    /^[ \t]*\[/ { table = $0; gsub(/[ \t\[\]"]/, "", table); inside = 0 }
    /^[ \t]*(sandbox_workspace_write\.)?writable_roots[ \t]*=/ {
      if (table ~ /(^|\.)sandbox_workspace_write$/ || $0 ~ /sandbox_workspace_write\./) inside = 1
    }
    inside { line = $0; while (match(line, /"[^"]*"|'"'"'[^'"'"']*'"'"'/)) {
               print substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH) }
             if ($0 ~ /\]/) inside = 0 }' "$codex_config" 2>/dev/null)
  IFS=$nl; set -f
  for writable in $roots; do add_agent_place "$writable"; done
  IFS=$default_ifs; set +f
}

# The physical path of a directory (a subshell: its cd does not move the launcher).
physical_dir() {
  (cd -P -- "$1" 2>/dev/null && pwd -P)
}

# Each trusted root that exists, then its physical path, one a line (trusted_pairs): the hops are
# physical, the record names them under the root as the user named it (named_form).
resolve_trusted_roots() {
  find_trusted_roots
  trusted_pairs=
  IFS=$nl; set -f
  for named in $trusted_roots; do
    [ -d "$named" ] || continue
    physical=$(physical_dir "$named") || continue
    trusted_pairs=$trusted_pairs$nl$named$nl${physical%/}
  done
  IFS=$default_ifs; set +f
}

# A physical path named under the trusted root it lies in (hop_named); fails outside every one.
named_form() {
  hop_named= named=
  IFS=$nl; set -f
  for line in $trusted_pairs; do
    if [ -z "$named" ]; then named=$line; continue; fi
    case $1 in "$line"/*) hop_named=$named${1#"$line"}; IFS=$default_ifs; set +f; return 0 ;; esac
    named=
  done
  IFS=$default_ifs; set +f
  return 1
}

# Every hop from a name to the real file, each as its physical directory plus its name, one a line,
# in `hops`; the real file in `real`. Fails on a loop, a dangling link or a non-executable.
follow_links() {
  hops= real= name=$1 count=0
  while [ "$count" -lt 16 ]; do
    count=$((count + 1))
    case $name in */*) ;; *) return 1 ;; esac
    directory=$(physical_dir "${name%/*}/") || return 1
    name=${directory%/}/${name##*/}
    hops=$hops$nl$name
    if [ -L "$name" ]; then
      target=$(readlink -- "$name") || return 1
      case $target in /*) name=$target ;; *) name=${directory%/}/$target ;; esac
      continue
    fi
    [ -f "$name" ] && [ -x "$name" ] || return 1
    real=$name
    return 0
  done
  return 1
}

# A virtualenv's directory when this bin/ directory belongs to one (pyvenv.cfg beside or above it).
venv_of() {
  if [ -f "$1/pyvenv.cfg" ]; then physical_dir "$1"
  elif [ -f "${1%/*}/pyvenv.cfg" ]; then physical_dir "${1%/*}"
  else return 1
  fi
}

# A venv's python is replaced by the first hop out of the venv, or, when the real file is inside it
# (--copies), by `home =` of its pyvenv.cfg with the same name: unless the venv is the agent's.
leave_venv() {
  venv=$(venv_of "${1%/*}") || { echo "$1"; return 0; }
  follow_links "$1" || return 1
  IFS=$nl; set -f
  for hop in $hops; do
    case $hop in "$venv"/*) ;; *) IFS=$default_ifs; set +f; echo "$hop"; return 0 ;; esac
  done
  IFS=$default_ifs; set +f
  is_agent_place "$venv" && return 1
  home=$(sed -n 's/^[[:space:]]*home[[:space:]]*=[[:space:]]*//p' "$venv/pyvenv.cfg" | head -n 1)
  case $home in /*) echo "${home%/}/${1##*/}" ;; *) return 1 ;; esac
}

# The location rules for one name (see the top of this file). Sets checked_paths: every path checked,
# and named_paths: each named under its trusted root.
passes_location_rules() {
  case $1 in *"$nl"*) return 1 ;; esac
  follow_links "$1" || return 1
  checked_paths=${hops#"$nl"}
  owner_check= named_paths=
  IFS=$nl; set -f
  for hop in $hops; do
    if is_agent_place "$hop" || ! named_form "$hop"; then
      IFS=$default_ifs; set +f; return 1
    fi
    named_paths=$named_paths${named_paths:+$nl}$hop_named
    above=$hop
    while [ -n "$above" ]; do owner_check=$owner_check$nl$above; above=${above%/*}; done
  done
  IFS=$default_ifs; set +f
  owned_safely
}

# Each path of owner_check (lstat: `ls -ldn`, one fork for all) owned by root or the user and,
# unless a link, not world-writable.
owned_safely() {
  IFS=$nl; set -f
  listing=$(ls -ldn -- / $owner_check 2>/dev/null) || { IFS=$default_ifs; set +f; return 1; }
  user=$(id -u)
  for line in $listing; do
    IFS=$default_ifs
    set -- $line
    case $3 in 0|"$user") ;; *) set +f; return 1 ;; esac
    case $1 in l*) ;; ????????w*) set +f; return 1 ;; esac
    IFS=$nl
  done
  IFS=$default_ifs; set +f
  return 0
}

# One candidate: out of any venv, through the rules, then asked (from /) which interpreter it is,
# and that answer through the rules too. Sets py, found_id and checked_paths; refused_by_rules when
# the rules alone kept it out.
try_candidate() {
  [ -f "$1" ] && [ -x "$1" ] || return 1
  candidate=$(leave_venv "$1") || { refused_by_rules=1; return 1; }
  [ "$candidate" = "$macos_stub" ] && return 1
  passes_location_rules "$candidate" || { refused_by_rules=1; return 1; }
  answer=$(cd / && "$candidate" -I -S -c "$python_probe" "$candidate" 2>/dev/null </dev/null) || return 1
  found=${answer%%"$nl"*} found_id=${answer#*"$nl"}
  [ -n "$found" ] && [ "$found" != "$answer" ] || return 1
  if [ "$found" != "$candidate" ]; then
    found=$(leave_venv "$found") || { refused_by_rules=1; return 1; }
    passes_location_rules "$found" || { refused_by_rules=1; return 1; }
  fi
  py=$found
  return 0
}

# The candidates, in order: each name in every absolute entry of the user's PATH (a builtin walk: an
# empty or relative entry is the cwd, the agent's), then the usual directories. macOS's
# /usr/bin/python3 is a stub that may open an installer dialog (and is 3.9): it is never run.
# Sets only_in_workspace when a candidate was passed over by the location rules, and none was found.
search_python() {
  for name in python3 python3.13 python3.12 python3.11; do
    IFS=:; set -f
    for entry in $user_path; do
      IFS=$default_ifs; set +f
      case $entry in /*) ;; *) continue ;; esac
      [ -f "${entry%/}/$name" ] && [ -x "${entry%/}/$name" ] || continue
      try_candidate "${entry%/}/$name" && return 0
    done
    IFS=$default_ifs; set +f
  done
  for name in \
      /opt/homebrew/bin/python3 /opt/homebrew/bin/python3.13 /opt/homebrew/bin/python3.12 /opt/homebrew/bin/python3.11 \
      /usr/local/bin/python3 /usr/local/bin/python3.13 /usr/local/bin/python3.12 /usr/local/bin/python3.11 \
      /usr/bin/python3 /usr/bin/python3.13 /usr/bin/python3.12 /usr/bin/python3.11; do
    [ -x "$name" ] || continue
    try_candidate "$name" && return 0
  done
  [ -n "${refused_by_rules:-}" ] && only_in_workspace=1
  return 1
}

# Choosing, when no record passes: an older build's record, else the binary's own interpreter (its
# first argument, may be empty), else the search. Every one goes through the location rules first.
choose_python() {
  macos_stub=
  [ -x /usr/bin/xcrun ] && [ -d /System/Library ] && macos_stub=/usr/bin/python3
  add_writable_roots
  resolve_trusted_roots
  adopt_old_record && return 0
  if [ -n "${1:-}" ]; then
    case $1 in /*) try_candidate "$1" && return 0 ;; esac
  fi
  search_python
}

# A record written by an older build (runtime/python, one path) is checked by these rules before it
# is used: passed, it is asked its version like any candidate; failed, it is removed, never run.
adopt_old_record() {
  old_record=$root/runtime/python
  runtime_is_ours && [ -f "$old_record" ] && [ ! -L "$old_record" ] || return 1
  old_py=
  read -r old_py <"$old_record" 2>/dev/null
  rm -f "$old_record" 2>/dev/null
  case $old_py in /*) ;; *) return 1 ;; esac
  try_candidate "$old_py"
}

# -- saying why nothing runs -----------------------------------------------------------------
# JSON text for a message: printable ASCII only, a quote or backslash dropped, any other byte
# (a control, or a non-UTF-8 byte in INTENT_LOOP_PYTHON) shown as `?`.
json_text() {
  printf '%s' "$1" | LC_ALL=C tr -d '\\"' | LC_ALL=C tr -c ' -~' '?'
}

# A hook says why it does not record once per key (a session id, else Codex's process), and
# answers {"continue":true} alone after that; the record of the last key told is kept in
# $root/runtime/no-python-told. Never returns.
tell_once() {
  told=$root/runtime/no-python-told
  if [ -n "$2" ] && [ -n "$root" ]; then
    if runtime_is_ours && [ -f "$told" ] && [ "$(cat "$told" 2>/dev/null)" = "$2" ]; then
      printf '{"continue":true}'
      exit 0
    fi
    if mkdir -p "$root/runtime" 2>/dev/null && runtime_is_ours && [ ! -L "$told" ]; then
      printf '%s\n' "$2" >"$told" 2>/dev/null
    fi
  fi
  printf '{"continue":true,"systemMessage":"intent-loop is not recording: %s"}' "$(json_text "$1")"
  exit 0
}

# No interpreter: the command line says why (PYTHON_NOT_FOUND, exit 1); a hook answers fail-open
# and says why in a systemMessage, once a session (the session id is the payload's). Never returns.
no_python() {
  why="no Python 3.11+ found; set INTENT_LOOP_PYTHON"
  if [ -n "${only_in_workspace:-}" ]; then
    why="the only Python 3.11+ found lies outside the trusted Python roots or where the agent can write; set INTENT_LOOP_PYTHON or INTENT_LOOP_PYTHON_ROOTS"
  fi
  if [ -n "${INTENT_LOOP_PYTHON:-}" ]; then
    why="INTENT_LOOP_PYTHON=$INTENT_LOOP_PYTHON is not an executable; set it to a Python 3.11+"
    case $INTENT_LOOP_PYTHON in /*) ;; *)
      why="INTENT_LOOP_PYTHON=$INTENT_LOOP_PYTHON is not an absolute path; set it to a Python 3.11+" ;;
    esac
  fi
  if [ -z "$is_hook" ]; then
    echo "intent-loop: PYTHON_NOT_FOUND: $why" >&2
    exit 1
  fi
  tell_once "$why" "$(sed -n 's/.*"session_id" *: *"\([0-9A-Za-z._-]*\)".*/\1/p' | head -n 1)"
}

# A hook's Python answered nothing, or not a JSON object (it crashed, or is not what was chosen):
# Codex gets the fail-open answer, said once per Codex process (the payload went to Python).
# Exit 3 is the guard's "older than 3.11"; the record that chose it is removed.
failed_answer() {
  why="the Python at $py gave no answer (exit $1); run \`intent-loop doctor\`"
  if [ "$1" = 3 ]; then
    why="the Python at $py is older than 3.11; set INTENT_LOOP_PYTHON"
    [ -n "$py_record_id" ] && rm -f "${py_record_id#*|}" 2>/dev/null
  fi
  tell_once "$why" "codex-$PPID"
}

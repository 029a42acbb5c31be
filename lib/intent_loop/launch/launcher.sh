#!/bin/sh
# intent-loop @NAME@: this /bin/sh launcher is followed by a shiv zip (README: "Binaries").
# shellcheck disable=SC1003,SC1007,SC2015,SC2016,SC2034,SC2086,SC2154,SC3013
py="${INTENT_LOOP_PYTHON:-@PYTHON@}"
# build.py fills in the @...@ values and drops the comment lines below this one (it keeps the three
# above: shellcheck's directive, for the same reasons as in find_python.sh, covers the embedded code;
# SC1003 and SC2016: the Python and sh code it embeds is single-quoted on purpose). Variables are
# lower case so that none of them is a variable of the environment Codex passes on.
# is_hook is 1 for the three hooks and empty for the command line.
is_hook=@IS_HOOK@

# A hook keeps the shell as its parent: whatever kills Python before hook.runtime answers (a
# crash inside shiv's bootstrap, a missing module), Codex still gets continue:true and exit 0.
# The shell ignores SIGTERM (so does Python until the handler that answers fail-open is in
# place): a TERM sent to the shell alone or to the whole group never leaves Codex without an
# answer. The command line simply becomes Python.
# The hook's answer is captured: anything but a JSON object (a crash, an empty answer) becomes the
# fail-open answer, said once (choose_python.sh, failed_answer).
start() {
  restore_path
  if [ -n "$is_hook" ]; then
    trap '' TERM
    answer=$("$@")
    status=$?
    case $answer in '{'*'}') printf '%s' "$answer"; exit 0 ;; esac
    PATH=$tool_path
    load_choosing
    failed_answer "$status"
  fi
  exec "$@"
}

# The data root: launch/data_root.sh (base/data_root.py's order, in sh), embedded by build.py. A
# plugin's .mcp.json starts the server as ./dist/intent-loop-mcp from the plugin root: a relative $0
# is resolved against the cwd (with no absolute cwd known, self stays empty: from the plugin-cache
# step on, root stays empty and the Python launcher decides).
@DATA_ROOT@
self=
case $0 in /*) self=$0 ;; *) case ${PWD:-} in /*) self=$PWD/$0 ;; esac ;; esac
find_data_root "$self"

# The interpreter: INTENT_LOOP_PYTHON, the user's own choice, used as given when absolute; else the
# one an earlier run recorded, re-checked with builtins against the trusted Python roots and this
# run's agent places; else one an older build cached, else the one the binary was built with, else
# a search, each through the location rules before it runs (launch/find_python.sh and
# choose_python.sh, embedded here by build.py; the baked one may be gone, or be another machine's
# path). find_python.sh sets a fixed PATH for the tools; Python gets the user's back. The bundled
# orjson fits only the builder's minor version; another one runs the standard library's JSON.
@FIND_PYTHON@
# launch/choose_python.sh, as a string: the shell scans a quoted string without parsing it.
choose_python=@CHOOSE_PYTHON@
load_choosing() { eval "$choose_python"; }
find_agent_places
py_record_id=
if [ -n "${INTENT_LOOP_PYTHON:-}" ]; then
  case $py in /*) ;; *) py= ;; esac
else
  baked=$py py=
  if use_recorded_python; then
    :
  elif load_choosing && choose_python "$baked"; then
    remember_python
  fi
fi
if [ -z "$py" ] || [ ! -x "$py" ]; then
  load_choosing
  no_python
fi

# Python compiling the long way costs about a tenth of an interpreter start: the common case
# (a complete runtime under a root the shell found, not through a symlink) skips it; the long way
# moves a linked runtime directory (or another user's) aside.
site=$root/runtime/@BUILD_ID@/${0##*/}_@BUILD_ID@/site-packages
if [ -n "$root" ] && [ ! -L "$0" ] && [ ! -L "$root/runtime" ] && [ ! -L "$root/runtime/@BUILD_ID@" ] &&
  [ -f "$site/@MARKER@" ]; then
  start "$py" -I -S -c "${guard_code}@FAST_PATH_CODE@" "$py_record_id" "$site" "$0" "$@"
fi
# A separate command: the shell parses a whole `if ... fi` before running it, and the fast path
# above has left before the shell reads the long way's few kilobytes of code.
start "$py" -I -S -c "${guard_code}@LAUNCHER_CODE@" "$py_record_id" "$0" "$@"

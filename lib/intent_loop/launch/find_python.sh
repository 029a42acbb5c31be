# intent-loop: finding a Python 3.11+ at run time, for both launchers (POSIX sh, sourced).
# hooks/intent-loop (the plugin run from the source tree) reads this file when it has no cached
# interpreter; build.py embeds it in each binary's launcher (launch/launcher.sh), which needs it
# when the interpreter the binary was built with is gone. The caller sets `root` (the data root,
# or empty), `cache` ($root/runtime/python, or empty) and `is_hook` (1 for a hook); the functions
# set `py`. Docs: docs/install.md, "Which Python runs intent-loop".
# A Python answers this with the path to cache, or exits 1 when it is older than 3.11. A pyenv
# shim (a shell script) answers with the real interpreter, which starts five times faster; a
# stable name (/opt/homebrew/bin/python3.12) is kept over the versioned Cellar path it points at,
# which `brew upgrade` deletes.
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
print(p)'

# The candidates, in order: the names on PATH, then the usual directories. macOS's
# /usr/bin/python3 is a stub that may open an installer dialog (and is 3.9): it is never run.
search_python() {
  macos_stub=
  [ -x /usr/bin/xcrun ] && [ -d /System/Library ] && macos_stub=/usr/bin/python3
  for candidate in python3 python3.13 python3.12 python3.11 \
      /opt/homebrew/bin/python3 /opt/homebrew/bin/python3.13 /opt/homebrew/bin/python3.12 /opt/homebrew/bin/python3.11 \
      /usr/local/bin/python3 /usr/local/bin/python3.13 /usr/local/bin/python3.12 /usr/local/bin/python3.11 \
      /usr/bin/python3 /usr/bin/python3.13 /usr/bin/python3.12 /usr/bin/python3.11; do
    case $candidate in
      /*) [ -x "$candidate" ] || continue ;;
      *) candidate=$(command -v "$candidate" 2>/dev/null) || continue
         case $candidate in /*) ;; *) continue ;; esac ;;
    esac
    [ "$candidate" = "$macos_stub" ] && continue
    found=$("$candidate" -I -S -c "$python_probe" "$candidate" 2>/dev/null </dev/null) || continue
    if [ -z "$found" ] || [ ! -x "$found" ]; then
      continue
    fi
    py=$found
    return 0
  done
  return 1
}

# Cache what the search found, where the data root is (a hook creates it; the command line never
# does, so a dry run creates nothing): a temporary file renamed over the old one.
remember_python() {
  [ -n "$cache" ] || return 0
  if [ -n "$is_hook" ]; then
    mkdir -p "$root/runtime" 2>/dev/null || return 0
  fi
  if [ ! -d "$root/runtime" ] || [ -L "$root/runtime" ]; then
    return 0
  fi
  printf '%s\n' "$py" >"$cache.$$" 2>/dev/null && mv -f "$cache.$$" "$cache" 2>/dev/null
  rm -f "$cache.$$" 2>/dev/null
  return 0
}

# No interpreter: the command line says why (PYTHON_NOT_FOUND, exit 1); a hook answers fail-open
# and says why in a systemMessage, once a session (the first of its hooks that runs: the session
# id is the payload's), and {"continue":true} alone after that. Never returns.
no_python() {
  why="no Python 3.11+ found; set INTENT_LOOP_PYTHON"
  if [ -n "${INTENT_LOOP_PYTHON:-}" ]; then
    why="INTENT_LOOP_PYTHON=$INTENT_LOOP_PYTHON is not an executable; set it to a Python 3.11+"
  fi
  if [ -z "$is_hook" ]; then
    echo "intent-loop: PYTHON_NOT_FOUND: $why" >&2
    exit 1
  fi
  session=$(sed -n 's/.*"session_id" *: *"\([0-9A-Za-z._-]*\)".*/\1/p' | head -n 1)
  told=$root/runtime/no-python-told
  if [ -n "$session" ] && [ -n "$root" ]; then
    if [ -f "$told" ] && [ "$(cat "$told" 2>/dev/null)" = "$session" ]; then
      printf '{"continue":true}'
      exit 0
    fi
    if mkdir -p "$root/runtime" 2>/dev/null && [ ! -L "$told" ]; then
      printf '%s\n' "$session" >"$told" 2>/dev/null
    fi
  fi
  why=$(printf '%s' "$why" | tr -d '\\"\000-\037')  # the message is JSON: no quote, backslash or control
  printf '{"continue":true,"systemMessage":"intent-loop is not recording: %s"}' "$why"
  exit 0
}

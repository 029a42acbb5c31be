# shellcheck disable=SC2034
# (The directive: `root` is read by the file that sources this one.)
# intent-loop: the data root, for both launchers (POSIX sh, sourced). hooks/intent-loop sources this
# file; build.py embeds it in each binary's launcher (launch/launcher.sh, @DATA_ROOT@). It is the
# shell's copy of lib/intent_loop/base/data_root.py (find_data_root), which decides for Python: the
# same order, the same answer, normalized the same way (tests/launch/test_data_root_sh.py compares
# the two over every combination of the variables, nested and relative values included). Change
# the order there and here together. The shell needs it before any Python runs: the data root holds
# the record of the chosen interpreter (runtime/python-record), the extracted runtime and bytecode.

# normal_path PATH: sets `normal` to the absolute PATH as os.path.normpath writes it: no empty or
# `.` components, `..` taken lexically, no trailing slash, and POSIX's two leading slashes kept.
normal_path() {
  normal='' lead=/
  case $1 in //*) case $1 in ///*) ;; *) lead=// ;; esac ;; esac
  saved_ifs=$IFS; IFS=/; set -f
  for part in $1; do
    case $part in
      ''|.) ;;
      ..) normal=${normal%/*} ;;
      *) normal=$normal/$part ;;
    esac
  done
  IFS=$saved_ifs; set +f
  normal=$lead${normal#/}
}

# under BASE SUFFIX: sets `normal` to os.path.normpath(os.path.join(BASE, SUFFIX)) for an absolute BASE.
under() {
  normal_path "${1%/}/$2"
}

# find_data_root EXECUTABLE: sets `root` to the data root, or empty when none applies (or when
# INTENT_LOOP_DATA_DIR is relative: Python refuses it and says why). EXECUTABLE is this program's
# absolute path, or empty when it cannot be known (a relative $0 and no absolute cwd): then the
# steps from the plugin-cache one on leave `root` empty, and Python decides. One store for both
# hosts (docs/storage.md, "Where data lives"):
#   1. INTENT_LOOP_DATA_DIR, absolute;
#   2. CODEX_HOME, absolute: $CODEX_HOME/plugin-data/intent-loop/v1;
#   3. PLUGIN_DATA, absolute and in Codex's layout <home>/plugins/data/<plugin>: that home's
#      plugin-data/intent-loop/v1 (never CLAUDE_PLUGIN_DATA: per plugin, and set by both hosts);
#   4. an executable under <home>/plugins/cache/ where <home> holds Codex's config.toml: that home's
#      plugin-data/intent-loop/v1 (Claude Code's ~/.claude has the same layout, no config.toml);
#   5. ~/.codex/plugin-data/intent-loop/v1, whether or not ~/.codex exists yet.
find_data_root() {
  root=
  if [ -n "${INTENT_LOOP_DATA_DIR:-}" ]; then
    case $INTENT_LOOP_DATA_DIR in /*) normal_path "$INTENT_LOOP_DATA_DIR"; root=$normal ;; esac
    return 0
  fi
  case ${CODEX_HOME:-} in
    /*) under "$CODEX_HOME" plugin-data/intent-loop/v1; root=$normal; return 0 ;;
  esac
  case ${PLUGIN_DATA:-} in
    /*)
      normal_path "$PLUGIN_DATA"
      case ${normal%/*} in
        ?*/plugins/data) under "${normal%/plugins/data/*}" plugin-data/intent-loop/v1; root=$normal; return 0 ;;
      esac ;;
  esac
  [ -n "$1" ] || return 0
  normal_path "$1"
  case $normal in
    ?*/plugins/cache/*)
      if [ -f "${normal%%/plugins/cache/*}/config.toml" ]; then
        under "${normal%%/plugins/cache/*}" plugin-data/intent-loop/v1; root=$normal; return 0
      fi ;;
  esac
  case ${HOME:-} in
    /*) under "$HOME" .codex/plugin-data/intent-loop/v1; root=$normal ;;
  esac
  return 0
}

# The data root's runtime/ is a real directory of this user's, and so is the data root: a link there
# could make the launcher source an interpreter record the agent wrote (docs/security.md).
runtime_is_ours() {
  [ -n "$root" ] && [ -d "$root" ] && [ ! -L "$root" ] && [ -O "$root" ] &&
    [ -d "$root/runtime" ] && [ ! -L "$root/runtime" ] && [ -O "$root/runtime" ]
}

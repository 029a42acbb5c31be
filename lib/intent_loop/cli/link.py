"""link / unlink: put `intent-loop` on PATH, or take it off.

The plugin Codex installs lives in <codex-home>/plugins/cache/<marketplace>/intent-loop/<version>/,
and the next `codex plugin add` of a new version replaces that directory: a link into it would
dangle. So `link` writes a small POSIX sh launcher instead, which finds the installed plugin each
time it runs (the newest version directory of the marketplace it was linked from) and runs its
command line: the source launcher (hooks/intent-loop cli) or the binary (dist/intent-loop). Run
from a build that is no plugin (a checkout's dist/, a user-level install), it runs that path.
The launcher carries a marker line, so `unlink` and a second `link` touch only a file of ours.
When what it runs is gone (`codex plugin remove`, a deleted build), the launcher still answers
`intent-loop unlink` by itself (UNLINK_SH), so removing works in any order (issue 35, item 7).
"""
import os
import sys

from intent_loop.cli.common import USER_ONLY, add_json_flag
from intent_loop.errors import ErrorCode, IntentLoopError

MARKER = "# intent-loop link: written by `intent-loop link`; `intent-loop unlink` removes it"
DEFAULT_DIR = os.path.join("~", ".local", "bin")
NAME = "intent-loop"
LAUNCHER_CAP = 64 << 10  # ours is a few hundred bytes: anything bigger is someone else's file


def register(subparsers):
    p = subparsers.add_parser("link", help="put `intent-loop` on PATH (a small launcher in ~/.local/bin)",
                              description="Write a launcher named intent-loop into DIR (default ~/.local/bin) that "
                                          "finds the installed intent-loop plugin each time it runs, so it keeps "
                                          "working after `codex plugin add` installs a new version. Says when DIR "
                                          "is not on PATH.")
    _options(p)
    p.add_argument("--force", action="store_true", help="replace a file named intent-loop there that is not ours")
    p.add_argument("--dry-run", action="store_true", help="show what would be written; write nothing")
    p.set_defaults(func=cmd_link, user_only=USER_ONLY)
    p = subparsers.add_parser("unlink", help="remove the launcher `intent-loop link` wrote",
                              description="Remove DIR/intent-loop (default ~/.local/bin) when `intent-loop link` "
                                          "wrote it; any other file there is left alone.")
    _options(p)
    p.set_defaults(func=cmd_unlink, user_only=USER_ONLY)


def _options(p):
    p.add_argument("--dir", metavar="DIR", help=f"where the launcher goes (default {DEFAULT_DIR})")
    add_json_flag(p)


def _target(args, env):
    directory = args.dir or DEFAULT_DIR
    if directory.startswith("~"):
        home = env.get("HOME")
        if not home or not os.path.isabs(home):
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "HOME is not set to an absolute path; pass --dir DIR")
        directory = home + directory[1:]
    return os.path.join(os.path.abspath(directory), NAME)


def plugin_of(program):
    """(codex home, marketplace) when `program` lies in a Codex plugin copy, else None."""
    parts = os.path.abspath(program).split(os.sep)
    for at in range(len(parts) - 4):
        if parts[at:at + 2] == ["plugins", "cache"] and parts[at + 3] == NAME and at > 0:
            return os.sep.join(parts[:at]) or os.sep, parts[at + 2]
    return None


GUARD_NOTE = ("Guard files are not withdrawn by unlink: in each project where intent-loop published one "
              "(<project>/.execution-fidelity/contract.json), Guard keeps enforcing its last contract until "
              "the file is deleted; `intent-loop contract withdraw --all-projects --apply` removes them while "
              "the plugin is installed")

# `unlink` when the launcher has nothing left to run: the Python unlink's rules in sh (the same
# DIR, a file of ours only: a regular file holding the marker, never a FIFO or another program).
UNLINK_SH = r"""if [ "${1-}" = unlink ]; then
  shift
  dir='~/.local/bin' json=
  while [ $# -gt 0 ]; do
    case $1 in
      --dir) [ $# -ge 2 ] || { echo "intent-loop: INVALID_ARGUMENT: --dir needs DIR" >&2; exit 2; }
             dir=$2; shift 2 ;;
      --dir=*) dir=${1#--dir=}; shift ;;
      --json) json=1; shift ;;
      *) echo "intent-loop: INVALID_ARGUMENT: with nothing left to run, unlink takes only --dir DIR and --json" >&2
         exit 2 ;;
    esac
  done
  case $dir in
    "~"*) case ${HOME-} in /*) dir=$HOME${dir#"~"} ;;
            *) echo "intent-loop: INVALID_ARGUMENT: HOME is not set to an absolute path; pass --dir DIR" >&2
               exit 2 ;; esac ;;
    /*) ;;
    *) dir=$(pwd)/$dir ;;
  esac
  target=${dir%/}/intent-loop
  quoted=$(printf '%s' "$target" | sed 's/\\/\\\\/g; s/"/\\"/g')
  if [ ! -e "$target" ] && [ ! -L "$target" ]; then removed=false
  elif [ -f "$target" ] && grep -qF -- "$marker" "$target" 2>/dev/null; then
    rm -f -- "$target" || { echo "intent-loop: WRITE_FAILED: cannot remove $target" >&2; exit 1; }
    removed=true
  else
    why="$target was not written by intent-loop link: left alone"
    if [ -n "$json" ]; then
      printf '{"error": {"code": "LINK_EXISTS", "message": "%s: %s"}, "ok": false}\n' "$quoted" \
        "not written by intent-loop link: left alone"
    else echo "intent-loop: LINK_EXISTS: $why" >&2; fi
    exit 1
  fi
  if [ -n "$json" ]; then
    printf '{"guard_files": null, "path": "%s", "removed": %s}\n' "$quoted" "$removed"
  else
    if [ "$removed" = true ]; then echo "removed: $target"; else echo "nothing to remove: $target"; fi
    echo "$guard_note"
  fi
  exit 0
fi"""


def launcher_text(program, env):
    """The launcher for the program this command runs as (sys.argv[0])."""
    found = plugin_of(program)
    common = [f"marker={_sh_quote(MARKER)}", f"guard_note={_sh_quote(GUARD_NOTE)}"]
    if found is None:
        return "\n".join([
            "#!/bin/sh", MARKER,
            f"# runs the intent-loop command of {os.path.dirname(program)}",
            f"if [ -x {_sh_quote(program)} ]; then exec {_sh_quote(program)} "
            + ('cli "$@"; fi' if _is_source_launcher(program) else '"$@"; fi'),
            *common, UNLINK_SH,
            f'echo "intent-loop: {ErrorCode.PLUGIN_NOT_INSTALLED}: "{_sh_quote(program)}" is gone; link again '
            'from the intent-loop you use, or run intent-loop unlink" >&2',
            "exit 1", ""])
    codex_home, marketplace = found
    default_home = os.path.join(env.get("HOME") or "", ".codex")
    home = '"${CODEX_HOME:-$HOME/.codex}"' if codex_home == default_home else _sh_quote(codex_home)
    return "\n".join([
        "#!/bin/sh", MARKER,
        f"# runs the intent-loop command of the plugin intent-loop@{marketplace}, whichever version is installed",
        f"cache={home}/plugins/cache/{_sh_quote(marketplace)}/intent-loop",
        "found=",
        'for version in "$cache"/*/; do',
        '  [ -d "$version" ] || continue',
        '  if [ -z "$found" ] || [ "$version" -nt "$found" ]; then found=$version; fi',
        "done",
        'if [ -n "$found" ] && [ -x "${found}hooks/intent-loop" ]; then exec "${found}hooks/intent-loop" cli "$@"; fi',
        'if [ -n "$found" ] && [ -x "${found}dist/intent-loop" ]; then exec "${found}dist/intent-loop" "$@"; fi',
        *common, UNLINK_SH,
        f'echo "intent-loop: {ErrorCode.PLUGIN_NOT_INSTALLED}: no intent-loop@{marketplace} plugin in $cache; '
        'install it (codex plugin add), or run intent-loop unlink" >&2',
        "exit 1", ""])


def _is_source_launcher(program):
    """hooks/intent-loop (it takes the entry first: `cli`), not the binary dist/intent-loop."""
    return os.path.basename(os.path.dirname(program)) == "hooks"


def describe(program):
    found = plugin_of(program)
    return f"the plugin intent-loop@{found[1]}" if found else program


def _sh_quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _read(path):
    """The file's text, or None when it is missing or no regular file we could have written (a
    FIFO there must not hang the command: paths.read_through_links never blocks)."""
    from intent_loop.storage.paths import read_through_links

    try:
        data = read_through_links(path, LAUNCHER_CAP)
    except (OSError, IntentLoopError):
        return None
    return None if data is None else data.decode("utf-8", "replace")


def _is_ours(path):
    text = _read(path)
    return text is not None and MARKER in text


def _on_path(directory, env):
    entries = [os.path.abspath(os.path.expanduser(p)) for p in (env.get("PATH") or "").split(os.pathsep) if p]
    return os.path.abspath(directory) in entries


def cmd_link(args, console):
    target = _target(args, console.env)
    program = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if not program or not os.access(program, os.X_OK):
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, "cannot tell which intent-loop is running; run link "
                                                          "through the intent-loop command you want on PATH")
    text = launcher_text(program, console.env)
    exists = os.path.lexists(target)
    if exists and not _is_ours(target) and not args.force:
        raise IntentLoopError(ErrorCode.LINK_EXISTS, f"{target} exists and intent-loop link did not write it; "
                                                     "remove it, pass --dir DIR, or pass --force to replace it")
    on_path = _on_path(os.path.dirname(target), console.env)
    unchanged = exists and _is_ours(target) and _read(target) == text
    if not args.dry_run and not unchanged:
        _write(target, text)
    result = {"path": target, "written": not args.dry_run and not unchanged, "unchanged": unchanged,
              "on_path": on_path, "runs": describe(program)}
    if args.json:
        console.json(result)
        return 0
    verb = "would write" if args.dry_run else ("already linked" if unchanged else "linked")
    console.out(f"{verb} {target}: runs {result['runs']}")
    if not on_path:
        console.out(f"{os.path.dirname(target)} is not on PATH: add it to your shell's profile, for example "
                    f"`export PATH=\"{os.path.dirname(target)}:$PATH\"` in ~/.zprofile or ~/.profile")
    return 0


def cmd_unlink(args, console):
    """Remove the launcher when it is ours, and say which Guard files of ours stay in force: Guard
    keeps enforcing them after intent-loop is gone (`contract withdraw` takes them away)."""
    target = _target(args, console.env)
    if not os.path.lexists(target):
        removed, why = False, "nothing to remove"
    elif not _is_ours(target):
        raise IntentLoopError(ErrorCode.LINK_EXISTS, f"{target} was not written by intent-loop link: left alone")
    else:
        try:
            os.unlink(target)
        except OSError as exc:
            raise IntentLoopError(ErrorCode.WRITE_FAILED, f"cannot remove {target} ({exc.strerror})") from None
        removed, why = True, "removed"
    from intent_loop.cli.contract_withdraw import files_in_force

    guard_files = files_in_force(console)
    if args.json:
        console.json({"path": target, "removed": removed, "guard_files": guard_files})
        return 0
    console.out(f"{why}: {target}")
    if guard_files is None:
        console.out(GUARD_NOTE)
    elif guard_files:
        command = "intent-loop"
        program = os.path.abspath(sys.argv[0]) if removed and sys.argv and sys.argv[0] else None
        if program and os.access(program, os.X_OK):  # the launcher is gone: the command it ran
            command = f"{_sh_quote(program)} cli" if _is_source_launcher(program) else _sh_quote(program)
        console.out(f"Guard keeps enforcing intent-loop's last contract in {len(guard_files)} file(s) until they "
                    f"are withdrawn: `{command} contract withdraw --all-projects` lists them, `--apply` removes "
                    "them (before `codex plugin remove`):")
        for path in guard_files:
            console.out(f"  {path}")
    return 0


def _write(target, text):
    """A temporary file beside the target, renamed over it; a failure leaves no temporary file (it is
    executable, and would sit in a directory on PATH)."""
    directory = os.path.dirname(target)
    tmp = f"{target}.tmp-{os.getpid()}"
    created = False
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
        created = True
        try:
            os.write(fd, text.encode("utf-8"))
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as exc:
        if created:
            _remove_quietly(tmp)
        raise IntentLoopError(ErrorCode.WRITE_FAILED, f"cannot write {target} ({exc.strerror}); pass --dir DIR "
                                                      "with a directory you can write") from None


def _remove_quietly(path):
    try:
        os.unlink(path)
    except OSError:  # the first error is the one reported
        pass


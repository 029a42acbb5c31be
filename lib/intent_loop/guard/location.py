"""Where Guard reads the contract: the one rule, light enough for every prompt's one lstat, and whether
the folder it names can be written through at all (guard_dir walks it, by descriptors, to write)."""
import errno
import stat

from intent_loop.base import fast_os

DEFAULT_PATH = (".execution-fidelity", "contract.json")


def provider_path(workspace, env):
    """Where Guard 0.2.2 reads the contract: `path.resolve(cwd, EFG_CONTRACT_PATH.trim())`, a blank
    value meaning unset, else <cwd>/.execution-fidelity/contract.json (lexical, no realpath)."""
    configured = env.get("EFG_CONTRACT_PATH") or ""
    if configured:  # rarely set: the grammar module loads only then
        from intent_loop.intent.rule_grammar import js_trim

        configured = js_trim(configured)  # as Guard 0.2.2 trims it (not str.strip)
    if configured:
        return fast_os.path.normpath(fast_os.path.join(workspace, configured))
    return fast_os.path.join(workspace, *DEFAULT_PATH)


def directory_problem(path):
    """Why the Guard file's directory may not be written through (it is a link or not a directory:
    the write would go wherever it points), or None when it is a directory or missing."""
    directory = fast_os.path.dirname(path)
    try:
        st = fast_os.lstat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):  # not a link or a file on the way: the walk's
            return None                                     # own error says why (PROVIDER_WRITE_FAILED)
        return f"{directory} cannot be examined ({exc.strerror}); nothing is written"
    if stat.S_ISDIR(st.st_mode):
        return None
    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
    return f"{directory} is {kind}; intent-loop writes nothing through it (Guard still reads {path})"

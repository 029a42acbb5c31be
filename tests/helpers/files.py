"""Looking at what the storage engine left on disk: trees, residue, modes, torn tails."""
import os
import stat


def tree_bytes(root):
    """{relative path: bytes | '<dir>' | '<link -> target>' | '<fifo>'} for everything under `root`."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = f"<link -> {os.readlink(path)}>"
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = "<dir>"
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    out[rel] = fh.read()
            else:
                out[rel] = "<special>"
    return out


def all_paths(root):
    """Every path below `root` (directories and files, links not followed)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        found.extend(os.path.join(dirpath, name) for name in dirnames + filenames)
    return found


def residue(root):
    """Lock directories, lock temporaries/markers and temp files anywhere below `root`."""
    return sorted(
        path for path in all_paths(root)
        if os.path.basename(path).startswith("ledger.lock") or path.endswith(".tmp")
    )


def read_bytes(path):
    with open(path, "rb") as fh:
        return fh.read()


def ledger_lines(path):
    """The ledger's complete lines (bytes, without LF)."""
    data = read_bytes(path)
    return data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]


def files_containing(root, needle):
    """Regular files below `root` whose bytes contain `needle`."""
    hits = []
    for path in all_paths(root):
        if os.path.isfile(path) and not os.path.islink(path) and needle in read_bytes(path):
            hits.append(path)
    return hits


def open_fd_count():
    """How many file descriptors this process has open (None where /proc/self/fd is missing)."""
    for directory in ("/proc/self/fd", "/dev/fd"):
        if os.path.isdir(directory):
            return len(os.listdir(directory))
    return None

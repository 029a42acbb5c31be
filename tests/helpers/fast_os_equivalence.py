"""Compare intent_loop.base.fast_os with os / posixpath under the interpreter running this file.

    python -I -S fast_os_equivalence.py <lib dir> <scratch dir>

prints a JSON object: the interpreter's version, how many comparisons ran and every mismatch.
Stdlib only (seeded random paths instead of hypothesis), so it runs under each CPython on the
machine and not only the virtual environment's.
"""
import json
import os
import posixpath
import random
import stat
import sys

COMPONENTS = ["a", "b", "c", ".", "..", "", "rel", "abs", "chain", "dangling", "loop1", "self", "up", "dotdot"]
LEXICAL = ["a", "bb", ".", "..", "", "/", "//", "///"]
ENV_KEYS = ["PLAIN", "UNICODE", "RAW", "EMPTY", "MISSING", "PATH"]


class Comparison:
    def __init__(self):
        self.count = 0
        self.mismatches = []

    def same(self, what, ours, theirs):
        self.count += 1
        if ours != theirs and len(self.mismatches) < 50:
            self.mismatches.append([what, repr(ours), repr(theirs)])


def make_tree(root):
    """Directories and every kind of symbolic link realpath has to walk through."""
    for name in ("a", "a/b", "a/b/c", "b", "c"):
        os.mkdir(os.path.join(root, name))
    links = {
        "rel": "a/b", "a/rel": "../c", "abs": os.path.join(root, "a", "b", "c"), "chain": "rel/c",
        "dangling": "no/such/place", "loop1": "loop2", "loop2": "loop1", "self": "self", "a/up": "..",
        "a/b/dotdot": "../../..", "a/b/abs": "/", "b/chain": "../chain",
    }
    if sys.version_info >= (3, 13):  # 3.13 changed what realpath does after a loop (see fast_os.realpath)
        for loop in ("loop1", "loop2", "self"):
            del links[loop]
    for link, target in links.items():
        os.symlink(target, os.path.join(root, link))


def compare_paths(fast_os, check, tree, rng):
    for _ in range(1500):
        rest = "/".join(rng.choice(COMPONENTS) for _ in range(rng.randint(0, 7)))
        for path in (posixpath.join(tree, rest), tree + "//" + rest, tree + "/./" + rest + "/"):
            check.same(f"realpath({path!r})", fast_os.realpath(path), posixpath.realpath(path))
    os.chdir(os.path.join(tree, "a"))
    for path in ("", ".", "..", "b/../rel", "up/abs", "../chain/x", "../../.."):
        check.same(f"realpath({path!r}) from a/", fast_os.realpath(path), posixpath.realpath(path))
    for _ in range(3000):
        path = "".join(rng.choice(LEXICAL) for _ in range(rng.randint(0, 8)))
        for name in ("normpath", "split", "dirname", "basename", "isabs", "abspath"):
            check.same(f"{name}({path!r})", getattr(fast_os, name)(path), getattr(posixpath, name)(path))
        check.same(f"join({path!r}, x, ...)", fast_os.join(path, "x", path), posixpath.join(path, "x", path))
        check.same(f"join(base, {path!r})", fast_os.join("base", path), posixpath.join("base", path))
    for name in ("a", "rel", "dangling", "self", "missing", "a/b/c"):
        path = os.path.join(tree, name)
        check.same(f"predicates({name})", (fast_os.exists(path), fast_os.isdir(path), fast_os.islink(path)),
                   (os.path.exists(path), os.path.isdir(path), os.path.islink(path)))


def compare_makedirs(fast_os, check, scratch):
    ours, theirs = os.path.join(scratch, "ours"), os.path.join(scratch, "theirs")
    fast_os.makedirs(os.path.join(ours, "x", "y"), 0o700, exist_ok=True)
    os.makedirs(os.path.join(theirs, "x", "y"), 0o700, exist_ok=True)
    for sub in ("x", "x/y"):
        check.same(f"makedirs mode of {sub}", stat.S_IMODE(os.stat(os.path.join(ours, sub)).st_mode),
                   stat.S_IMODE(os.stat(os.path.join(theirs, sub)).st_mode))
    fast_os.makedirs(os.path.join(ours, "x", "y"), 0o700, exist_ok=True)
    try:
        fast_os.makedirs(os.path.join(ours, "x"), 0o700)
        check.same("makedirs of an existing directory", "no error", "FileExistsError")
    except FileExistsError:
        check.same("makedirs of an existing directory", "FileExistsError", "FileExistsError")


def compare_environment(fast_os, check):
    """getenv decodes on demand what os.environ decodes, and sees changes made through os.environ."""
    def compare(when):
        for key in ENV_KEYS:
            check.same(f"getenv({key}) {when}", fast_os.getenv(key), os.environ.get(key))
            check.same(f"getenv({key}, default) {when}", fast_os.getenv(key, "d"), os.getenv(key, "d"))
            check.same(f"{key} in environment {when}", key in fast_os.environment, key in os.environ)
            check.same(f"environment.get({key}) {when}", fast_os.environment.get(key), os.environ.get(key))

    compare("at start")
    os.environ["MISSING"] = "now set"
    del os.environ["PLAIN"]
    compare("after os.environ changed")
    check.same("no copy of the environment", hasattr(fast_os, "environ"), False)


def main(lib, scratch):
    sys.path.insert(0, lib)
    from intent_loop.base import fast_os

    check = Comparison()
    tree = os.path.join(scratch, "tree")
    os.mkdir(tree)
    make_tree(tree)
    compare_paths(fast_os, check, tree, random.Random(20240601))
    compare_makedirs(fast_os, check, scratch)
    compare_environment(fast_os, check)
    print(json.dumps({"version": list(sys.version_info[:3]), "comparisons": check.count,
                      "mismatches": check.mismatches}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""intent_loop.base.fast_os must behave exactly like `os`/`posixpath` for every call the hook path makes:
project ids are hashes of `realpath`, so one differing path would split a project in two."""
import json
import os
import posixpath
import pwd
import stat
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.fast_os_equivalence import COMPONENTS, make_tree
from helpers.imports import costly_modules_loaded
from intent_loop.base import fast_os

relative_paths = st.lists(st.sampled_from(COMPONENTS), min_size=0, max_size=7).map("/".join)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """Directories and every kind of symbolic link realpath has to walk through."""
    root = str(tmp_path_factory.mktemp("tree"))
    make_tree(root)
    return root


@settings(max_examples=600, deadline=None)
@given(relative_paths)
def test_realpath_matches_posixpath_through_links_loops_and_dotdot(tree, rest):
    for path in (posixpath.join(tree, rest), tree + "//" + rest, tree + "/./" + rest + "/"):
        assert fast_os.realpath(path) == posixpath.realpath(path), path


def test_realpath_of_relative_paths_without_loops_uses_the_working_directory(tree, monkeypatch):
    monkeypatch.chdir(os.path.join(tree, "a"))
    for path in ("", ".", "..", "b/../rel", "up/abs", "../chain/x", "../../.."):
        assert fast_os.realpath(path) == posixpath.realpath(path), path


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["a", "bb", ".", "..", "", "/", "//", "///"]), max_size=8).map("".join))
def test_lexical_helpers_match_posixpath(path):
    assert fast_os.normpath(path) == posixpath.normpath(path)
    assert fast_os.split(path) == posixpath.split(path)
    assert fast_os.dirname(path) == posixpath.dirname(path)
    assert fast_os.basename(path) == posixpath.basename(path)
    assert fast_os.isabs(path) == posixpath.isabs(path)
    assert fast_os.abspath(path) == posixpath.abspath(path)
    assert fast_os.join(path, "x", path) == posixpath.join(path, "x", path)
    assert fast_os.join("base", path) == posixpath.join("base", path)


def test_file_predicates_match_os_path(tree):
    for name in ("a", "rel", "dangling", "self", "missing", "a/b/c"):
        path = os.path.join(tree, name)
        assert (fast_os.exists(path), fast_os.isdir(path), fast_os.isfile(path), fast_os.islink(path)) == \
            (os.path.exists(path), os.path.isdir(path), os.path.isfile(path), os.path.islink(path)), name
    assert fast_os.path.isdir is fast_os.isdir and fast_os.path.join("a", "b") == "a/b"


def test_makedirs_gives_the_mode_to_the_last_directory_only(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    fast_os.makedirs(str(ours / "x" / "y"), 0o700, exist_ok=True)
    os.makedirs(str(theirs / "x" / "y"), 0o700, exist_ok=True)
    for sub in ("x", "x/y"):
        assert stat.S_IMODE(os.stat(ours / sub).st_mode) == stat.S_IMODE(os.stat(theirs / sub).st_mode)
    fast_os.makedirs(str(ours / "x" / "y"), 0o700, exist_ok=True)
    with pytest.raises(FileExistsError):
        fast_os.makedirs(str(ours / "x"), 0o700)


ENV = {b"PATH": os.environb.get(b"PATH", b""), b"PLAIN": b"x", b"UNICODE": "caf\u00e9".encode(),
       b"RAW": b"\xff\xfe", b"EMPTY": b""}
LIB = os.path.dirname(os.path.dirname(os.path.dirname(fast_os.__file__)))
TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EQUIVALENCE = os.path.join(TESTS, "helpers", "fast_os_equivalence.py")
SUPPORTED = ("3.11", "3.12", "3.13")
# Read at import, before the autouse fixture replaces HOME (pyenv and its shims look there)
PYENV_ROOT = os.environ.get("PYENV_ROOT") or os.path.join(pwd.getpwuid(os.getuid()).pw_dir, ".pyenv")
PATH_AT_START = os.environ.get("PATH", "")


def _interpreter(version):
    """An interpreter of CPython `version`: pyenv's newest, else python<version> on PATH; or None."""
    import glob
    import shutil

    candidates = sorted(glob.glob(os.path.join(PYENV_ROOT, "versions", f"{version}.*", "bin", f"python{version}")),
                        key=lambda p: [int(n) for n in p.split("/versions/")[1].split("/")[0].split(".")
                                       if n.isdigit()])
    candidates = candidates[::-1] + [p for p in [shutil.which(f"python{version}", path=PATH_AT_START)] if p]
    for candidate in candidates:
        try:
            done = subprocess.run([candidate, "-I", "-S", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                  capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == version:  # a pyenv shim without the version fails here
            return candidate
    return None


@pytest.mark.parametrize("version", SUPPORTED)
def test_fast_os_equals_os_under_each_supported_cpython(version, tmp_path):
    """The same comparisons as above (seeded, stdlib only) plus the environment, per interpreter."""
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"CPython {version} not found "
                    f"(neither {PYENV_ROOT}/versions/{version}.* nor python{version} on PATH)")
    done = subprocess.run([python, "-I", "-S", EQUIVALENCE, LIB, str(tmp_path)], env=ENV, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert ".".join(map(str, report["version"][:2])) == version
    assert report["comparisons"] > 10000 and report["mismatches"] == []


def test_the_environment_is_read_when_asked_never_copied():
    """getenv decodes what os.environ decodes (undecodable bytes kept as os keeps them)."""
    code = ("import os, sys; sys.path.insert(0, sys.argv[1]); from intent_loop.base import fast_os; "
            "os.environ['LATER'] = 'set after import'; "
            "keys = ['PLAIN', 'UNICODE', 'RAW', 'EMPTY', 'LATER', 'MISSING']; "
            "print([fast_os.getenv(k) == os.environ.get(k) for k in keys] == [True] * 6, hasattr(fast_os, 'environ'))")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, LIB], env=ENV, capture_output=True, text=True,
                          timeout=60)
    assert done.stdout.strip() == "True False", done.stderr
    assert fast_os.Environment.__slots__ == ()  # the view holds nothing of its own


def test_the_hook_path_never_imports_os():
    """The point of the module: no hook entry point (or what a hook run loads) pulls in `os`."""
    loaded = costly_modules_loaded(
        "import hooks.session_start, hooks.user_prompt, hooks.stop\n"
        "import intent_loop.storage.ledger, intent_loop.storage.lock, intent_loop.storage.atomic, "
        "intent_loop.storage.request_index, intent_loop.storage.request_scan\n"
        "import intent_loop.ops.apply_commands, intent_loop.guard.provider, intent_loop.intent.private_mode, "
        "intent_loop.intent.session_view",
        ("os", "posixpath", "_collections_abc"))
    assert loaded == []

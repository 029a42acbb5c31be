"""The launcher of every binary: launch/launcher.sh with the Python of launch/fast_path.py and
launch/launcher.py embedded by build.py.

The shell finds the data root with launch/data_root.sh, the shell's copy of base/data_root.py
(tests/launch/test_data_root_sh.py holds the two to one answer). The generated code is checked as
built (read back from dist/), not only as the modules it comes from: build.py rewrites imports when
it embeds them.
"""
import functools
import importlib.util
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.data_root_table import environments, found, make_homes
from helpers.dist import requires_dist
from intent_loop.base.data_root import find_data_root
from intent_loop.launch import fast_path, launcher
from intent_loop.launch.binaries import BINARIES

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
LAUNCH = ROOT / "lib" / "intent_loop" / "launch"
LAUNCHER_SH = LAUNCH / "launcher.sh"


def _launcher_root_block():
    """launcher.sh's data-root lines, with launch/data_root.sh where build.py embeds it."""
    template = LAUNCHER_SH.read_text()
    start = template.index("\n@DATA_ROOT@\n") + 1
    end = template.index('\nfind_data_root "$self"\n', start) + len('\nfind_data_root "$self"\n')
    return template[start:end].replace("@DATA_ROOT@", (LAUNCH / "data_root.sh").read_text())


def _shell_root(env, executable, cwd=None):
    done = subprocess.run(["/bin/sh", "-c", _launcher_root_block() + 'printf %s "$root"', executable], env=env,
                          cwd=cwd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def homes(tmp_path_factory):
    return make_homes(tmp_path_factory.mktemp("homes"))


def _plugin_root(base):
    root = base / "codex-home" / "plugins" / "cache" / "market" / "intent-loop" / "0.1.0"
    (root / "dist").mkdir(parents=True)
    (base / "codex-home" / "config.toml").write_text("")  # a Codex home (docs/storage.md, step 4)
    return root


def test_a_relative_binary_in_a_plugin_cache_is_not_taken_for_home_codex(tmp_path):
    """A plugin's .mcp.json starts `./dist/intent-loop-mcp` with the plugin root as cwd and gives
    the server neither CODEX_HOME nor PLUGIN_*: the shell resolves $0 against the cwd and finds the
    plugin cache's Codex home, as Python does, although ~/.codex exists. (The rule itself, over every
    variable, is tests/launch/test_data_root_sh.py.)"""
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    plugin_root = _plugin_root(tmp_path)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    expected = (str(tmp_path / "codex-home" / "plugin-data" / "intent-loop" / "v1"), "plugin cache path")
    for executable, cwd in (("./dist/intent-loop-mcp", plugin_root), ("dist/intent-loop-mcp", plugin_root),
                            ("./intent-loop-mcp", plugin_root / "dist")):
        assert _shell_root({**env, "PWD": str(cwd)}, executable, cwd=cwd) == expected[0], (executable, cwd)
        assert find_data_root(env, os.path.join(cwd, executable)) == expected
    # the same relative start outside any plugin cache finds ~/.codex in the shell
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _shell_root({**env, "PWD": str(elsewhere)}, "./dist/intent-loop-mcp", cwd=elsewhere) == str(
        home / ".codex" / "plugin-data" / "intent-loop" / "v1")


# -- the modules the launcher is made of ------------------------------------------------------
def test_the_launcher_modules_import_and_the_template_parses():
    assert callable(launcher.run) and callable(fast_path.run_extracted)
    done = subprocess.run(["/bin/sh", "-n", str(LAUNCHER_SH)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_the_python_launcher_puts_the_runtime_under_the_data_root(tmp_path):
    binary, build_id = "/opt/dist/intent-loop-stop", "ab" * 32
    env = {"INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    expected = str(tmp_path / "data" / "runtime" / build_id)
    assert launcher.runtime_root(env, binary, build_id, is_hook=True) == expected
    assert launcher.runtime_root({}, binary, build_id, is_hook=True) is None  # a hook without a root answers at once
    # the command line does not create a data root: it runs from the binary's own zip instead
    assert launcher.runtime_root(dict(env, TMPDIR=str(tmp_path)), binary, build_id, is_hook=False) is None
    assert not (tmp_path / "data").exists()
    (tmp_path / "data").mkdir()
    assert launcher.runtime_root(env, binary, build_id, is_hook=False) == expected


# -- the launcher as built --------------------------------------------------------------------
def _prefix(binary):
    data = (DIST / binary.name).read_bytes()
    return data[: data.index(b"PK\x03\x04")].decode()


@pytest.fixture(scope="module")
def fake_python(tmp_path_factory):
    """An interpreter stand-in that records the arguments the shell passes it, as a JSON object (a hook's
    launcher passes on nothing else). INTENT_LOOP_PYTHON is used as given, wherever it lies."""
    path = tmp_path_factory.mktemp("fake") / "python"
    path.write_text(f"#!{sys.executable}\nimport json, sys\nprint(json.dumps({{'argv': sys.argv[1:]}}))\n")
    path.chmod(0o755)
    return str(path)


GUARD_END = "    except OSError:pass\n"  # the last line of find_python.sh's guard_code


def _argv(done):
    return json.loads(done.stdout)["argv"]


def _generated_code(binary, fake_python, tmp_path, *, fast):
    """The `-c` code the built binary's shell hands to Python, as Python receives it."""
    data = tmp_path / "data"
    if fast:
        build_id = _build_id(binary)
        site = data / "runtime" / build_id / f"{binary.name}_{build_id}" / "site-packages"
        site.mkdir(parents=True)
        (site / fast_path.MARKER).touch()
    env = {"PATH": "/usr/bin:/bin", "INTENT_LOOP_PYTHON": fake_python, "INTENT_LOOP_DATA_DIR": str(data)}
    done = subprocess.run([str(DIST / binary.name), "arg"], env=env, input=b"", capture_output=True, timeout=30)
    argv = _argv(done)
    assert argv[:3] == ["-I", "-S", "-c"], argv
    assert argv[-2:] == [str(DIST / binary.name), "arg"]
    assert argv[3].startswith("import sys\nif sys.version_info<(3,11):")  # before any import
    assert argv[4] == ""  # no record: INTENT_LOOP_PYTHON is used as given, without an identity to compare
    return argv[3][argv[3].index(GUARD_END) + len(GUARD_END):]


@requires_dist
def test_the_built_mcp_binary_started_relatively_from_a_plugin_cache_skips_the_home_codex_runtime(
        tmp_path, fake_python):
    """As Codex starts a plugin's server: relative path, cwd the plugin root, only HOME and PATH,
    while ~/.codex holds a complete runtime of this very build. The shell must not take that
    runtime's fast path; the long way resolves the plugin cache's Codex home."""
    binary = next(b for b in BINARIES if b.name == "intent-loop-mcp")
    build_id = _build_id(binary)
    home = tmp_path / "home"
    site = (home / ".codex" / "plugin-data" / "intent-loop" / "v1" / "runtime" / build_id /
            f"{binary.name}_{build_id}" / "site-packages")
    site.mkdir(parents=True)
    (site / fast_path.MARKER).touch()
    plugin_root = _plugin_root(tmp_path)
    shutil.copy2(DIST / binary.name, plugin_root / "dist" / binary.name)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "INTENT_LOOP_PYTHON": fake_python}
    done = subprocess.run(["./dist/" + binary.name], cwd=plugin_root, env=env, input=b"", capture_output=True,
                          timeout=30)
    argv = _argv(done)
    assert argv[:3] == ["-I", "-S", "-c"] and argv[5:] == ["./dist/" + binary.name], argv[5:]
    assert "def find_data_root" in argv[3]  # the long way, not the fast path's site-packages
    # from anywhere else the same home's runtime is taken at once (the fast path still works)
    done = subprocess.run([str(DIST / binary.name)], env=env, input=b"", capture_output=True, timeout=30)
    assert _argv(done)[5] == str(site)


def _build_id(binary):
    import re

    return re.search(r"/runtime/([0-9a-f]{64})/", _prefix(binary)).group(1)


@requires_dist
@pytest.mark.parametrize("binary", BINARIES, ids=lambda b: b.name)
def test_every_built_prefix_is_valid_sh(binary, tmp_path):
    prefix = tmp_path / "prefix.sh"
    prefix.write_text(_prefix(binary))
    done = subprocess.run(["/bin/sh", "-n", str(prefix)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    # doctor reads the interpreter from the first `:-` of the file: the py= line
    text = _prefix(binary)
    assert text.index(":-") > text.index("py=") and text.index(":-") < text.index("\n", text.index("py="))
    assert re.search(r"@[A-Z_]+@", text) is None  # every placeholder filled


@requires_dist
@pytest.mark.parametrize("binary", BINARIES, ids=lambda b: b.name)
def test_every_built_prefix_passes_shellcheck(binary, tmp_path):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    prefix = tmp_path / "prefix.sh"
    prefix.write_text(_prefix(binary))
    done = subprocess.run(["shellcheck", "--shell=sh", str(prefix)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@requires_dist
@pytest.mark.parametrize("binary", BINARIES, ids=lambda b: b.name)
def test_the_embedded_python_compiles_and_calls_the_tables_entry(binary, fake_python, tmp_path):
    fast = _generated_code(binary, fake_python, tmp_path / "fast", fast=True)
    slow = _generated_code(binary, fake_python, tmp_path / "slow", fast=False)
    hook = f"is_hook={binary.is_hook}"
    assert fast.rstrip().endswith(f"run_extracted({binary.module!r}, {binary.function!r}, {hook})")
    assert slow.rstrip().endswith(f"run({_build_id(binary)!r}, {binary.module!r}, {binary.function!r}, {hook})")
    compile(fast, "<fast path>", "exec")
    compile(slow, "<launcher>", "exec")
    assert "intent_loop" not in fast.replace(repr(binary.module), "")  # nothing to import before the runtime
    assert "from intent_loop" not in slow and "import intent_loop" not in slow


def _definitions(code):
    """Everything the generated code defines, without running its last line (the call)."""
    body, _call = code.rstrip().rsplit("\n", 1)
    namespace = {}
    exec(compile(body, "<generated launcher>", "exec"), namespace)
    return namespace


@requires_dist
def test_the_generated_launcher_resolves_the_data_root_find_data_root_resolves(homes, fake_python, tmp_path):
    """build.py embeds data_root.py with the real `os` in place of fast_os: same answers."""
    binary = BINARIES[2]
    generated = _definitions(_generated_code(binary, fake_python, tmp_path, fast=False))
    for env, executable in itertools.islice(environments(homes), 0, None, 7):
        assert found(generated["find_data_root"], env, executable) == found(find_data_root, env, executable), env
        for is_hook in (True, False):
            ours = found(functools.partial(generated["runtime_root"], build_id="ab" * 32, is_hook=is_hook),
                          env, executable)
            module = found(functools.partial(launcher.runtime_root, build_id="ab" * 32, is_hook=is_hook),
                            env, executable)
            assert ours == module, (env, is_hook)
    assert generated["fast_os"] is os


def test_the_fast_path_runs_the_entry_without_loading_os(tmp_path):
    """Run the fast path's code under -I -S on a fake runtime; the entry reports what was loaded."""
    build = _load_build_py()
    code = build.embedded_source("launch/fast_path.py") + "\nrun_extracted('probe_hook', 'main', is_hook=True)\n"
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "probe_hook.py").write_text("import sys\ndef main():\n    print(sys.argv, 'os' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(site), "/x/binary", "a1"],
                          capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['/x/binary', 'a1'] False"


def test_the_fast_path_drops_the_marker_of_a_damaged_runtime_and_reruns_the_shell(tmp_path):
    build = _load_build_py()
    code = build.embedded_source("launch/fast_path.py") + "\nrun_extracted('missing_hook', 'main', is_hook=True)\n"
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / fast_path.MARKER).touch()
    rerun = tmp_path / "binary"
    rerun.write_text('printf "shell again: %s" "$1"\n')
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code, str(site), str(rerun), "a1"],
                          capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert done.stdout == "shell again: a1", done.stderr
    assert not (site / fast_path.MARKER).exists()


def _load_build_py():
    spec = importlib.util.spec_from_file_location("build_for_test", ROOT / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build

"""Where data lives: every branch of data-root resolution, project identity, the directory layout."""
import hashlib
import os
import sys

import pytest

from intent_loop.base import fast_os as lib_os
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage import paths

SUFFIX = os.path.join("plugin-data", "intent-loop", "v1")


def _error_code(call):
    with pytest.raises(IntentLoopError) as info:
        call()
    return info.value.code


# -- the data root, branch by branch (first that applies wins) -------------------------------------

def test_data_root_explicit_absolute_is_the_root_itself(tmp_path):
    env = {"INTENT_LOOP_DATA_DIR": str(tmp_path / "d" / ".." / "data")}

    assert paths.resolve_data_root(env) == (str(tmp_path / "data"), "INTENT_LOOP_DATA_DIR")


def test_data_root_explicit_relative_is_rejected():
    env = {"INTENT_LOOP_DATA_DIR": "relative/data", "CODEX_HOME": "/somewhere/else"}

    assert _error_code(lambda: paths.resolve_data_root(env)) == ErrorCode.DATA_DIR_REQUIRED


def test_data_root_codex_home(tmp_path):
    env = {"CODEX_HOME": str(tmp_path / "codex"), "PLUGIN_DATA": "/ignored/plugins/data/x"}

    assert paths.resolve_data_root(env) == (os.path.join(str(tmp_path / "codex"), SUFFIX), "CODEX_HOME")


def test_data_root_relative_codex_home_is_never_used(tmp_path):
    env = {"CODEX_HOME": "codex", "PLUGIN_DATA": str(tmp_path / "h" / "plugins" / "data" / "x")}

    root, how = paths.resolve_data_root(env)

    assert (root, how) == (os.path.join(str(tmp_path / "h"), SUFFIX), "PLUGIN_DATA (Codex layout)")


@pytest.mark.parametrize("trailing", ["", "/"], ids=["plain", "trailing-slash"])
def test_data_root_plugin_data_with_codex_shape_goes_three_levels_up(tmp_path, trailing):
    codex_home = tmp_path / "codex-home"
    env = {"PLUGIN_DATA": str(codex_home / "plugins" / "data" / "intent-loop") + trailing}

    root, how = paths.resolve_data_root(env)

    assert root == os.path.join(str(codex_home), SUFFIX)
    assert how == "PLUGIN_DATA (Codex layout)"


@pytest.mark.parametrize(
    "plugin_data",
    ["/srv/pdata", "/srv/plugins/other/intent-loop", "/plugins/data/intent-loop", "/srv/plugins/data",
     "/h/.codex/plugins/data/market/nested"],
    ids=["plain-dir", "not-data", "no-home-above", "no-plugin-name", "nested"],
)
def test_data_root_plugin_data_of_another_shape_is_no_store_of_ours(tmp_path, plugin_data):
    """Only Codex's layout names a store: any other PLUGIN_DATA (a per-plugin directory) would split
    the data from what the other host and the command line find (issue 37)."""
    root, how = paths.resolve_data_root({"PLUGIN_DATA": plugin_data, "HOME": str(tmp_path)})

    assert (root, how) == (os.path.join(str(tmp_path), ".codex", SUFFIX), "~/.codex")


def test_claude_codes_plugin_data_variable_is_never_read(tmp_path):
    env = {"CLAUDE_PLUGIN_DATA": str(tmp_path / "h" / "plugins" / "data" / "x"), "HOME": str(tmp_path)}

    assert paths.resolve_data_root(env)[1] == "~/.codex"


def _plugin_copy(home):
    return home / "plugins" / "cache" / "intent-loop" / "0.1.0" / "bin" / "intent-loop"


def test_data_root_from_executable_inside_a_codex_homes_plugin_cache(tmp_path):
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text("[plugins]\n")

    root, how = paths.resolve_data_root({}, executable=str(_plugin_copy(codex_home)), home=str(tmp_path / "nohome"))

    assert (root, how) == (os.path.join(str(codex_home), SUFFIX), "plugin cache path")


@pytest.mark.parametrize("home_name", [".claude", "codex-home-without-config"])
def test_a_plugin_cache_outside_a_codex_home_does_not_decide(tmp_path, home_name):
    """Claude Code copies a plugin to ~/.claude/plugins/cache/<m>/<p>/<v>/, Codex's very layout: only a
    home holding Codex's config.toml is taken for a Codex home."""
    (tmp_path / home_name).mkdir()
    executable = str(_plugin_copy(tmp_path / home_name))

    root, how = paths.resolve_data_root({}, executable=executable, home=str(tmp_path / "user"))

    assert (root, how) == (os.path.join(str(tmp_path / "user"), ".codex", SUFFIX), "~/.codex")


@pytest.mark.parametrize(
    "executable",
    ["/usr/local/bin/intent-loop", "/plugins/cache/intent-loop/bin/x", "/opt/plugins/cachex/bin/x"],
    ids=["elsewhere", "no-home-prefix", "near-miss"],
)
def test_data_root_executable_elsewhere_does_not_decide(tmp_path, executable):
    root, how = paths.resolve_data_root({}, executable=executable, home=str(tmp_path))

    assert how == "~/.codex"


@pytest.mark.parametrize("dot_codex", ["missing", "directory"])
def test_home_codex_is_the_store_whether_or_not_codex_made_it(tmp_path, dot_codex):
    """The first host to run creates it: Claude Code alone, or the command line, finds the same root."""
    if dot_codex == "directory":
        (tmp_path / ".codex").mkdir()

    root, how = paths.resolve_data_root({"HOME": str(tmp_path)})

    assert (root, how) == (os.path.join(str(tmp_path), ".codex", SUFFIX), "~/.codex")


@pytest.mark.parametrize("home", [None, "", "relative/home"], ids=["unset", "empty", "relative"])
def test_data_root_nothing_applies_is_data_dir_required(home):
    env = {} if home is None else {"HOME": home}

    assert _error_code(lambda: paths.resolve_data_root(env, home=home)) == ErrorCode.DATA_DIR_REQUIRED


def test_data_root_order_of_precedence(tmp_path):
    (tmp_path / "exe-home").mkdir()
    (tmp_path / "exe-home" / "config.toml").write_text("")
    executable = str(tmp_path / "exe-home" / "plugins" / "cache" / "p" / "bin")
    env = {
        "INTENT_LOOP_DATA_DIR": str(tmp_path / "explicit"),
        "CODEX_HOME": str(tmp_path / "codex"),
        "PLUGIN_DATA": str(tmp_path / "pd-home" / "plugins" / "data" / "intent-loop"),
    }
    seen = []
    for drop in ("INTENT_LOOP_DATA_DIR", "CODEX_HOME", "PLUGIN_DATA", "executable"):
        seen.append(paths.resolve_data_root(env, executable=executable, home=str(tmp_path))[1])
        if drop == "executable":
            executable = None
        else:
            del env[drop]
    seen.append(paths.resolve_data_root(env, executable=executable, home=str(tmp_path))[1])

    assert seen == ["INTENT_LOOP_DATA_DIR", "CODEX_HOME", "PLUGIN_DATA (Codex layout)", "plugin cache path", "~/.codex"]


def test_data_root_resolution_creates_nothing(tmp_path):
    (tmp_path / ".codex").mkdir()
    before = sorted(os.listdir(tmp_path / ".codex"))

    root, _how = paths.resolve_data_root({}, home=str(tmp_path))

    assert not os.path.exists(root)
    assert sorted(os.listdir(tmp_path / ".codex")) == before


# -- project identity --------------------------------------------------------------------------------

def _expected_id(real_root):
    return hashlib.sha256(b"intent-loop-project-v1\x00" + real_root.encode("utf-8")).hexdigest()


def test_project_id_known_vector_for_the_filesystem_root():
    assert paths.project_id_for("/") == "55e1af5a54dc77cd3a898c6c00c8a85e141531bc35bb8605fa642b448dbcbeb1"
    assert paths.project_id_for("/") == _expected_id("/")


def test_project_id_is_sha256_of_domain_nul_and_realpath(workspace, data_root):
    project = paths.project_paths(data_root, workspace)

    assert project.project_id == _expected_id(os.path.realpath(workspace))
    assert project.root == os.path.realpath(workspace)
    assert len(project.project_id) == 64 and project.project_id == project.project_id.lower()


def test_project_id_of_non_ascii_root_uses_utf8(tmp_path, data_root):
    root = tmp_path / "Zürich 仪表盘"
    root.mkdir()

    assert paths.project_paths(data_root, str(root)).project_id == _expected_id(os.path.realpath(root))


def test_symlinked_cwd_resolves_to_the_same_project(tmp_path, workspace, data_root):
    link = tmp_path / "link-to-workspace"
    link.symlink_to(workspace)
    dotted = os.path.join(workspace, "sub", "..")
    os.mkdir(os.path.join(workspace, "sub"))

    ids = {paths.project_paths(data_root, p).project_id for p in (workspace, str(link), dotted, workspace + "/")}

    assert len(ids) == 1


def test_different_directories_are_different_projects(tmp_path, data_root):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    assert (paths.project_paths(data_root, str(tmp_path / "a")).project_id
            != paths.project_paths(data_root, str(tmp_path / "b")).project_id)


@pytest.mark.parametrize("kind", ["relative", "missing", "file", "empty", "none"])
def test_invalid_project_roots_are_rejected(tmp_path, data_root, monkeypatch, kind):
    (tmp_path / "a-file").write_text("x")
    monkeypatch.chdir(tmp_path)
    cwd = {
        "relative": "a-file/..",
        "missing": str(tmp_path / "missing"),
        "file": str(tmp_path / "a-file"),
        "empty": "",
        "none": None,
    }[kind]

    assert _error_code(lambda: paths.project_paths(data_root, cwd)) == ErrorCode.INVALID_PROJECT_ROOT


@pytest.mark.parametrize("cwd", ["\\\\server\\share\\repo", "//?/C:/repo", "//./pipe/x", "\\\\?\\C:\\repo"])
def test_unc_and_device_paths_are_rejected_before_any_filesystem_call(monkeypatch, data_root, cwd):
    def no_filesystem(*_args, **_kwargs):
        raise AssertionError("the filesystem was consulted for a UNC/device path")

    with monkeypatch.context() as patched:
        for name in ("stat", "lstat", "listdir", "readlink", "realpath"):
            patched.setattr(lib_os, name, no_filesystem)
        code = _error_code(lambda: paths.project_paths(data_root, cwd))

    assert code == ErrorCode.INVALID_PROJECT_ROOT


@pytest.mark.skipif(sys.platform == "darwin", reason="APFS refuses file names that are not UTF-8")
def test_root_that_is_not_utf8_is_rejected(tmp_path, data_root):
    raw = os.path.join(os.fsencode(tmp_path), b"bad-\xff-name")
    os.mkdir(raw)

    assert _error_code(lambda: paths.project_paths(data_root, os.fsdecode(raw))) == ErrorCode.INVALID_PROJECT_ROOT


# -- the layout ---------------------------------------------------------------------------------

def test_layout_is_fixed_below_the_project_id(data_root, workspace):
    project = paths.project_paths(data_root, workspace)
    base = os.path.join(data_root, "projects", project.project_id)

    assert project.dir == base
    assert project.ledger == os.path.join(base, "ledger.jsonl")
    assert project.lock_dir == os.path.join(base, "ledger.lock")
    assert project.private_dir == os.path.join(base, "private-sessions")
    assert project.quarantine_dir == os.path.join(base, "quarantine")
    assert project.cache_dir == os.path.join(base, "cache")


def test_user_path_segments_never_become_storage_segments(tmp_path, data_root):
    root = tmp_path / "Secret-Client-Name"
    root.mkdir()
    project = paths.project_paths(data_root, str(root))

    paths.ensure_project_layout(project)

    for dirpath, dirnames, filenames in os.walk(data_root):
        assert all("Secret-Client-Name" not in name for name in dirnames + filenames + [dirpath])


def test_data_root_may_be_reached_through_a_symlink(tmp_path, workspace):
    real = tmp_path / "real-data"
    real.mkdir()
    (tmp_path / "data-link").symlink_to(real)
    project = paths.project_paths(str(tmp_path / "data-link"), workspace)

    paths.ensure_project_layout(project)

    assert os.path.isdir(real / "projects" / project.project_id / "cache")


def test_a_relative_override_in_the_process_environment_is_data_dir_required(monkeypatch):
    """The hooks and the MCP server pass fast_os.environment, which is read by get() only: the
    refusal must be the stable code there too, never an internal error."""
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", "relative/dir")

    assert _error_code(lambda: paths.resolve_data_root(lib_os.environment)) == ErrorCode.DATA_DIR_REQUIRED

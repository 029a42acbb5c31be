"""install / uninstall through dist/intent-loop against a temporary Codex home; plugin files' shape;
golden bytes of what Codex hashes (a changed handler is silently untrusted until re-trusted)."""
import importlib.util
import json
import os
import shlex
import subprocess

import pytest

from helpers.dist import requires_dist
from intent_loop.launch import binaries as table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(ROOT, "dist")
CLI = os.path.join(DIST, "intent-loop")
GOLDEN = os.path.join(ROOT, "tests", "fixtures", "install")
BINARIES = tuple(binary.name for binary in table.BINARIES)
HANDLER_KEYS = {"type", "command", "timeout", "statusMessage", "commandWindows", "async", "additionalContextLimit"}
FOREIGN = {"type": "command", "command": "/usr/local/bin/my-audit-hook --log", "timeout": 30}


def run(*args, home):
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    env["HOME"] = str(home)
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=60)


def check_codex_shape(config):
    """Only keys Codex accepts at every level it checks."""
    assert set(config) <= {"description", "hooks"}
    for _event, groups in config["hooks"].items():
        for group in groups:
            assert set(group) <= {"matcher", "hooks"}
            for handler in group["hooks"]:
                assert set(handler) <= HANDLER_KEYS
                assert handler["type"] == "command" and isinstance(handler["command"], str)


def ours(config):
    return [(event, group.get("matcher"), handler) for event, groups in config["hooks"].items()
            for group in groups for handler in group["hooks"] if "/intent-loop-" in handler["command"]]


@pytest.fixture
def home(tmp_path):
    return tmp_path / "home"


@pytest.fixture
def codex(home):
    path = home / ".codex"
    path.mkdir(parents=True)
    (path / "hooks.json").write_text(json.dumps(
        {"description": "mine", "hooks": {"Stop": [{"hooks": [FOREIGN]}],
                                          "PreToolUse": [{"matcher": "Bash", "hooks": [FOREIGN]}]}}, indent=2))
    return path


@requires_dist
def test_dry_run_writes_nothing(home, codex):
    before = (codex / "hooks.json").read_bytes()
    proc = run("install", home=home)
    assert proc.returncode == 0, proc.stderr
    assert "dry run" in proc.stdout and "+" in proc.stdout and "/hooks" in proc.stdout
    assert (codex / "hooks.json").read_bytes() == before
    # plugin-data: the launcher's runtime cache
    assert sorted(n for n in os.listdir(codex) if n != "plugin-data") == ["hooks.json"]


@requires_dist
def test_dry_run_without_codex_home_creates_nothing(home):
    proc = run("install", "--json", home=home)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["changed"] is True
    assert not home.exists() or not (home / ".codex").exists()


@requires_dist
def test_apply_merges_keeps_foreign_and_is_idempotent(home, codex):
    proc = run("install", "--apply", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["applied"] and result["backup"] and os.path.basename(result["backup"]).startswith("hooks.json.bak-")
    assert json.loads(open(result["backup"]).read())["description"] == "mine"
    config = json.loads((codex / "hooks.json").read_text())
    check_codex_shape(config)
    assert config["description"] == "mine"
    assert config["hooks"]["PreToolUse"] == [{"matcher": "Bash", "hooks": [FOREIGN]}]
    assert {"hooks": [FOREIGN]} in config["hooks"]["Stop"]
    found = {event: (matcher, handler) for event, matcher, handler in ours(config)}
    assert set(found) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert found["SessionStart"][0] == "startup|resume|clear|compact|fork"
    python = os.path.realpath(result["python"])
    for _event, (_matcher, handler) in found.items():
        assert handler["timeout"] == 5 and handler["statusMessage"] == "intent-loop"
        prefix, binary = handler["command"].split(" ", 1)
        assert prefix == f"INTENT_LOOP_PYTHON={python}" and os.path.isabs(python)
        assert os.path.isabs(binary) and os.access(binary, os.X_OK)
        assert os.path.dirname(binary) == os.path.realpath(DIST)
    after = (codex / "hooks.json").read_bytes()
    again = run("install", "--apply", home=home)
    assert again.returncode == 0 and "already installed" in again.stdout
    assert (codex / "hooks.json").read_bytes() == after
    assert len([n for n in os.listdir(codex) if n.startswith("hooks.json.bak-")]) == 1


@requires_dist
def test_codex_home_option_and_env(home, tmp_path):
    target = tmp_path / "elsewhere"
    proc = run("install", "--apply", "--codex-home", str(target), home=home)
    assert proc.returncode == 0, proc.stderr
    config = json.loads((target / "hooks.json").read_text())
    check_codex_shape(config)
    assert len(ours(config)) == 3


@requires_dist
def test_uninstall_removes_only_ours(home, codex):
    original = json.loads((codex / "hooks.json").read_text())
    assert run("install", "--apply", home=home).returncode == 0
    installed = (codex / "hooks.json").read_bytes()
    dry = run("uninstall", home=home)
    assert dry.returncode == 0 and "dry run" in dry.stdout
    assert (codex / "hooks.json").read_bytes() == installed
    proc = run("uninstall", "--apply", home=home)
    assert proc.returncode == 0, proc.stderr
    config = json.loads((codex / "hooks.json").read_text())
    assert config == original
    assert "nothing to change" in run("uninstall", "--apply", home=home).stdout


@pytest.mark.parametrize("content", ["{not json", "[]", '{"hooks": []}', '{"hooks": {"Stop": {}}}',
                                     '{"hooks": {"Stop": [{"matcher": "x"}]}}', '{"hooks": {}, "extra": 1}'])
@requires_dist
def test_invalid_hooks_json_is_refused_and_unchanged(home, codex, content):
    (codex / "hooks.json").write_text(content)
    for verb in ("install", "uninstall"):
        proc = run(verb, "--apply", home=home)
        assert proc.returncode == 1
        assert "HOOKS_CONFIG_INVALID" in proc.stderr
        assert (codex / "hooks.json").read_text() == content
    proc = run("install", "--json", home=home)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "HOOKS_CONFIG_INVALID"
    # plugin-data: the launcher's runtime cache
    assert sorted(n for n in os.listdir(codex) if n != "plugin-data") == ["hooks.json"]


def test_is_ours_recognizes_only_intent_loop_binaries():
    from intent_loop.cli.hooks_config import is_ours

    assert is_ours({"command": "INTENT_LOOP_PYTHON=/usr/bin/python3 /opt/x/dist/intent-loop-stop"})
    assert is_ours({"command": "'/path with space/intent-loop-user-prompt'"})
    assert not is_ours({"command": "/usr/bin/intent-loop status"})
    assert not is_ours({"command": "/usr/local/bin/my-audit-hook --log intent-loop-stop"})
    assert not is_ours({"command": "echo 'unterminated"})
    assert not is_ours("nope")


def test_plugin_files_use_only_keys_codex_accepts():
    with open(os.path.join(ROOT, "hooks.json")) as fh:
        config = json.load(fh)
    check_codex_shape(config)
    commands = {event: groups[0]["hooks"][0] for event, groups in config["hooks"].items()}
    assert set(commands) == {"SessionStart", "UserPromptSubmit", "Stop"}
    assert config["hooks"]["SessionStart"][0]["matcher"] == "startup|resume|clear|compact|fork"
    entries = {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt", "Stop": "stop"}
    for event, handler in commands.items():  # the repository plugin runs the committed source launcher
        assert handler["command"] == f'"${{PLUGIN_ROOT}}/hooks/intent-loop" {entries[event]}'
        assert handler["commandWindows"].startswith('echo {"continue":true,"systemMessage":')
        assert handler["timeout"] == 5 and handler["statusMessage"] == "intent-loop"
    with open(os.path.join(ROOT, ".codex-plugin", "plugin.json")) as fh:
        manifest = json.load(fh)
    assert manifest["name"] == "intent-loop" and manifest["version"] == _load_build_py().project_version()
    for key, value in (("hooks", "./hooks.json"), ("mcpServers", "./.mcp.json"), ("skills", "./skills/")):
        assert manifest[key] == value  # Codex takes only ./-relative paths inside the plugin
    # .mcp.json starts under both hosts: tests/mcp/test_mcp_install.py runs it as each host does
    with open(os.path.join(ROOT, ".agents", "plugins", "marketplace.json")) as fh:
        market = json.load(fh)
    [entry] = market["plugins"]  # the repository root is the plugin: no copy of lib/ anywhere
    assert (market["name"], entry["name"], entry["source"]) == ("intent-loop", "intent-loop",
                                                                 {"source": "local", "path": "./"})


# -- golden: what Codex hashes stays byte-identical ---------------------------------------------
def _golden(name):
    with open(os.path.join(GOLDEN, name), "rb") as fh:
        return fh.read()


def _previous_build():
    return json.loads(_golden("previous-build.json"))


def _load_build_py():
    spec = importlib.util.spec_from_file_location("build_for_test", os.path.join(ROOT, "build.py"))
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def test_binary_names_are_the_ones_installed_users_have():
    assert BINARIES == ("intent-loop-session-start", "intent-loop-user-prompt", "intent-loop-stop", "intent-loop",
                        "intent-loop-mcp")
    assert all(hook.name.startswith(table.HOOK_PREFIX) for hook in table.HOOKS)
    assert not table.BY_NAME["intent-loop"].is_hook  # `is_ours` must never match the CLI itself


def test_plugin_hooks_json_is_generated_from_the_table_byte_identical_to_the_golden():
    build = _load_build_py()
    golden = _golden("plugin-hooks.json")  # the repository plugin's, committed at the root
    assert build.plugin_hooks_json().encode() == golden
    with open(os.path.join(ROOT, "hooks.json"), "rb") as fh:
        assert fh.read() == golden
    assert build.plugin_hooks_json(build.binary_command).encode() == _golden("marketplace-hooks.json")


@pytest.mark.parametrize("before, after", [(None, "previous-build-fresh.hooks.json"),
                                           ("foreign.hooks.json", "previous-build-merged.hooks.json")])
def test_install_writes_the_handlers_the_previous_build_wrote_byte_for_byte(before, after):
    from intent_loop.cli.hooks_config import desired_groups, merged, render

    previous = _previous_build()
    config = json.loads(_golden(before)) if before else None
    groups = desired_groups(previous["dist"], previous["python"])
    assert render(merged(config, groups)) == _with_fork(_golden(after))


def _with_fork(data):
    """A previous build's bytes as this build writes them: the SessionStart matcher takes `fork` (issue
    37: Claude Code's --fork-session and Codex's /fork; the one change, which asks Codex to trust the
    SessionStart hook again)."""
    old, new = b'"matcher": "startup|resume|clear|compact"', b'"matcher": "startup|resume|clear|compact|fork"'
    assert data.count(old) == 1
    return data.replace(old, new)


def _as_if_installed_here(name, dist, python):
    """A golden file of the previous build with its dist and interpreter replaced by this machine's."""
    previous = _previous_build()
    text = _golden(name).decode()
    for old, new in ((previous["python"], python), (previous["dist"], dist)):
        text = text.replace(json.dumps(shlex.quote(old))[1:-1], json.dumps(shlex.quote(new))[1:-1])
    return text


@requires_dist
@pytest.mark.parametrize("name", ["previous-build-fresh.hooks.json", "previous-build-merged.hooks.json"])
def test_install_over_the_previous_builds_installation_changes_only_the_matcher(home, name):
    codex = home / ".codex"
    codex.mkdir(parents=True)
    python = json.loads(run("install", "--json", home=home).stdout)["python"]
    (codex / "hooks.json").write_text(_as_if_installed_here(name, os.path.realpath(DIST), python))
    before = (codex / "hooks.json").read_bytes()
    proc = run("install", "--apply", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert (result["changed"], result["applied"]) == (True, True)  # the matcher only (_with_fork)
    assert (codex / "hooks.json").read_bytes() == _with_fork(before)
    # issue 13: the same re-run adds the MCP server table an older installation lacks (docs/upgrading.md)
    assert sorted(n for n in os.listdir(codex) if n != "plugin-data" and ".bak-" not in n) == ["config.toml",
                                                                                                "hooks.json"]
    assert result["mcp"]["applied"] and "[mcp_servers.intent_loop]" in (codex / "config.toml").read_text()
    assert sorted(event for event, _m, _h in ours(json.loads(before))) == ["SessionStart", "Stop", "UserPromptSubmit"]


@requires_dist
def test_install_over_a_previous_build_elsewhere_replaces_its_handlers_without_duplicates(home):
    codex = home / ".codex"
    codex.mkdir(parents=True)
    python = json.loads(run("install", "--json", home=home).stdout)["python"]
    (codex / "hooks.json").write_text(_as_if_installed_here("previous-build-merged.hooks.json", "/old/checkout/dist",
                                                            python))
    proc = run("install", "--apply", "--json", home=home)
    assert proc.returncode == 0 and json.loads(proc.stdout)["changed"] is True, proc.stderr
    config = json.loads((codex / "hooks.json").read_text())
    found = ours(config)
    assert sorted(event for event, _m, _h in found) == ["SessionStart", "Stop", "UserPromptSubmit"]
    assert all(os.path.dirname(h["command"].split(" ", 1)[1]) == os.path.realpath(DIST) for _e, _m, h in found)
    assert {"hooks": [FOREIGN]} in config["hooks"]["Stop"]


@requires_dist
@pytest.mark.parametrize("verb", ["install", "uninstall"])
def test_hooks_json_nested_too_deeply_is_hooks_config_invalid_not_a_traceback(home, codex, verb):
    content = "[" * 100_000 + "]" * 100_000
    (codex / "hooks.json").write_text(content)
    proc = run(verb, "--apply", home=home)
    assert proc.returncode == 1 and "HOOKS_CONFIG_INVALID" in proc.stderr and "Traceback" not in proc.stderr
    assert (codex / "hooks.json").read_text() == content


@requires_dist
def test_a_symlinked_hooks_json_is_written_through_and_stays_a_link(home, codex, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    os.replace(codex / "hooks.json", dotfiles / "hooks.json")
    os.symlink(dotfiles / "hooks.json", codex / "hooks.json")
    proc = run("install", "--apply", home=home)
    assert proc.returncode == 0, proc.stderr
    assert os.path.islink(codex / "hooks.json")
    config = json.loads((dotfiles / "hooks.json").read_text())
    assert ours(config) and FOREIGN in config["hooks"]["Stop"][0]["hooks"]


def _venv(path, *, copies):
    import sys

    argv = [os.path.realpath(sys.executable), "-m", "venv", "--without-pip", *(["--copies"] if copies else []), path]
    subprocess.run([str(a) for a in argv], check=True, timeout=120)
    return os.path.join(path, "bin", "python3")


@requires_dist
def test_install_never_writes_an_interpreter_the_agent_can_write_into_hooks_json(home, codex, tmp_path):
    """Run from a project's virtualenv, install names what the venv runs (its link target), or, for a
    --copies venv in the workspace, refuses (PYTHON_NOT_FOUND) and writes nothing: hooks.json's
    INTENT_LOOP_PYTHON is used as given at every run (find_python.sh's rules, issue 33 item 1)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    before = (codex / "hooks.json").read_bytes()
    env = {k: v for k, v in os.environ.items() if k not in ("CODEX_HOME", "INTENT_LOOP_DATA_DIR", "PLUGIN_DATA")}
    env["HOME"] = str(home)
    for copies in (False, True):
        python = _venv(str(workspace / f"venv-{copies}"), copies=copies)
        done = subprocess.run([CLI, "install", "--apply", "--json"], capture_output=True, text=True, timeout=60,
                              env=dict(env, INTENT_LOOP_PYTHON=python), cwd=workspace)
        if copies:
            assert done.returncode == 1 and json.loads(done.stdout)["error"]["code"] == "PYTHON_NOT_FOUND", done
            assert (codex / "hooks.json").read_bytes() == before
        else:
            assert done.returncode == 0, done.stderr
            named = json.loads(done.stdout)["python"]
            assert not named.startswith(str(workspace)) and os.path.samefile(named, python)
            assert f"INTENT_LOOP_PYTHON={shlex.quote(named)} " in (codex / "hooks.json").read_text()
            (codex / "hooks.json").write_bytes(before)


def test_install_names_claude_codes_own_route_and_writes_nothing_of_claude_code(home):
    """Issue 37 item 8: `install` offers both hosts or says why not. It writes Codex's files only and
    names Claude Code's plugin route; nothing under ~/.claude is created."""
    (home / ".codex").mkdir(parents=True)
    for argv in (("install", "--json"), ("install", "--apply", "--json")):
        proc = run(*argv, home=home)
        assert proc.returncode == 0, proc.stderr
        assert "claude plugin install intent-loop@intent-loop" in json.loads(proc.stdout)["claude_code"]
    assert not (home / ".claude").exists()

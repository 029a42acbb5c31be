"""install / uninstall register the MCP server as [mcp_servers.intent_loop] in config.toml, editing
only that table: every other byte of the user's TOML is kept."""
import json
import os
import subprocess
import tomllib

import pytest

from helpers.dist import requires_dist
from intent_loop.cli import mcp_config
from intent_loop.errors import IntentLoopError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "dist", "intent-loop")

USER_TOML = """\
# my Codex settings
model = "gpt-5"   # trailing comment kept

[mcp_servers.other]
command = "other-server"
args = ["--flag"]

[profiles.fast]
model = "small"
"""
OURS_OLD = """\
[mcp_servers.intent_loop]
command = "/old/dist/intent-loop-mcp"
args = []

[mcp_servers.intent_loop.env]
INTENT_LOOP_PYTHON = "/old/python"
"""


def _installed(text, tmp_path, binary="/new/dist/intent-loop-mcp"):
    path = tmp_path / "config.toml"
    if text is not None:
        path.write_text(text)
    change = mcp_config.plan(str(tmp_path), install=True, binary=binary, python="/usr/bin/python3")
    return change


def test_install_appends_the_table_and_keeps_every_other_byte(tmp_path):
    change = _installed(USER_TOML, tmp_path)
    assert change.new_bytes.startswith(USER_TOML)
    table = tomllib.loads(change.new_bytes)["mcp_servers"]["intent_loop"]
    assert table["command"] == "/new/dist/intent-loop-mcp" and table["args"] == []
    assert table["env_vars"] == ["CODEX_HOME", "INTENT_LOOP_DATA_DIR"] and table["tool_timeout_sec"] == 30
    assert table["env"] == {"INTENT_LOOP_PYTHON": "/usr/bin/python3"}


def test_install_into_a_missing_config_writes_only_the_table(tmp_path):
    change = _installed(None, tmp_path)
    assert change.raw is None and tomllib.loads(change.new_bytes).keys() == {"mcp_servers"}


def test_an_older_table_of_ours_is_updated_in_place(tmp_path):
    head, tail = USER_TOML.split("[profiles.fast]")
    change = _installed(head + OURS_OLD + "\n[profiles.fast]" + tail, tmp_path)
    assert change.new_bytes.startswith(head + "[mcp_servers.intent_loop]\ncommand = \"/new/dist/intent-loop-mcp\"")
    assert change.new_bytes.endswith("\n[profiles.fast]" + tail)
    assert "/old/" not in change.new_bytes
    assert tomllib.loads(change.new_bytes)["profiles"] == {"fast": {"model": "small"}}


def test_install_twice_changes_nothing_and_uninstall_restores_the_users_bytes(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(USER_TOML)
    path.write_text(_installed(USER_TOML, tmp_path).new_bytes)
    assert _installed(path.read_text(), tmp_path).new_bytes is None
    removed = mcp_config.plan(str(tmp_path), install=False)
    assert removed.new_bytes.rstrip("\n") == USER_TOML.rstrip("\n")


def test_a_table_running_another_command_is_left_alone_with_a_warning(tmp_path):
    text = USER_TOML + '\n[mcp_servers.intent_loop]\ncommand = "/usr/bin/someone-else"\n'
    for install in (True, False):
        (tmp_path / "config.toml").write_text(text)
        change = mcp_config.plan(str(tmp_path), install=install, binary="/d/intent-loop-mcp", python="/p")
        assert change.new_bytes is None
        assert change.warning["code"] == "MCP_SERVER_FOREIGN"


def test_a_command_with_an_unclosed_quote_is_foreign_not_a_crash(tmp_path):
    """shlex.split raised ValueError on it: install --apply and doctor exited INTERNAL_ERROR."""
    from intent_loop.cli import plugin_state

    text = '[mcp_servers.intent_loop]\ncommand = "/opt/it\'s/intent-loop-mcp --x"\n'
    (tmp_path / "config.toml").write_text(text)
    change = mcp_config.plan(str(tmp_path), install=True, binary="/d/intent-loop-mcp", python="/p")
    assert change.new_bytes is None and change.warning["code"] == "MCP_SERVER_FOREIGN"
    config = plugin_state.read_config(str(tmp_path))
    assert plugin_state.user_install(str(tmp_path), config)["mcp_server"] is False


@pytest.mark.parametrize("text", [
    'mcp_servers = { intent_loop = { command = "/x/intent-loop-mcp" } }\n',
    '[mcp_servers]\nintent_loop.command = "/x/intent-loop-mcp"\n',
    "this is = = not toml\n",
])
def test_a_config_the_table_edit_cannot_change_safely_is_refused(tmp_path, text):
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(IntentLoopError) as caught:
        mcp_config.plan(str(tmp_path), install=True, binary="/d/intent-loop-mcp", python="/p")
    assert caught.value.code == "CODEX_CONFIG_INVALID"
    assert (tmp_path / "config.toml").read_text() == text


def test_a_header_inside_a_multiline_string_is_not_taken_for_a_table(tmp_path):
    text = 'notes = """\n[mcp_servers.intent_loop]\nnot a table\n"""\n'
    change = _installed(text, tmp_path)
    assert change.new_bytes.startswith(text)
    assert tomllib.loads(change.new_bytes)["notes"] == "[mcp_servers.intent_loop]\nnot a table\n"


@requires_dist
def test_install_apply_writes_config_toml_with_a_backup_and_uninstall_removes_it(tmp_path):
    codex = tmp_path / "codex"
    codex.mkdir()
    real = tmp_path / "dotfiles-config.toml"
    real.write_text(USER_TOML)
    os.symlink(real, codex / "config.toml")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    dry = subprocess.run([CLI, "install", "--codex-home", str(codex), "--json"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert "+[mcp_servers.intent_loop]" in json.loads(dry.stdout)["mcp"]["diff"]
    assert real.read_text() == USER_TOML
    done = subprocess.run([CLI, "install", "--codex-home", str(codex), "--apply", "--json"], capture_output=True,
                          text=True, env=env, timeout=60)
    step = json.loads(done.stdout)["mcp"]
    assert step["applied"] and os.path.islink(codex / "config.toml")  # written through to its target
    table = tomllib.loads(real.read_text())["mcp_servers"]["intent_loop"]
    assert table["command"] == os.path.join(ROOT, "dist", "intent-loop-mcp")
    assert open(step["backup"]).read() == USER_TOML
    subprocess.run([CLI, "uninstall", "--codex-home", str(codex), "--apply"], check=True, env=env, timeout=60,
                   capture_output=True)
    assert real.read_text().rstrip("\n") == USER_TOML.rstrip("\n")


def _started_as(server, *, expand, cwd, env):
    """Start .mcp.json's server as a host does (`expand`: what the host substitutes in command and
    args) and ask it to initialize; its answer."""
    argv = [expand(server["command"])] + [expand(arg) for arg in server["args"]]
    done = subprocess.run(argv, input=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}) + "\n",
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[0])


def test_one_mcp_json_starts_the_server_under_codex_and_under_claude_code(tmp_path):
    """Codex starts the server with cwd "." = the plugin root and expands nothing; Claude Code
    substitutes ${CLAUDE_PLUGIN_ROOT} in command and args and runs it in the project directory
    (../shared/docs/claude-code-hooks.md, 25): the one file must start the same server both ways."""
    with open(os.path.join(ROOT, ".codex-plugin", "plugin.json")) as fh:
        assert json.load(fh)["mcpServers"] == "./.mcp.json"
    with open(os.path.join(ROOT, ".mcp.json")) as fh:
        server = json.load(fh)["mcpServers"]["intent_loop"]
    assert server["command"] == "/bin/sh" and server["cwd"] == "."  # nothing looked up on the agent's PATH
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    codex_env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # what Codex passes on
    as_codex = _started_as(server, expand=lambda text: text, cwd=ROOT, env=codex_env)
    claude_env = dict(codex_env, CLAUDECODE="1", CLAUDE_PLUGIN_ROOT=ROOT, CLAUDE_PROJECT_DIR=str(project))
    as_claude = _started_as(server, expand=lambda text: text.replace("${CLAUDE_PLUGIN_ROOT}", ROOT),
                            cwd=str(project), env=claude_env)
    for answer in (as_codex, as_claude):
        assert answer["result"]["serverInfo"]["name"] == "intent-loop", answer
    # a planted ./hooks/intent-loop in the project is never what Claude Code's start runs
    (project / "hooks").mkdir()
    planted = project / "hooks" / "intent-loop"
    planted.write_text("#!/bin/sh\necho planted > \"$HOME/planted\"\n")
    planted.chmod(0o755)
    _started_as(server, expand=lambda text: text.replace("${CLAUDE_PLUGIN_ROOT}", ROOT), cwd=str(project),
                env=claude_env)
    assert not (home / "planted").exists()


# -- the CLI in a shell Codex's agent runs ---------------------------------------------------
def test_in_the_agents_shell_claim_add_is_a_proposal_and_user_only_commands_are_refused(tmp_path):
    from helpers.cli_runner import make_cli

    cli = make_cli(tmp_path)
    cli.json("claim", "add", "goal", "ship", "the", "parser")
    user_claim = cli.json("show", "--all")
    cli.env.update(CODEX_TOOL_CALL_ID="call_1", CODEX_THREAD_ID="thread-1")  # what Codex sets (docs/mcp.md)
    proposed = cli.json("claim", "add", "allow", "action:network")
    assert proposed["proposed"] is True and proposed["events"] == ["proposal_added"]
    state = cli.json("show", "--all")
    assert state["history"] == user_claim["history"]  # nothing the user said changed: one more candidate
    assert [c["kind"] for c in state["snapshot"]["candidates"]] == ["proposal"]
    rc, out, _err = cli("claim", "drop", "0000", "--json")
    assert rc == 1 and json.loads(out)["error"]["code"] == "AGENT_SHELL"
    for argv in (["off"], ["candidate", "confirm", proposed["proposal_id"][:8]], ["uninstall", "--apply"]):
        rc, out, _err = cli(*argv, "--json")
        assert json.loads(out)["error"]["code"] == "AGENT_SHELL", argv
    del cli.env["CODEX_TOOL_CALL_ID"], cli.env["CODEX_THREAD_ID"]
    assert cli.json("candidate", "confirm", proposed["proposal_id"][:8])["claim_id"]


def test_install_then_uninstall_leaves_config_toml_byte_identical(tmp_path):
    from intent_loop.cli import mcp_config

    for original in ('model = "gpt"\n', 'model = "gpt"\n\n[features]\nhooks = true\n', ""):
        installed = mcp_config.edited(original, mcp_config.table_text("/x/intent-loop-mcp", "/usr/bin/python3"),
                                      str(tmp_path / "config.toml"))
        assert mcp_config.edited(installed, None, str(tmp_path / "config.toml")) == original, repr(original)

"""Where a session lies outside the threat model (hook/exposure.py): an unsandboxed Codex, read from
its command line or config.toml, and a workspace that holds the home folder or the data root. The
user is told once a session, at SessionStart; otherwise nothing changes."""
import json
import os
import subprocess

import pytest

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import BINARIES, DIST, fixture, hook, prompt_payload
from intent_loop.hook import exposure
from intent_loop.ops.enforcement_words import exposure_text

env = hook_binaries.env  # the fixtures, by the names the tests ask for
ws = hook_binaries.ws


@pytest.mark.parametrize(("argv", "mode"), [
    (["codex", "--dangerously-bypass-approvals-and-sandbox"], "danger-full-access"),
    (["codex", "exec", "--yolo", "hi"], "danger-full-access"),
    (["codex", "-s", "danger-full-access"], "danger-full-access"),
    (["codex", "--sandbox=danger-full-access"], "danger-full-access"),
    (["codex", "-c", "sandbox_mode='danger-full-access'"], "danger-full-access"),
    (["codex", "--sandbox", "workspace-write"], "workspace-write"),
    (["codex", "--full-auto"], "workspace-write"),
    (["codex", "exec", "say -s danger-full-access"], None),  # a prompt's words are not a flag
    (["codex", "exec", "hi"], None),
])
def test_codex_flags_name_the_sandbox(argv, mode):
    assert exposure.argv_sandbox_mode(argv) == mode


def _config(tmp_path, text):
    home = tmp_path / "codex-home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(text)
    return {"CODEX_HOME": str(home)}


def test_config_names_the_sandbox_at_top_level_or_in_the_selected_profile(tmp_path):
    env = _config(tmp_path, 'sandbox_mode = "danger-full-access"  # trusted box\n[features]\nhooks = true\n')
    assert exposure.config_sandbox_mode(env) == "danger-full-access"
    env = _config(tmp_path, 'profile = "safe"\nsandbox_mode = "danger-full-access"\n'
                            '[profiles.safe]\nsandbox_mode = "workspace-write"\n')
    assert exposure.config_sandbox_mode(env) == "workspace-write"
    env = _config(tmp_path, '[profiles.other]\nsandbox_mode = "danger-full-access"\n')
    assert exposure.config_sandbox_mode(env) is None


def _fake_proc(tmp_path, chain):
    """A /proc with `chain` [(pid, argv)] from the hook (self) up: each entry's parent is the next."""
    proc = tmp_path / "proc"
    pids = ["self"] + [str(pid) for pid, _argv in chain]
    for index, name in enumerate(pids):
        entry = proc / name
        entry.mkdir(parents=True)
        parent = chain[index][0] if index < len(chain) else 1
        (entry / "stat").write_text(f"{index + 100} (odd (name) x) S {parent} 0 0\n")
        if index:
            (entry / "cmdline").write_bytes(b"\0".join(a.encode() for a in chain[index - 1][1]) + b"\0")
    return str(proc)


def test_the_command_line_of_an_ancestor_codex_wins_over_config(tmp_path):
    env = _config(tmp_path, 'sandbox_mode = "workspace-write"\n')
    proc = _fake_proc(tmp_path, [(50, ["/bin/sh", "-c", "hook"]), (40, ["/opt/codex/bin/codex", "--yolo"])])
    assert exposure.sandbox_mode(env, _proc=proc) == "danger-full-access"
    assert exposure.sandbox_mode(env, _proc=str(tmp_path / "no-proc")) == "workspace-write"


def test_a_workspace_holding_home_or_the_data_root_is_exposed(tmp_path):
    home, data = tmp_path / "home", tmp_path / "home" / ".codex" / "data"
    data.mkdir(parents=True)
    project = tmp_path / "elsewhere"
    project.mkdir()
    env = {"HOME": str(home)}
    none = str(tmp_path / "no-proc")
    assert exposure.session_exposures(env, project_root=str(project), data_root=str(data), _proc=none) == []
    assert exposure.session_exposures(env, project_root=str(home), data_root=str(data), _proc=none) == \
        [exposure.HOLDS_HOME]
    assert exposure.session_exposures(env, project_root=str(tmp_path), data_root=str(data), _proc=none) == \
        [exposure.HOLDS_HOME]
    inside = project / "data"
    assert exposure.session_exposures(env, project_root=str(project), data_root=str(inside), _proc=none) == \
        [exposure.HOLDS_DATA_ROOT]


def test_every_reason_is_worded():
    for reason in (exposure.UNSANDBOXED, exposure.HOLDS_HOME, exposure.HOLDS_DATA_ROOT):
        assert exposure_text([reason])
    assert exposure_text([]) is None


# -- through the hook binaries --------------------------------------------------------------------
FAKE_CODEX = ('#!/bin/sh\n# stands in for Codex: its argv is what the hook reads\n'
              'while [ "$1" != -- ]; do shift; done\nshift\n"$@"\n')


def _session_start_under(tmp_path, argv, payload, env):
    """SessionStart's answer when the hook is started by a process named codex with `argv`."""
    fake = tmp_path / "bin" / "codex"
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(FAKE_CODEX)
    fake.chmod(0o755)
    done = subprocess.run([str(fake), *argv, "--", os.path.join(DIST, BINARIES["SessionStart"])],
                          input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=20)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@requires_dist
def test_an_unsandboxed_codex_is_told_once_a_session_and_a_sandboxed_one_is_not(tmp_path, env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal Ship the parser"), env)
    start = fixture("session_start.startup.json", ws)
    told = _session_start_under(tmp_path, ["exec", "--dangerously-bypass-approvals-and-sandbox"], start, env)
    assert told["systemMessage"] == exposure_text([exposure.UNSANDBOXED])
    assert "Ship the parser" in told["hookSpecificOutput"]["additionalContext"]  # the view is unchanged
    quiet = _session_start_under(tmp_path, ["exec", "--sandbox", "workspace-write"], start, env)
    assert "systemMessage" not in quiet
    compact = _session_start_under(tmp_path, ["--yolo"], dict(start, source="compact"), env)
    assert "systemMessage" not in compact  # the same session, told already


@requires_dist
def test_a_workspace_holding_the_data_root_is_told(tmp_path, env, ws):
    env = dict(env, INTENT_LOOP_DATA_DIR=os.path.join(ws, ".intent-data"))
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal Ship the parser"), env)
    _out, answer, _secs = hook("SessionStart", fixture("session_start.startup.json", ws), env)
    assert answer["systemMessage"] == exposure_text([exposure.HOLDS_DATA_ROOT])


@requires_dist
def test_a_project_without_intent_is_not_told(tmp_path, env, ws):
    _out, answer, _secs = hook("SessionStart", fixture("session_start.startup.json", ws), dict(
        env, INTENT_LOOP_DATA_DIR=os.path.join(ws, ".intent-data")))
    assert "systemMessage" not in answer


# -- doctor -----------------------------------------------------------------------------------------
def _sandbox_check(cli):
    _rc, out, _err = cli("doctor", "--json")
    return {c["name"]: c for c in json.loads(out)["checks"]}["sandbox"]["ok"]


def test_doctor_fails_its_sandbox_check_for_an_unsandboxed_config_or_a_folder_holding_the_data(tmp_path):
    from helpers.cli_runner import CliRun, make_cli

    cli = make_cli(tmp_path)
    assert _sandbox_check(cli) is True
    codex = tmp_path / "home" / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text('sandbox_mode = "danger-full-access"\n')
    assert _sandbox_check(cli) is False
    (codex / "config.toml").write_text('sandbox_mode = "workspace-write"\n')
    holding = CliRun(tmp_path / "ws" / "data", tmp_path / "ws", home=tmp_path / "home")
    assert _sandbox_check(holding) is False

"""Disabled or untrusted hooks become visible (issue 24, item 5): every hook run leaves its install's
id and time under <data root>/runtime/<install id>/hooks-ran/ (launch/hook_runs.py), and doctor
(`hooks_ran`, `hook_python`) and the MCP server's intent_status (`hooks`) say when the hooks of
what is installed have never run since it was installed, which is what Codex does, silently, to
hooks it does not trust. The plugin copies here are laid out as Codex 0.169.0 lays them out."""
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers import mcp_client
from helpers.dist import requires_dist
from helpers.mcp_client import MCP_BINARY, run_hook
from helpers.receipt_words import said
from intent_loop.launch import hook_runs, run_record
from intent_loop.launch.binaries import HOOKS

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
PLUGIN_ID = "intent-loop@intent-loop"
env = mcp_client.env
ws = mcp_client.ws
server = mcp_client.server


def payload(event, cwd, session="s-1"):
    return json.dumps({"hook_event_name": event, "session_id": session, "cwd": str(cwd), "source": "startup",
                       "turn_id": "t-1", "prompt": "just a question", "stop_hook_active": False,
                       "last_assistant_message": None})


def source_copy(codex_home, version="0.1.0"):
    """What `codex plugin add intent-loop@intent-loop` copies from the repository (the parts that run)."""
    copy = codex_home / "plugins" / "cache" / "intent-loop" / "intent-loop" / version
    for part in ("lib", "hooks", ".codex-plugin"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "hooks.json", copy / "hooks.json")
    return copy


def enable(codex_home):
    with open(codex_home / "config.toml", "a") as fh:
        fh.write(f'\n[features]\nplugins = true\n\n[plugins."{PLUGIN_ID}"]\nenabled = true\n')


@pytest.fixture
def home(tmp_path, isolated_home):
    codex_home = isolated_home / ".codex"
    codex_home.mkdir()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    base = {"HOME": str(isolated_home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    return base, codex_home, workspace


def doctor(base, cwd):
    cli = [str(ROOT / "hooks" / "intent-loop"), "cli", "doctor", "--json"]
    done = subprocess.run(cli, env=base, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.stdout, done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


def run_copy_hooks(copy, base, cwd):
    """Each hook of a plugin copy run as Codex runs it (PLUGIN_ROOT, PLUGIN_DATA, bash -c)."""
    data = copy.parents[4] / "plugins" / "data" / "intent-loop-intent-loop"
    for hook in HOOKS:
        command = f'"{copy}/hooks/intent-loop" {hook.entry}'
        done = subprocess.run(["bash", "-c", command], input=payload(hook.event, cwd), text=True,
                              env={**base, "PLUGIN_ROOT": str(copy), "PLUGIN_DATA": str(data)},
                              cwd=cwd, capture_output=True, timeout=60)
        assert done.returncode == 0 and done.stdout.startswith('{"continue":true'), done


def test_a_hook_run_leaves_its_install_and_time_in_the_data_root_and_creates_no_project(home):
    base, codex_home, workspace = home
    copy = source_copy(codex_home)
    enable(codex_home)
    start = time.time() - 1
    run_copy_hooks(copy, base, workspace)
    root = codex_home / "plugin-data" / "intent-loop" / "v1"
    install = run_record.source_install_id(str(copy))
    ran = hook_runs.runs(str(root), install)
    assert set(ran) == {h.event for h in HOOKS} and all(t >= start for t in ran.values())
    assert (root / "runtime" / install / "hooks-ran" / "Stop").read_text() == str(copy / "hooks" / "intent-loop")
    assert not (root / "projects").exists()  # a prompt without intent lines in a folder that is no project
    before = {e: os.stat(root / "runtime" / install / "hooks-ran" / e).st_mtime_ns for e in ran}
    time.sleep(0.02)
    run_copy_hooks(copy, base, workspace)
    after = {e: os.stat(root / "runtime" / install / "hooks-ran" / e).st_mtime_ns for e in ran}
    assert all(after[e] > before[e] for e in ran)


def test_doctor_says_when_an_installed_plugins_hooks_never_ran_and_stops_once_they_do(home):
    base, codex_home, workspace = home
    copy = source_copy(codex_home)
    enable(codex_home)
    checks = doctor(base, workspace)
    assert not checks["hooks_ran"]["ok"], checks["hooks_ran"]
    assert f"plugin {PLUGIN_ID} (0.1.0): its hooks have never run since it was installed" in \
        checks["hooks_ran"]["detail"]
    assert "/hooks" in checks["hooks_ran"]["next_action"] and "trust" in checks["hooks_ran"]["next_action"]
    run_copy_hooks(copy, base, workspace)
    checks = doctor(base, workspace)
    assert checks["hooks_ran"]["ok"] and "its hooks last ran" in checks["hooks_ran"]["detail"], checks["hooks_ran"]


def test_doctor_says_when_a_new_build_never_ran_while_an_older_ones_hooks_did(home):
    base, codex_home, workspace = home
    old = source_copy(codex_home, "0.1.0")
    enable(codex_home)
    time.sleep(0.05)
    new = source_copy(codex_home, "0.2.0")  # installed after the old one, never trusted
    run_copy_hooks(old, base, workspace)  # Codex still runs the old build's hooks
    checks = doctor(base, workspace)
    detail = checks["hooks_ran"]["detail"]
    assert not checks["hooks_ran"]["ok"]
    assert f"plugin {PLUGIN_ID} (0.2.0): its hooks have never run since it was installed" in detail
    assert "while another install's hooks ran" in detail, detail
    assert f"plugin {PLUGIN_ID} (0.1.0): its hooks last ran" in detail
    assert new.exists()


def test_doctor_names_a_hook_that_found_no_python(home):
    base, codex_home, workspace = home
    copy = source_copy(codex_home)
    enable(codex_home)
    run_copy_hooks(copy, base, workspace)
    assert doctor(base, workspace)["hook_python"]["ok"]
    told = codex_home / "plugin-data" / "intent-loop" / "v1" / "runtime" / hook_runs.NO_PYTHON_TOLD
    told.write_text("s-9\n")
    future = time.time() + 5
    os.utime(told, (future, future))
    check = doctor(base, workspace)["hook_python"]
    assert not check["ok"] and check["detail"].startswith("PYTHON_NOT_FOUND: a hook found no Python 3.11+")
    assert "INTENT_LOOP_PYTHON" in check["next_action"]


@pytest.mark.skipif(not os.access(MCP_BINARY, os.X_OK), reason="dist/intent-loop-mcp is missing")
def test_intent_status_says_whether_the_hooks_of_its_own_install_have_run(server, env, ws):
    before = server.call("intent_status", {}, workspace=ws, thread="019b0000-0000-7000-8000-00000000000a")
    hooks = before["result"]["hooks"]
    assert hooks["ran"] is False and "never run" in hooks["detail"] and "/hooks" in hooks["next_action"], hooks
    for hook in HOOKS:
        run_hook(hook.event, env, cwd=ws, session_id="019b0000-0000-7000-8000-00000000000a", prompt="hello")
    after = server.call("intent_status", {}, workspace=ws, thread="019b0000-0000-7000-8000-00000000000a")
    hooks = after["result"]["hooks"]
    assert hooks["ran"] is True and hooks["next_action"] is None, hooks


@requires_dist
def test_a_user_level_install_whose_hooks_never_ran_is_named(home):
    base, codex_home, workspace = home
    done = subprocess.run([str(DIST / "intent-loop"), "install", "--apply", "--json"], env=base, cwd=workspace,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    checks = doctor(base, workspace)
    assert not checks["hooks_ran"]["ok"] and "user-level" in checks["hooks_ran"]["detail"], checks["hooks_ran"]
    hook = DIST / "intent-loop-stop"
    subprocess.run([str(hook)], input=payload("Stop", workspace), text=True, env=base, capture_output=True,
                   timeout=60, check=True)
    detail = doctor(base, workspace)["hooks_ran"]["detail"]
    assert "its hooks ran (Stop), SessionStart, UserPromptSubmit not yet" in detail, detail


# -- switching between the ways of installing (item 6) -------------------------------------------
@requires_dist
def test_the_user_level_binaries_and_the_repository_plugin_write_the_same_ledger(home):
    """Going from a user-level install (or dist/marketplace) to the repository plugin keeps the
    data: Codex gives plugin hooks PLUGIN_DATA=<codex-home>/plugins/data/..., which names the same
    data root as ~/.codex for the binaries."""
    base, codex_home, workspace = home
    typed = json.loads(payload("UserPromptSubmit", workspace))
    typed["prompt"] = "intent: goal Recorded by the user-level binary"
    done = subprocess.run([str(DIST / "intent-loop-user-prompt")], input=json.dumps(typed), text=True, env=base,
                          capture_output=True, timeout=60)
    assert said(json.loads(done.stdout)["systemMessage"], "recorded", "goal") == 1, done
    copy = source_copy(codex_home)
    typed["prompt"] = "intent: must Recorded by the repository plugin"
    data = codex_home / "plugins" / "data" / "intent-loop-intent-loop"
    done = subprocess.run(["bash", "-c", f'"{copy}/hooks/intent-loop" user-prompt'], input=json.dumps(typed),
                          text=True, env={**base, "PLUGIN_ROOT": str(copy), "PLUGIN_DATA": str(data)},
                          capture_output=True, timeout=60)
    assert said(json.loads(done.stdout)["systemMessage"], "recorded", "must") == 1, done
    shown = subprocess.run([str(copy / "hooks" / "intent-loop"), "cli", "show"], env=base, cwd=workspace,
                           capture_output=True, text=True, timeout=60).stdout
    assert "Recorded by the user-level binary" in shown and "Recorded by the repository plugin" in shown, shown


def test_doctor_names_two_enabled_plugins_as_a_duplicate(home):
    base, codex_home, workspace = home
    source_copy(codex_home)
    enable(codex_home)
    with open(codex_home / "config.toml", "a") as fh:
        fh.write('\n[plugins."intent-loop@intent-loop-local"]\nenabled = true\n')
    (codex_home / "plugins" / "cache" / "intent-loop-local" / "intent-loop" / "0.1.0" / "dist").mkdir(parents=True)
    check = doctor(base, workspace)["duplicate_install"]
    assert not check["ok"]
    assert "plugins intent-loop@intent-loop and intent-loop@intent-loop-local" in check["detail"], check


def test_doctor_reads_the_repository_plugins_trust_records_under_its_own_hooks_file(home):
    """Codex 0.169.0 keys them `intent-loop@intent-loop:hooks.json:<event>:0:0` (the manifest's
    `./hooks.json`; dist/marketplace's plugin has `hooks/hooks.json`): seen by test_real_codex_hook_trust."""
    base, codex_home, workspace = home
    source_copy(codex_home)
    enable(codex_home)
    assert "(0 of 3)" in doctor(base, workspace)["hooks_trusted"]["detail"]
    config = (codex_home / "config.toml").read_text()
    with open(codex_home / "config.toml", "a") as fh:
        for event in ("session_start", "user_prompt_submit", "stop"):
            fh.write(f'\n[hooks.state."{PLUGIN_ID}:hooks.json:{event}:0:0"]\ntrusted_hash = "sha256:{"ab" * 32}"\n')
    # `trusted_hash` alone: Codex 0.169.0 calls such a hook modified and skips it (issue 34)
    assert "(0 of 3)" in doctor(base, workspace)["hooks_trusted"]["detail"]
    with open(codex_home / "config.toml", "w") as fh:
        fh.write(config)
        for event in ("session_start", "user_prompt_submit", "stop"):
            fh.write(f'\n[hooks.state."{PLUGIN_ID}:hooks.json:{event}:0:0"]\ntrusted_hash = "sha256:{"ab" * 32}"\n'
                     f'trusted_content_hash = "sha256:{"cd" * 32}"\n')
    check = doctor(base, workspace)["hooks_trusted"]
    assert check["ok"] and f"{PLUGIN_ID} (3 of 3)" in check["detail"], check

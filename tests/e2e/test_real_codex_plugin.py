"""End to end, issue 16: the real Codex 0.169.0 installs intent-loop as a plugin from the marketplace
build.py writes (dist/marketplace/), runs its hooks and its MCP server from Codex's plugin cache,
and stops running them once the plugin is removed, leaving the data in place.

Two homes: (a) a throw-away CODEX_HOME while ~/.codex also exists and holds a complete extracted
runtime of this very build (the trap a relative `./dist/intent-loop-mcp` fell into: the launcher
took ~/.codex's runtime); (b) no CODEX_HOME at all, ~/.codex being the Codex home, so the hooks
find the data root from PLUGIN_DATA. In both, Codex gives the MCP server neither CODEX_HOME nor
PLUGIN_*: it must infer the same data root from its own path under <codex-home>/plugins/cache/.
With plugins on, Codex tries to reach a remote marketplace (git ls-remote): every run is bounded
and, where possible, in a loopback-only network namespace (the fixtures of test_real_codex.py).
"""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_real_codex as base  # noqa: E402
from mock_model import developer_messages, function_outputs  # noqa: E402
from test_real_codex import (  # noqa: E402
    BYPASS,
    CODEX_BIN,
    CONFIG_TOML,
    DIST,
    EVENTS,
    TURN_TIMEOUT,
    assert_all_hooks_completed,
    hook_results,
    run_bounded,
    session_id_of,
)
from test_real_codex_mcp import scripted  # noqa: E402

from helpers.dist import requires_dist
from helpers.settle import settle  # noqa: E402
from intent_loop.guard import contract_file  # noqa: E402
from intent_loop.launch.binaries import BINARIES  # noqa: E402
from intent_loop.storage import paths as paths_mod  # noqa: E402

mock_model = base.mock_model  # the fixture, by the name the test asks for
MARKETPLACE = DIST / "marketplace"
MARKETPLACE_NAME = "intent-loop-local"
PLUGIN_ID = f"intent-loop@{MARKETPLACE_NAME}"
COMMAND_TIMEOUT = 60  # `codex plugin ...` commands: local files only, but plugins are on

pytestmark = [
    *base.pytestmark,  # the same skips: no Codex binary, no dist/
    requires_dist,
]


def plugin_config(base_url):
    return CONFIG_TOML.format(base_url=base_url).replace("plugins = false", "plugins = true")


def codex_run(wrap, env, cwd, *args, timeout=COMMAND_TIMEOUT):
    rc, out, err, secs = run_bounded(wrap([CODEX_BIN, *args]), cwd=cwd, env=env, timeout=timeout)
    assert rc == 0, f"codex {' '.join(args[:3])} exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    return out, err, secs


def complete_runtime_in_home_codex(home, env):
    """Every binary of this build run once with HOME alone, so ~/.codex holds its complete runtime."""
    root = home / ".codex" / "plugin-data" / "intent-loop" / "v1"
    root.mkdir(parents=True)
    bare = {k: v for k, v in env.items() if k not in ("CODEX_HOME",)}
    for binary in BINARIES:
        stdin = b"{}" if binary.is_hook else b""
        args = ["--help"] if binary.name == "intent-loop" else []
        subprocess.run([str(DIST / binary.name), *args], input=stdin, env=bare, capture_output=True, timeout=60,
                       cwd=str(home), check=False)
    [marker] = list((root / "runtime").glob("*/intent-loop-mcp_*/site-packages/.intent-loop-complete"))
    # A runtime the launcher cannot import from loses its marker (launch/fast_path.py) and the
    # binary goes on the long way: with the server's module gone, the marker outlives the test
    # only if no run took this runtime. The rest stays complete, as a real one would be.
    (marker.parent / "intent_loop" / "mcp" / "server.py").unlink()
    return root, marker


def status_result(bodies):
    """The envelope intent_status returned, as the mock model received it back."""
    outputs = [out for body in bodies for call_id, out in function_outputs(body).items() if call_id == "call_status"]
    assert outputs, "the intent_status call's output never came back to the model"
    text = outputs[0] if isinstance(outputs[0], str) else json.dumps(outputs[0])
    envelope, _end = json.JSONDecoder().raw_decode(text[text.index("{"):])
    return envelope


@pytest.mark.parametrize("layout", ["codex-home-elsewhere", "home-codex-only"])
def test_real_codex_runs_the_plugin_from_its_cache_and_nothing_after_removal(mock_model, tmp_path, isolated_home,
                                                                             layout):
    started = time.monotonic()
    server, wrap = mock_model
    home = isolated_home
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_"))}
    env.update(HOME=str(home), NO_COLOR="1", RUST_LOG="error")
    if layout == "codex-home-elsewhere":
        decoy, decoy_marker = complete_runtime_in_home_codex(home, env)
        codex_home = tmp_path / "codex-home"
        codex_home.mkdir()
        env["CODEX_HOME"] = str(codex_home)
    else:
        decoy = None
        codex_home = home / ".codex"
        codex_home.mkdir()
    (codex_home / "config.toml").write_text(plugin_config(server.base_url))
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"

    # Install as a user would, from the built marketplace.
    codex_run(wrap, env, workspace, "plugin", "marketplace", "add", str(MARKETPLACE))
    out, _err, _secs = codex_run(wrap, env, workspace, "plugin", "add", PLUGIN_ID, "--json")
    installed = json.loads(out)
    plugin_root = Path(installed["installedPath"])
    assert plugin_root.parent == codex_home / "plugins" / "cache" / MARKETPLACE_NAME / "intent-loop", installed
    assert plugin_root.name == installed["version"]
    for binary in BINARIES:  # the copy is what runs: same bytes as the build
        assert (plugin_root / "dist" / binary.name).read_bytes() == (DIST / binary.name).read_bytes()
    # Nothing but the plugin can give Codex our hooks: no hooks.json, no [hooks] handlers, no
    # project .codex/, so every hook run below is a command under <codex-home>/plugins/cache/.
    assert not (codex_home / "hooks.json").exists() and not (workspace / ".codex").exists()
    handlers = json.loads((plugin_root / "hooks" / "hooks.json").read_text())["hooks"]
    commands = [h["command"] for groups in handlers.values() for g in groups for h in g["hooks"]]
    assert sorted(commands) == sorted(f"${{PLUGIN_ROOT}}/dist/{b.name}" for b in BINARIES if b.is_hook)

    # Turn 1: intent lines, and one MCP tool call from the model.
    server.respond_with(scripted([("call_status", "intent_status", {})]))
    prompt = ("Please fix the login flow.\nintent: goal Fix the login redirect loop\n"
              "intent: must-not action:install_local\n")
    out, err, secs1 = codex_run(wrap, env, workspace, "exec", *BYPASS, prompt, timeout=TURN_TIMEOUT)
    assert_all_hooks_completed(err, 1)
    bodies = server.response_bodies()
    ours = [m for m in developer_messages(bodies[0]) if "intent-loop" in m]
    assert any("Fix the login redirect loop" in m for m in ours), developer_messages(bodies[0])
    assert any("intent-loop:intent-loop" in m for m in developer_messages(bodies[0])), "the skill was not listed"
    status = status_result(bodies)
    assert status["ok"], status
    result = status["result"]
    # the server, started as ./dist/intent-loop-mcp without CODEX_HOME, found the hooks' data root
    assert (result["data_root"], result["data_root_source"]) == (str(data_root), "plugin cache path"), result
    assert result["linked_task"] and result["linked_task"]["task_id"] == status["task_id"], result
    if decoy is not None:  # nor did it run from ~/.codex's runtime (the launcher's shell shortcut)
        assert decoy_marker.exists(), "the plugin's MCP server ran from the runtime under ~/.codex"
    session_id = session_id_of(err, out, str(codex_home))
    assert session_id, err

    # Turn 2: the same session resumed.
    server.respond_with(None)
    before = len(bodies)
    out, err, secs2 = codex_run(wrap, env, workspace, "exec", "resume", *BYPASS, session_id,
                                "intent: done-when tests pass (sources: test)", timeout=TURN_TIMEOUT)
    assert_all_hooks_completed(err, 2)
    developer = [m for body in server.response_bodies()[before:] for m in developer_messages(body)]
    assert any("intent-loop" in m and "tests pass" in m for m in developer), developer

    # The ledger is under <codex-home>/plugin-data/intent-loop/v1/projects/<id>/ and verifies,
    # checked by the plugin's own copy of the CLI, which finds that root from its path alone.
    settle(str(data_root), str(workspace))
    project = paths_mod.project_paths(str(data_root), str(workspace))
    assert Path(project.ledger).parent == data_root / "projects" / project.project_id
    ledger_before = Path(project.ledger).read_bytes()
    bare = {k: v for k, v in env.items() if k != "CODEX_HOME"}
    verify = subprocess.run([str(plugin_root / "dist" / "intent-loop"), "verify", "--json"], cwd=workspace,
                            env=bare, capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"] is True, verify.stdout + verify.stderr
    if decoy is not None:  # ~/.codex was never written: no project there
        assert not (decoy / "projects").exists(), list(decoy.iterdir())
    raw = (workspace / ".execution-fidelity" / "contract.json").read_bytes()
    kind, document, errors = contract_file.validate_document_bytes(raw)
    assert (kind, errors) == ("provider", []), (kind, errors)
    assert document["projection"]["objective"] == "Fix the login redirect loop"
    doctor = subprocess.run([str(DIST / "intent-loop"), "doctor", "--json"], cwd=workspace, env=env,
                            capture_output=True, text=True, timeout=120)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert f"plugin {PLUGIN_ID} ({plugin_root.name})" in checks["hooks_installed"]["detail"], checks
    assert checks["duplicate_install"]["ok"]
    refused = subprocess.run([str(DIST / "intent-loop"), "install", "--apply", "--json", "--codex-home",
                              str(codex_home)], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(refused.stdout)["error"]["code"] == "PLUGIN_INSTALLED", refused.stdout

    # Uninstall: nothing of ours runs any more, and the data stays.
    codex_run(wrap, env, workspace, "plugin", "remove", PLUGIN_ID)
    assert not plugin_root.exists()
    before = len(server.response_bodies())
    out, err, secs3 = codex_run(wrap, env, workspace, "exec", *BYPASS, "intent: goal Something else entirely",
                                timeout=TURN_TIMEOUT)
    assert hook_results(err) == [] and not any(f"hook: {event}" in err for event in EVENTS), err
    [body] = server.response_bodies()[before:]
    assert not any("intent-loop" in m for m in developer_messages(body)), developer_messages(body)
    assert not any(tool.get("name") == "mcp__intent_loop" for tool in body.get("tools") or []), body.get("tools")
    assert Path(project.ledger).read_bytes() == ledger_before
    assert data_root.is_dir() and (workspace / ".execution-fidelity" / "contract.json").read_bytes() == raw
    print(f"real-codex plugin e2e ({layout}): turns {secs1:.1f} s, {secs2:.1f} s, {secs3:.1f} s; "
          f"whole test {time.monotonic() - started:.1f} s")

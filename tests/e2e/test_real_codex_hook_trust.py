"""End to end: trusting intent-loop's plugin hooks once in the real Codex TUI (0.169.0) is enough.

Codex runs a plugin's hooks only if the user has trusted them, and it ties that trust to the bytes
of the installed plugin (docs/upgrading.md, "Hook trust across plugin builds"): a plugin whose files
changed since it was trusted is "modified", and `codex exec` then prints `hook: SessionStart Failed`
and runs none of its hooks. So if one of our hooks wrote into the plugin's directory (a cache, a
log, a chosen interpreter's path), the session after it would lose intent-loop.

This test installs the repository as a plugin (as test_real_codex_repo_plugin.py does, added by
path), trusts its three hooks once in the TUI, as a user does (tui_trust.py, in a pseudo-terminal),
then runs two separate `codex exec` sessions one after the other WITHOUT
--dangerously-bypass-hook-trust. Both must run SessionStart, UserPromptSubmit and Stop to
"Completed", the second session's model request must carry the goal its prompt typed (the hooks
really ran, and the first session's writes did not untrust them), and the installed plugin's tree
must be byte-identical throughout. A last, control session shows that Codex does notice: after one
file is written into the plugin, it runs none of the three hooks (all "Failed").

Seen while writing this test: Codex 0.169.0 leaves `__pycache__` directories and `*.pyc` files out
of the plugin's content hash (a .pyc written into lib/ kept the trust), while any other new or changed
file, hidden ones included, untrusts all three hooks. The tree digest compared here counts every file.
"""
import os
import sys
import time
import tomllib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_real_codex_repo_plugin as repo_plugin  # noqa: E402
from mock_model import developer_messages  # noqa: E402
from plugin_repo import fresh_repository, install_plugin, run_codex, tree_digest, trust_all_hooks  # noqa: E402
from test_real_codex import (  # noqa: E402
    CONFIG_TOML,
    EVENTS,
    assert_all_hooks_completed,
    hook_results,
    session_id_of,
)
from test_real_codex_repo_plugin import PLUGIN_ID  # noqa: E402

mock_model = repo_plugin.mock_model
# The Codex events of the three hooks, as they are spelled in hooks.state keys.
HOOK_EVENTS = ("session_start", "user_prompt_submit", "stop")
INSTALL_TIMEOUT = 30
TUI_TIMEOUT = 40
TURN_TIMEOUT = 30  # 2 installs + the TUI + 3 sessions stay under 200 s even at their bounds

pytestmark = [
    *repo_plugin.pytestmark,
    pytest.mark.skipif(not hasattr(os, "openpty") or sys.platform == "win32",
                       reason="driving the Codex TUI needs a POSIX pseudo-terminal (os.openpty)"),
]


@pytest.fixture
def trust_env(tmp_path, isolated_home):
    """(env, codex_home, workspace): a throw-away Codex home and project; PATH as the tests have it."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("CODEX_", "OPENAI_", "PLUGIN_", "INTENT_LOOP_", "EFG_"))}
    env.update(HOME=str(isolated_home), CODEX_HOME=str(codex_home), NO_COLOR="1", RUST_LOG="error")
    return env, codex_home, workspace


def test_hooks_trusted_once_in_the_tui_run_in_two_exec_sessions_without_the_bypass(mock_model, tmp_path,
                                                                                     trust_env):
    server, wrap = mock_model
    env, codex_home, workspace = trust_env
    config = codex_home / "config.toml"
    config.write_text(CONFIG_TOML.format(base_url=server.base_url).replace("plugins = false", "plugins = true"))
    repository = fresh_repository(tmp_path / "clone")
    plugin_root = install_plugin(wrap, env, workspace, repository, PLUGIN_ID, timeout=INSTALL_TIMEOUT)
    before = tree_digest(plugin_root)
    assert "hooks.json" in before and "hooks/intent-loop" in before, sorted(before)

    # Trust once, in the TUI: one record per hook, keyed by plugin, hooks file, event and position.
    start = time.monotonic()
    keys = trust_all_hooks(env, workspace, wrap, timeout=TUI_TIMEOUT)
    tui_secs = time.monotonic() - start
    expected = [f"{PLUGIN_ID}:hooks.json:{event}:0:0" for event in HOOK_EVENTS]
    assert sorted(keys) == sorted(expected), keys
    states = tomllib.loads(config.read_text())["hooks"]["state"]
    for key in expected:
        assert states[key]["trusted_hash"].startswith("sha256:"), states[key]
    content_hashes = {states[key]["trusted_content_hash"] for key in expected}
    assert len(content_hashes) == 1 and content_hashes.pop().startswith("sha256:"), states
    assert tree_digest(plugin_root) == before, "the TUI changed the installed plugin"

    # Two separate sessions, one after the other, with no bypass: every hook Completed in both.
    goals = ("Fix the login redirect loop", "Fix the logout redirect loop")
    secs, session_ids = [], []
    for turn, goal in enumerate(goals, start=1):
        prompt = f"Please look at the auth flow.\nintent: goal {goal}\n"
        rc, out, err, took = run_codex(wrap, env, workspace, "exec", "--skip-git-repo-check", prompt,
                                   timeout=TURN_TIMEOUT, check=False)
        assert rc == 0, f"session {turn}: codex exec exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
        assert_all_hooks_completed(err, turn)
        session_ids.append(session_id_of(err, out, str(codex_home), known=session_ids))
        secs.append(took)
        bodies = server.response_bodies()
        assert len(bodies) == turn, [r["path"] for r in server.requests]
        developer = developer_messages(bodies[-1])
        assert any("intent-loop" in m and goal in m for m in developer), (turn, developer)
        assert tree_digest(plugin_root) == before, f"session {turn} changed the installed plugin"
    assert None not in session_ids and session_ids[0] != session_ids[1], session_ids

    # What the hooks wrote went under the data root (bytecode included), none of it into the plugin.
    data_root = codex_home / "plugin-data" / "intent-loop" / "v1"
    assert list((data_root / "pycache").rglob("*.pyc")), "no bytecode under the data root"
    assert not list(plugin_root.rglob("__pycache__"))
    assert tomllib.loads(config.read_text())["hooks"]["state"] == states, "the trust records changed"

    # The control: one file written into the plugin, and the next session runs none of the hooks.
    (plugin_root / "intent-loop.log").write_text("written by a hook\n")
    rc, out, err, _ = run_codex(wrap, env, workspace, "exec", "--skip-git-repo-check", "intent: goal Untrusted",
                                timeout=TURN_TIMEOUT, check=False)
    assert rc == 0, f"control session: codex exec exited {rc}\nstdout:\n{out}\nstderr:\n{err}"
    assert sorted(hook_results(err)) == sorted((event, "Failed") for event in EVENTS), err
    print(f"real-codex hook trust: TUI {tui_secs:.1f} s, session 1 {secs[0]:.1f} s, session 2 {secs[1]:.1f} s")

"""doctor's view of Claude Code (issue 37 item 8): the plugin it installed, read from its own files in
the shape 2.1.332 writes them (installed_plugins.json version 2, settings.json enabledPlugins)."""
import json

from intent_loop.cli.claude_install import claude_code_check, claude_installs


def _claude_home(home, *, enabled=True, plugin_id="intent-loop@intent-loop", version="0.3.0"):
    claude = home / ".claude"
    copy = claude / "plugins" / "cache" / "intent-loop" / "intent-loop" / version
    copy.mkdir(parents=True)
    (claude / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {
        plugin_id: [{"scope": "user", "installPath": str(copy), "version": version,
                     "installedAt": "2026-12-05T17:37:53.408Z", "gitCommitSha": "0" * 40}],
        "other@market": [{"installPath": "/x", "version": "1.0.0"}]}}))
    (claude / "settings.json").write_text(json.dumps({"enabledPlugins": {plugin_id: enabled}}))
    return copy


def test_the_installed_plugin_its_release_and_whether_it_is_enabled(tmp_path):
    copy = _claude_home(tmp_path)
    [found] = claude_installs({"HOME": str(tmp_path)})
    assert found == {"id": "intent-loop@intent-loop", "version": "0.3.0", "path": str(copy), "enabled": True}
    check = claude_code_check([found])
    assert check["ok"] and "0.3.0" in check["detail"]


def test_a_disabled_plugin_fails_the_check_and_says_how_to_enable_it(tmp_path):
    _claude_home(tmp_path, enabled=False)
    check = claude_code_check(claude_installs({"HOME": str(tmp_path)}))
    assert not check["ok"] and "claude plugin enable intent-loop@intent-loop" in check["next_action"]


def test_no_claude_code_or_unreadable_files_are_nothing_to_fix(tmp_path):
    assert claude_installs({"HOME": str(tmp_path)}) == [] and claude_code_check([])["ok"]
    (tmp_path / ".claude" / "plugins").mkdir(parents=True)
    (tmp_path / ".claude" / "plugins" / "installed_plugins.json").write_text("{not json")
    assert claude_installs({"HOME": str(tmp_path)}) == []
    assert claude_installs({"CLAUDE_CONFIG_DIR": "relative", "HOME": "relative"}) == []

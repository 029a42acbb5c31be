"""intent_status's `hooks.cause` (issue 34 item 7): why Codex did not run this plugin copy's hooks,
only as sure as Codex's files can say, read off the copy's own path (the MCP server has no CODEX_HOME)."""
import pytest

from intent_loop.launch import hook_trust


def _copy(tmp_path, config):
    home = tmp_path / "codex-home"
    launcher = home / "plugins" / "cache" / "my-market" / "intent-loop" / "0.1.0" / "hooks" / "intent-loop"
    launcher.parent.mkdir(parents=True)
    launcher.write_text("#!/bin/sh\n")
    if config is not None:
        (home / "config.toml").write_text(config)
    return str(launcher), str(home)


KEY = '[hooks.state."intent-loop@my-market:hooks.json:stop:0:0"]\n'


@pytest.mark.parametrize(("config", "cause"), [
    ("", hook_trust.NO_TRUST_RECORD),
    (KEY + 'trusted_hash = "sha256:a"\n', hook_trust.NO_TRUST_RECORD),  # one hash alone: Codex skips it
    (KEY + 'trusted_hash = "sha256:a"\ntrusted_content_hash = "sha256:b"\n', hook_trust.TRUSTED_ONCE),
    ('[hooks.state."other@my-market:hooks.json:stop:0:0"]\ntrusted_hash = "a"\ntrusted_content_hash = "b"\n',
     hook_trust.NO_TRUST_RECORD),
    ("not = [toml", None),  # unreadable: nothing is claimed
])
def test_the_cause_names_what_config_toml_records_for_this_copy(tmp_path, config, cause):
    launcher, home = _copy(tmp_path, config)
    assert hook_trust.plugin_copy_of(launcher) == (home, "intent-loop@my-market")
    assert hook_trust.untrusted_cause(launcher) == cause


def test_a_launcher_outside_codexs_plugin_cache_has_no_cause(tmp_path):
    (tmp_path / "intent-loop").write_text("")
    assert hook_trust.plugin_copy_of(str(tmp_path / "intent-loop")) is None
    assert hook_trust.untrusted_cause(str(tmp_path / "intent-loop")) is None

"""intent-loop as a Codex plugin, without Codex: the marketplace build.py writes under dist/, the
user-level install refusing while the plugin is installed, and doctor naming the install mode,
duplicates and the trust Codex recorded. The config.toml tables written here are the ones Codex
0.169.0 wrote in the runs docs/upgrading.md describes; tests/e2e/test_real_codex_plugin.py runs
the real Codex."""
import importlib.util
import json
import os
import stat
import subprocess
from pathlib import Path

import pytest

from helpers.dist import requires_dist
from intent_loop.launch.binaries import BINARIES, HOOKS

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"
MARKETPLACE = DIST / "marketplace"
PLUGIN = MARKETPLACE / "plugins" / "intent-loop"
CLI = DIST / "intent-loop"
needs_marketplace = requires_dist
PLUGIN_ID = "intent-loop@intent-loop-local"
EVENT_KEYS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit", "Stop": "stop"}


def _load_build_py():
    spec = importlib.util.spec_from_file_location("build_for_plugin_test", ROOT / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def tree(directory):
    """{relative path: (bytes, mode bits)} of every file below directory."""
    out = {}
    for path in sorted(Path(directory).rglob("*")):
        if path.is_file() or path.is_symlink():
            out[path.relative_to(directory).as_posix()] = (path.read_bytes(), stat.S_IMODE(path.lstat().st_mode))
    return out


# -- the marketplace ----------------------------------------------------------------------------
@needs_marketplace
def test_the_marketplace_holds_one_self_contained_plugin():
    files = tree(MARKETPLACE)
    plugin = "plugins/intent-loop/"
    assert set(files) == {".agents/plugins/marketplace.json", plugin + ".codex-plugin/plugin.json",
                          plugin + "hooks/hooks.json", plugin + ".mcp.json", plugin + "skills/intent-loop/SKILL.md",
                          *(plugin + "dist/" + b.name for b in BINARIES)}
    market = json.loads(files[".agents/plugins/marketplace.json"][0])
    assert market["name"] == "intent-loop-local"
    [entry] = market["plugins"]
    assert entry["name"] == "intent-loop" and entry["source"] == {"source": "local", "path": "./plugins/intent-loop"}
    manifest = json.loads(files[plugin + ".codex-plugin/plugin.json"][0])
    assert manifest["name"] == "intent-loop" and manifest["version"] == _load_build_py().project_version()
    for key in ("hooks", "mcpServers", "skills"):  # Codex takes only ./-relative paths inside the plugin
        assert manifest[key].startswith("./") and ".." not in manifest[key]
        assert (PLUGIN / manifest[key]).exists(), key
    # the hooks Codex hashes for trust: the bytes of their golden copy
    assert files[plugin + "hooks/hooks.json"][0] == \
        (ROOT / "tests" / "fixtures" / "install" / "marketplace-hooks.json").read_bytes()
    server = json.loads(files[plugin + ".mcp.json"][0])["mcpServers"]["intent_loop"]
    assert server["command"] == "./dist/intent-loop-mcp" and server["cwd"] == "."
    for binary in BINARIES:
        data, mode = files[plugin + "dist/" + binary.name]
        assert data == (DIST / binary.name).read_bytes() and mode == 0o755
    # nothing names the source tree (the binaries name only the interpreter they were built with)
    for name, (data, _mode) in files.items():
        assert str(ROOT).encode() not in data, name


@needs_marketplace
def test_the_skill_has_the_front_matter_codex_lists_and_says_when_the_tools_help():
    text = (PLUGIN / "skills" / "intent-loop" / "SKILL.md").read_text()
    assert text.startswith("---\n")
    front, body = text[4:].split("\n---\n", 1)
    fields = dict(line.split(": ", 1) for line in front.splitlines())
    assert fields["name"] == "intent-loop" and 40 < len(fields["description"]) < 1024
    for words in ("intent_get_snapshot", "compaction", "intent_add_evidence", "propose", "Never call a write tool"):
        assert words in body, words


# -- install --apply while the plugin is installed ----------------------------------------------
def run(*args, home, env_extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "INTENT_LOOP_", "PLUGIN_"))}
    env.update(HOME=str(home), **(env_extra or {}))
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, env=env, timeout=60)




@pytest.fixture
def codex(tmp_path):
    home = tmp_path / "home"
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    return home, codex_home


def add_plugin(codex_home, *, enabled=True, version="0.1.0"):
    """What `codex plugin add intent-loop@intent-loop-local` leaves (Codex 0.169.0)."""
    with open(codex_home / "config.toml", "a") as fh:
        fh.write(f'\n[marketplaces.intent-loop-local]\nsource_type = "local"\nsource = "/somewhere/dist/marketplace"\n'
                 f'\n[plugins."{PLUGIN_ID}"]\nenabled = {"true" if enabled else "false"}\n')
    (codex_home / "plugins" / "cache" / "intent-loop-local" / "intent-loop" / version / "dist").mkdir(parents=True)


def trust(codex_home, keys):
    """What trusting hooks in Codex's TUI appends to config.toml (the hash values are Codex's own)."""
    with open(codex_home / "config.toml", "a") as fh:
        fh.write("\n[hooks.state]\n")
        for key in keys:
            fh.write(f'\n[hooks.state."{key}"]\ntrusted_hash = "sha256:{"ab" * 32}"\n'
                     f'trusted_content_hash = "sha256:{"cd" * 32}"\n')


@requires_dist
def test_install_apply_is_refused_while_the_plugin_is_installed_and_nothing_is_written(codex):
    home, codex_home = codex
    add_plugin(codex_home)
    before = (codex_home / "config.toml").read_bytes()
    done = run("install", "--apply", "--json", "--dist", str(DIST), home=home)
    assert done.returncode == 1, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "PLUGIN_INSTALLED" and PLUGIN_ID in error["message"] and "--force" in error["message"]
    assert (codex_home / "config.toml").read_bytes() == before
    assert not (codex_home / "hooks.json").exists()
    # the dry run shows the same conflict as a warning and writes nothing either
    dry = run("install", "--dist", str(DIST), home=home)
    assert dry.returncode == 0 and "warning: PLUGIN_INSTALLED" in dry.stdout, dry.stdout
    assert (codex_home / "config.toml").read_bytes() == before and not (codex_home / "hooks.json").exists()


@requires_dist
def test_install_apply_with_force_installs_beside_the_plugin_and_doctor_names_the_duplicate(codex, tmp_path):
    home, codex_home = codex
    add_plugin(codex_home)
    done = run("install", "--apply", "--force", "--json", "--dist", str(DIST), home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    assert result["applied"] and result["plugin_conflict"]["forced"] is True
    assert (codex_home / "hooks.json").exists()
    assert "[mcp_servers.intent_loop]" in (codex_home / "config.toml").read_text()
    checks = doctor(home, tmp_path)
    assert not checks["duplicate_install"]["ok"], checks["duplicate_install"]
    assert "every hook runs twice" in checks["duplicate_install"]["detail"]
    assert "codex plugin remove" in checks["duplicate_install"]["next_action"]


@requires_dist
def test_a_disabled_plugin_does_not_block_the_user_level_install(codex):
    home, codex_home = codex
    add_plugin(codex_home, enabled=False)
    done = run("install", "--apply", "--json", "--dist", str(DIST), home=home)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["plugin_conflict"] is None


# -- doctor: which way is installed, and the trust Codex recorded -------------------------------
def doctor(home, tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    done = subprocess.run([str(CLI), "doctor", "--json"], cwd=workspace, capture_output=True, text=True, timeout=120,
                          env={"PATH": os.environ.get("PATH", ""), "HOME": str(home)})
    assert done.returncode in (0, 1), done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


@requires_dist
def test_doctor_names_the_plugin_install_and_counts_the_trust_records_of_its_hooks(codex, tmp_path):
    home, codex_home = codex
    add_plugin(codex_home, version="0.1.0")
    checks = doctor(home, tmp_path)
    assert checks["hooks_installed"]["ok"], checks["hooks_installed"]
    assert f"plugin {PLUGIN_ID} (0.1.0) in {codex_home}" in checks["hooks_installed"]["detail"]
    assert checks["duplicate_install"]["ok"]
    assert not checks["hooks_trusted"]["ok"] and "(0 of 3)" in checks["hooks_trusted"]["detail"]
    assert "/hooks" in checks["hooks_trusted"]["next_action"]
    trust(codex_home, [f"{PLUGIN_ID}:hooks/hooks.json:{EVENT_KEYS[h.event]}:0:0" for h in HOOKS[:2]])
    assert "(2 of 3)" in doctor(home, tmp_path)["hooks_trusted"]["detail"]


@requires_dist
def test_doctor_counts_the_trust_records_of_user_level_hooks_at_their_positions(codex, tmp_path):
    home, codex_home = codex
    hooks_path = codex_home / "hooks.json"
    foreign = {"type": "command", "command": "/usr/local/bin/audit"}
    hooks_path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [foreign]}]}}))
    assert run("install", "--apply", "--dist", str(DIST), home=home).returncode == 0
    config = json.loads(hooks_path.read_text())
    positions = {event: next((g, h) for g, group in enumerate(groups) for h, handler in enumerate(group["hooks"])
                             if "/intent-loop-" in handler["command"]) for event, groups in config["hooks"].items()}
    assert positions["Stop"] != (0, 0)  # the foreign hook keeps its place: ours is counted where it is
    keys = [f"{hooks_path}:{EVENT_KEYS[event]}:{g}:{h}" for event, (g, h) in positions.items()]
    trust(codex_home, keys + [f"{hooks_path}:stop:0:0"])  # the foreign one's record is not ours
    checks = doctor(home, tmp_path)
    assert f"user-level in {hooks_path} with the MCP server" in checks["hooks_installed"]["detail"]
    assert checks["hooks_trusted"]["ok"] and "(3 of 3)" in checks["hooks_trusted"]["detail"]


@requires_dist
def test_doctor_says_when_plugins_are_switched_off_in_codex(codex, tmp_path):
    home, codex_home = codex
    (codex_home / "config.toml").write_text("[features]\nplugins = false\n")
    add_plugin(codex_home)
    detail = doctor(home, tmp_path)["hooks_installed"]["detail"]
    assert f"plugin {PLUGIN_ID} (0.1.0) in {codex_home} but [features] plugins = false" in detail, detail

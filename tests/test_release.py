"""Versions that mean releases (issue 36 item 5): a change to what users run is a release, recorded
with `python3 build.py release X.Y.Z`, and the version is the same in every place that names it."""
import importlib.util
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from helpers.cli_runner import make_cli
from intent_loop.base.release import VERSION

ROOT = Path(__file__).resolve().parents[1]


def _build():
    spec = importlib.util.spec_from_file_location("build_for_release_test", ROOT / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    return build


def test_every_place_names_the_same_version():
    plugin = json.loads((ROOT / ".codex-plugin" / "plugin.json").read_text())
    claude = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())  # Claude Code updates on it alone
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    release = json.loads((ROOT / "release.json").read_text())
    assert plugin["version"] == claude["version"] == project["version"] == VERSION == release["version"]


def test_the_plugins_files_are_the_release_they_say_they_are():
    """Fails when a file the plugin runs changed and no release was recorded for it."""
    release = json.loads((ROOT / "release.json").read_text())
    assert _build().plugin_files_digest() == release["plugin_files_sha256"], (
        f"the plugin's files changed since release {release['version']}: run `python3 build.py release "
        "<next version>` and add its entry to CHANGELOG.md")


def test_the_changelog_has_an_entry_for_the_release():
    assert f"## {VERSION}" in (ROOT / "CHANGELOG.md").read_text()


def test_a_changed_plugin_file_makes_the_check_fail_and_a_release_records_it(tmp_path):
    """The check can fail: in a copy of the tree, one changed byte in lib/ changes the digest, and
    `build.py release` with a higher version records it in every place."""
    tree = tmp_path / "tree"
    names = _build().plugin_files() + ["build.py", "pyproject.toml", "release.json"]
    for name in names:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    spec = importlib.util.spec_from_file_location("build_in_copy", tree / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    recorded = json.loads((tree / "release.json").read_text())
    assert build.plugin_files_digest() == recorded["plugin_files_sha256"]
    errors = tree / "lib" / "intent_loop" / "errors.py"
    errors.write_text(errors.read_text() + "\n# a change users would run\n")
    assert build.plugin_files_digest() != recorded["plugin_files_sha256"]
    same = subprocess.run([sys.executable, str(tree / "build.py"), "release", recorded["version"]],
                          capture_output=True, text=True)
    assert same.returncode == 2 and "is not above" in same.stderr
    major, minor, patch = map(int, recorded["version"].split("."))
    new = f"{major}.{minor}.{patch + 1}"
    done = subprocess.run([sys.executable, str(tree / "build.py"), "release", new], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    after = json.loads((tree / "release.json").read_text())
    assert after == {"version": new, "plugin_files_sha256": build.plugin_files_digest()}
    assert json.loads((tree / ".codex-plugin" / "plugin.json").read_text())["version"] == new
    assert json.loads((tree / ".claude-plugin" / "plugin.json").read_text())["version"] == new
    assert f'VERSION = "{new}"' in (tree / "lib" / "intent_loop" / "base" / "release.py").read_text()


def test_version_and_doctor_name_the_release(tmp_path):
    cli = make_cli(tmp_path)
    rc, out, _err = cli("--version")
    assert rc == 0 and out.strip() == f"intent-loop {VERSION}"
    _rc, out, _err = cli("doctor", "--json")
    check = next(c for c in json.loads(out)["checks"] if c["name"] == "version")
    assert check["ok"] and f"intent-loop {VERSION}" in check["detail"]

"""The release this tree is: `python3 build.py release X.Y.Z` sets it, with pyproject.toml and
.codex-plugin/plugin.json, and records the digest of the plugin's files (tests/test_release.py)."""
VERSION = "0.3.0"

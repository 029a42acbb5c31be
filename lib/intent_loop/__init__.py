"""intent-loop: a tamper-evident ledger of what the user asked Codex for."""

# The release this tree is: `python3 build.py release X.Y.Z` sets it (tests/test_release.py)
__version__ = "0.2.0"

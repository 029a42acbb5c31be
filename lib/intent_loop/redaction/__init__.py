"""Credential redaction, text in and text out: the rules (secret_rules.py), the patterns compiled
from them (passes.py), and the pre-filter with the public `redact` and `has_secret` (redact.py)."""

"""intent-loop: a tamper-evident ledger of what the user asked Codex for."""

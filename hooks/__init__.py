"""Codex hook entrypoints: each is a few lines handing its event to intent_loop.hook.runtime."""

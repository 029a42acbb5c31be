"""Codex Stop hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook_handlers import stop
from intent_loop.hook_runtime import run_hook
from intent_loop.runtime_cache import finish_extraction


def main():
    finish_extraction()
    run_hook("Stop", stop)


if __name__ == "__main__":
    main()

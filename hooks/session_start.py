"""Codex SessionStart hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop import _os as os  # `os` without its import cost (see _os.py)
from intent_loop.hook_handlers import session_start
from intent_loop.hook_runtime import serve


def main():
    if "INTENT_LOOP_EXTRACTING" in os.environ:  # only the first run after shiv extracted the runtime
        from intent_loop.runtime_cache import finish_extraction

        finish_extraction()
    serve("SessionStart", session_start)


if __name__ == "__main__":
    main()

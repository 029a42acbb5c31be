"""Codex SessionStart hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook.handlers import session_start
from intent_loop.hook.runtime import serve


def main():
    serve("SessionStart", session_start)


if __name__ == "__main__":
    main()

"""Codex Stop hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook.runtime import serve
from intent_loop.hook.turn_end import stop


def main():
    serve("Stop", stop)


if __name__ == "__main__":
    main()

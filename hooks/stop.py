"""Codex Stop hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook.handlers import stop
from intent_loop.hook.runtime import serve


def main():
    serve("Stop", stop)


if __name__ == "__main__":
    main()

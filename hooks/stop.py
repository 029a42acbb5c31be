"""Codex Stop hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook_handlers import stop
from intent_loop.hook_runtime import serve


def main():
    serve("Stop", stop)


if __name__ == "__main__":
    main()

"""Codex UserPromptSubmit hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook.handlers import user_prompt_submit
from intent_loop.hook.runtime import serve


def main():
    serve("UserPromptSubmit", user_prompt_submit)


if __name__ == "__main__":
    main()

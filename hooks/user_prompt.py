"""Codex UserPromptSubmit hook: answers fail-open with the user's recorded intent where there is some."""
from intent_loop.hook_handlers import user_prompt_submit
from intent_loop.hook_runtime import run_hook
from intent_loop.runtime_cache import finish_extraction


def main():
    finish_extraction()
    run_hook("UserPromptSubmit", user_prompt_submit)


if __name__ == "__main__":
    main()

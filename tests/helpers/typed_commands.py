"""A prompt's `intent:` lines run in process as one session's typed commands (ops.apply_commands), for
the tests that drive publications, restorations and withdrawals without a hook process."""
import time

from intent_loop.intent import prompt_commands
from intent_loop.ops import apply_commands
from intent_loop.storage.paths import session_hash


def typed_runner(name):
    """run(project, workspace, prompt, env=None) -> the Receipt, as session `name` typing `prompt`; each call is
    a new request (its own event and request ids)."""
    session, count = session_hash(name), [0]

    def run(project, workspace, prompt, *, env=None):
        count[0] += 1
        request = f"{name}-{count[0]}"
        return apply_commands.run_commands(
            project, commands=prompt_commands.parse_prompt(prompt), session_hash=session,
            source_ref={"kind": "user_event", "event_id": request}, request_id=request,
            deadline=time.monotonic() + 20, workspace=workspace, env=env or {})

    return run

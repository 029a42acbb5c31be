"""One hook process run up to its answer, as the launcher's fast path gives it (`-I -S`, lib/ and
the repository on sys.path), with the handler the entry point in hooks/ imports and the work after
the answer detached into its child as in a real hook: what tests/test_hook_modules.py pins and
tests/bench/import_cost.py measures."""

ENTRY = {"SessionStart": ("hooks.session_start", "session_start"),
         "UserPromptSubmit": ("hooks.user_prompt", "user_prompt_submit"), "Stop": ("hooks.stop", "stop")}
# {lib}, {root}, {event}, {module}, {name}, then `{after}`: code run once the answer is out
RUN = r'''
import os, sys
sys.path[:0] = [{lib!r}, {root!r}]
from intent_loop.hook.runtime import run_hook
handler = getattr(__import__({module!r}, fromlist=[{name!r}]), {name!r})
run_hook({event!r}, handler, stdin_fd=0, stdout_fd=1, env=dict(os.environ), detach=True)
{after}
'''


def code_for(event, *, lib, root, after=""):
    module, name = ENTRY[event]
    return RUN.format(lib=str(lib), root=str(root), event=event, module=module, name=name, after=after)

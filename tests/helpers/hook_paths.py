"""One hook process run up to its answer, as the launcher's fast path gives it (`-I -S`, lib/ and
the repository on sys.path), with the handler the entry point in hooks/ imports and the work after
the answer detached into its child as in a real hook: what tests/hook/test_hook_modules.py pins and
tests/bench/import_cost.py measures."""

ENTRY = {"SessionStart": ("hooks.session_start", "session_start"),
         "UserPromptSubmit": ("hooks.user_prompt", "user_prompt_submit"), "Stop": ("hooks.stop", "stop")}
# {lib}, {root}, {event}, {module}, {name}, then `{after}`: code run once the answer is out, by the
# process that answered. A command prompt's hook process answers from inside its commit, which it
# forked (issue 33 item 8), and leaves from there: `_leave` runs the same code before it exits.
RUN = r'''
import os, sys
sys.path[:0] = [{lib!r}, {root!r}]
from intent_loop.hook.runtime import run_hook
handler = getattr(__import__({module!r}, fromlist=[{name!r}]), {name!r})
def _after():
{after}
    pass
def _leave():
    _after()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
try:
    run_hook({event!r}, handler, stdin_fd=0, stdout_fd=1, env=dict(os.environ), detach=True, leave=_leave)
except TypeError:  # an older tree's runtime, without `leave` (tests/bench/import_cost.py --against)
    run_hook({event!r}, handler, stdin_fd=0, stdout_fd=1, env=dict(os.environ), detach=True)
_after()
'''


def code_for(event, *, lib, root, after=""):
    module, name = ENTRY[event]
    after = "\n".join("    " + line for line in after.splitlines())
    return RUN.format(lib=str(lib), root=str(root), event=event, module=module, name=name, after=after)


# Issue 26, item 7: the number of our modules (intent_loop.* and hooks.*) each hook path loads,
# the work after the answer included (run inline here; the hook process forks it off), pinned so it
# changes only on purpose: update a figure with the reason in the commit (startup-performance.md).
PATH_MODULES = {
    # What each path loads up to its answer and the fork of its after-answer child, counting the
    # entry point in hooks/ (issue 26 made these the measure: the work after the answer runs in
    # the child, which Codex does not wait for). Splitting modules for size and by job (issues 23
    # and 26: claim_records, base/, storage/cache/, reading, event_types, seen_record, context,
    # cache_source, lazy_map) added to them; tests/bench/import_cost.py measures what that costs.
    # issue 26: the receipts' module (hook.prompt_answer) only for a notice; issue 33: +1, hook.exposure
    # (whether this session lies outside the threat model: one /proc walk and a config.toml read)
    # issue 33 item 3: a linked session's SessionStart refreshes the Guard file after its answer (a
    # takeover between sessions is restored before the first prompt): the after-answer child's
    # modules (hook/deferred, hook/pending_work: +2), as a prompt without commands already loads
    # issue 34: the view's header says what Guard enforces in this session: Guard's settings from the
    # environment and its own record of the session (guard/enforcement, guard/efg_state: a listing
    # and a small read), the Codex process's start time (base/host_process, moved out of
    # hook/exposure), and the words (ops, ops/enforcement_words): +5
    "SessionStart resume": 45,
    # issue 34: a prompt checks the verdict on Guard its session was told (guard/enforcement, +1) and
    # what the prompt paths tell moved from hook/handlers (400-line cap) to hook/telling (+1). A
    # session's FIRST prompt also confirms the verdict and tells the user once: 44 (guard/efg_state,
    # ops/enforcement_words, the seen record's writer, hook/prompt_answer for the receipt line)
    "prompt without commands": 39,
    # issue 27: a command prompt forks a child to finish its transaction's derived work after the
    # answer (hook/deferred and the pending-work lock it holds: +2); issue 26's 400-line cap split
    # what each verb does (ops/verb_runner) from running them as one mutation (+1), and redact.py
    # into its rules (secret_rules, +1) and its patterns (passes, loaded only for text the
    # pre-filter cannot clear: 0 here; import and redaction of an ordinary prompt 0.60 ms, from 0.73)
    # issue 33 item 4: every operation on the Guard file goes through descriptors walked down from
    # the project root (guard/guard_dir, +1), which neither provider nor file_state had room for;
    # issue 33 item 8: the hook process forks at its transaction's write and answers with what the
    # child composes, so the modules loaded from the write on (storage.append, intent.state_cache:
    # -2) load in that child only (hook.deferred and the pending-work lock now load before the answer)
    # issue 34: the receipt's Guard line says what Guard enforces (guard/enforcement, +1) and each
    # forbid, must-not or ask how strong it is (ops/enforcement_words, +1); the command path moved
    # from hook/handlers to hook/command_prompt and what it tells to hook/telling at the 400-line cap (+1)
    # issue 36: redaction became a package (intent_loop.redaction, +1). Its pre-filter and rules stay
    # two modules: folded into one, the patterns (which read the rules) and the pre-filter (which
    # loads the patterns) would import each other, a circle tests/test_architecture.py refuses
    # issue 37: the session's link event keeps which host it runs in, for `log` (base/host_process's
    # host_of: Claude Code's own variables, Codex's turn_id; +1)
    "prompt with two commands": 70,
    "Stop": 33,  # the Stop's recording and Guard refresh run after its answer (hook/turn_end.py)
}

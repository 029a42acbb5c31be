"""Run the `intent:` commands of one prompt (or one terminal call) as one locked mutation (what each
verb does is ops/verb_runner.py)."""
import time

from intent_loop.base.timestamps import format_utc
from intent_loop.guard.publishing import add_publication, apply_quietly
from intent_loop.intent import continuity, private_mode, tasks
from intent_loop.intent.event_types import REPUBLISHES
from intent_loop.intent.prompt_commands import Rejection
from intent_loop.intent.session_view import OFF_NOTICE, PRIVATE_NOTICE, session_context  # noqa: F401 (re-exported)
from intent_loop.intent.state import REDUCER
from intent_loop.ops.receipts import Entry, Receipt
from intent_loop.ops.verb_runner import VerbRunner
from intent_loop.storage.transaction import Planned, mutate

_PROJECTION_EVENTS = REPUBLISHES  # the event types a plan republishes the Guard file for (intent/event_types.py)


def normalized(commands):
    """The commands as plain data: the request fingerprint covers exactly this."""
    out = []
    for c in commands:
        out.append([c.line, c.verb, getattr(c, "statement", None), getattr(c, "arg", None), getattr(c, "text", None)])
    return out


def run_commands(paths, *, commands, session_hash, source_ref, request_id, deadline, workspace, env,
                 publish=True, observation=None, resume=None, former_request_ids=(), now=time.time, cwd=None,
                 hand_over=None, log_guard_failure=None, watch=None, host=None):
    """Run parsed commands (Rejections included) as one mutation; returns a Receipt.

    With `observation` ({"char_count": n}) the same mutation also records the hash-only
    `source_observed` when the session ends up linked to a task that is recording.
    `resume`: the caller's lock-free Verified read, continued by the transaction (see ledger).
    `cwd`: the hook payload's cwd as given, where Guard resolves EFG_CONTRACT_PATH from (provider).
    `former_request_ids`, `hand_over`, `watch`: see storage.transaction (a hook hands over the cache
    save, the Guard file's syncs and the lock's release, to run after its answer, and watches its
    commit so that it never calls written lines "not recorded").
    `log_guard_failure(error)`: where a Guard file that could not be written is logged (the hook's
    failure log), besides the receipt. `host`: the hook's host, kept on the session's link event.
    """
    receipt = Receipt()
    runnable = []
    for command in commands:
        if isinstance(command, Rejection):
            receipt.reject(command.line, command.verb, command.code, command.reason)
        else:
            runnable.append(command)
    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(now()), host=host)
        runner = VerbRunner(the_plan, paths, session_hash=session_hash, source_ref=source_ref,
                         request_id=request_id, receipt=receipt)
        runner.run_all(runnable)
        task_id = runner.linked_id  # a session that only read (show, help) stays unlinked: no trace
        if observation is not None and task_id is not None and not runner.is_private() \
                and runner.control_change is None and the_plan.state["tasks"][task_id]["mode"] == "on":
            tasks.observe(the_plan, task_id=task_id, event_type="source_observed", session_hash=session_hash,
                          source=source_ref, char_count=observation["char_count"], actor="user")
        publication = None
        if publish and any(d.event_type in _PROJECTION_EVENTS for d in the_plan.drafts):
            publication = add_publication(the_plan, workspace=workspace, env=env, now=now, cwd=cwd, paths=paths)
        return Planned(the_plan.drafts, detail=(runner, publication))

    def after_commit(tx, mutation):
        runner, publication = mutation.detail
        runner.apply_control_change()
        receipt.events = mutation.events
        if publication is not None:
            receipt.publication = apply_quietly(publication, log=log_guard_failure, sync_later=tx.sync_later)
        receipt.state = tx.state
        _finish(receipt, tx.state, session_hash, paths)

    if not runnable:
        return receipt
    def on_replay(tx, _mutation):  # a retry finishes what a crash after the events left undone
        private_mode.repair_after_retry(paths, session_hash, tx.state)

    mutation = mutate(paths, REDUCER, request_id=request_id, former_request_ids=former_request_ids,
                      operation="commands", params={"session": session_hash, "commands": normalized(runnable)},
                      plan=plan, deadline=deadline, after_commit=after_commit, resume=resume, on_replay=on_replay,
                      hand_over=hand_over, watch=watch)
    if mutation.replayed:
        receipt.replayed = True
        receipt.events = mutation.events
        receipt.entries.append(Entry(0, None, "replayed"))
    return receipt


def _finish(receipt, state, session_hash, paths):
    receipt.task_id = continuity.Place(state, paths, session_hash).task_id
    task = state["tasks"].get(receipt.task_id)
    if private_mode.is_private_here(paths, session_hash, task):
        receipt.notice = PRIVATE_NOTICE
    elif task is not None and task["mode"] == "off":
        receipt.notice = OFF_NOTICE

"""Publishing the Guard contract beside a ledger write: plan the `contract_published` event with
the change it follows (one write for both), then write or withdraw the file, reporting a failure
instead of raising it, since the recorded events stand either way. Used by the hooks, the
commands of a prompt (ops/apply_commands.py) and the command line."""
import time

from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import provider


def add_publication(plan, *, workspace, env, now=time.time, cwd=None, paths=None):
    """Decide the Guard publication on the state the planned events produce and plan its
    `contract_published` with them: one ledger write for a change and its contract version.
    `paths`: the project's data paths (the record of what we last wrote at the Guard path)."""
    publication = provider.plan_refresh(plan.state, workspace=workspace, env=env, now=now, cwd=cwd, paths=paths)
    for draft in publication.drafts:
        plan.add(draft)
    return publication


def _reported(write_guard_file, log=None):
    """A Guard-file write whose failure is reported, never raised: the recorded events stand. A
    failure (or a path outside the project) is also given to `log(error)` when there is one (a
    hook's failure log, so a Stop hook, whose answer nobody reads, does not swallow it)."""
    try:
        result = write_guard_file()
    except IntentLoopError as exc:
        result = {"action": "error", "reason": exc.message, "code": exc.code}
    except OSError as exc:
        result = {"action": "error", "reason": str(exc), "code": ErrorCode.PROVIDER_WRITE_FAILED}
    if log is not None and result.get("code"):
        log(IntentLoopError(result["code"], result.get("reason", "")))
    return result


def apply_quietly(publication, *, log=None, sync_later=None):
    """Write or withdraw the Guard file decided by add_publication (caller holds the lock);
    `sync_later`: see provider.apply_file."""
    def write():
        provider.apply_file(publication, sync_later=sync_later)
        return publication.as_dict()

    return _reported(write, log)


def refresh_quietly(tx, *, workspace, env, cwd=None, log=None):
    """Refresh the Guard file in its own ledger write (a retried Stop, nothing else pending)."""
    return _reported(lambda: provider.refresh(tx, workspace=workspace, env=env, cwd=cwd), log)

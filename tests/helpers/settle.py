"""Wait for the work a hook binary detaches after answering (its observation, Stop's publication)."""
from intent_loop.errors import IntentLoopError
from intent_loop.hook import pending_work
from intent_loop.storage import paths as paths_mod


def settle(data_root, cwd, *, timeout=10.0):
    """Return once no detached hook work of the project at `cwd` is running; fail after `timeout`."""
    try:
        project = paths_mod.project_paths(data_root, cwd)
    except IntentLoopError:
        return  # no such project directory: a hook could not have started work for it
    assert pending_work.wait_idle(project, timeout=timeout), f"detached hook work still running after {timeout}s"

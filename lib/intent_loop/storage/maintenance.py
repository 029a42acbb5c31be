"""Storage maintenance a call asked for while it ran (a request index to rebuild): never done inside
a hook's deadline. The caller that owns the process runs it: a hook after its answer, in the same
detached child as its own work (hook/deferred.py), the command line before it exits (cli/main.py).
Storage only asks; it knows nothing of who answers whom."""

_requested = {}


def request_maintenance(paths, name, job):
    """Ask for `job(deadline)` to run after the answer, once per project and name per process: a
    later request replaces an earlier one (it was made with the newer state)."""
    _requested[(paths.dir, name)] = (paths, job)


def peek_maintenance():
    return list(_requested.values())


def take_maintenance():
    """The (paths, job) pairs asked for so far, forgetting them."""
    jobs = list(_requested.values())
    _requested.clear()
    return jobs

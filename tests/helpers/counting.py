"""The test reducer and a one-call append, shared by the storage tests and their worker processes."""
import time

from intent_loop.storage import ledger, transaction

OPERATION = "test.append"
EVENT_TYPE = "test_appended"


class CountingReducer:
    """Counts events and collects payload values; `applied` counts apply() calls in this process."""

    version = "test-counting-1"

    def __init__(self):
        self.applied = 0

    def initial(self):
        return {"count": 0, "values": []}

    def apply(self, state, event):
        self.applied += 1
        state["count"] += 1
        state["values"].append(event["payload"].get("value"))


def drafts_for(value, *, events=1, extra=None):
    payload = {"value": value, **(extra or {})}
    return [ledger.Draft(EVENT_TYPE, None, "system", dict(payload)) for _ in range(events)]


def append_value(paths, reducer, value, *, request_id, timeout=10.0, events=1, extra=None):
    """One idempotent mutation recording `value`; returns transaction.mutate's Mutation."""
    return transaction.mutate(
        paths,
        reducer,
        request_id=request_id,
        operation=OPERATION,
        params={"value": value},
        plan=lambda _state: drafts_for(value, events=events, extra=extra),
        deadline=time.monotonic() + timeout,
    )

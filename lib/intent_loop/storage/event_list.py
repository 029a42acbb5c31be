"""The verified events as a list rather than a folded state: the timeline's reducer and recovery's valid prefix."""

from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.storage.ledger import empty_verified, fold_lines


class EventList:
    """A reducer that keeps the verified events themselves (the timeline, recovery)."""

    version = "event-list"

    def initial(self):
        return []

    def apply(self, state, event):
        state.append(event)



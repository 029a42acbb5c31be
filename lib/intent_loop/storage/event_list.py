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


def verified_prefix(data, project_id, *, on_progress=None):
    """(Verified of the longest valid prefix of `data`, the error that ends it or None).

    A partial last line is reported as LEDGER_TORN_TAIL: recovery treats it as damage too.
    """
    verified = empty_verified(EventList())
    try:
        fold_lines(data, verified, EventList(), project_id=project_id, on_progress=on_progress)
    except IntentLoopError as exc:
        return verified, exc
    if verified.torn_tail:
        line = verified.count + 1
        return verified, IntentLoopError(ErrorCode.LEDGER_TORN_TAIL, f"line {line}: a partial last line without LF",
                                         line=line)
    return verified, None

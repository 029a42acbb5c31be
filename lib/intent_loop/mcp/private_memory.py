"""What the agent records in a private session: kept in this process's memory only, per session.

Nothing of it reaches disk; it is gone when the server process ends (seed 000's private rule).
"""


class PrivateMemory:
    def __init__(self):
        self.sessions = {}  # session hash -> {"claims": {claim_id: record}, "requests": {request_id: ...}}

    def _session(self, session):
        return self.sessions.setdefault(session, {"claims": {}, "requests": {}})

    def replay(self, session, request_id, fingerprint):
        """The stored result of an exact retry, None for a new request; REQUEST_ID_REUSED otherwise."""
        stored = self._session(session)["requests"].get(request_id)
        if stored is None:
            return None
        if stored[0] != fingerprint:
            from intent_loop.errors import ErrorCode, IntentLoopError

            raise IntentLoopError(ErrorCode.REQUEST_ID_REUSED,
                                  f"request id {request_id!r} was already used for a different operation; use a new id")
        return dict(stored[1], replayed=True)

    def remember(self, session, request_id, fingerprint, result):
        self._session(session)["requests"][request_id] = (fingerprint, result)

    def add(self, session, record):
        self._session(session)["claims"][record["claim"]["claim_id"]] = record

    def records(self, session):
        """Active records of the session, oldest first."""
        return [r for r in self._session(session)["claims"].values() if r["state"] == "active"]

    def find(self, session, prefix):
        from intent_loop.errors import ErrorCode
        from intent_loop.intent.tasks import resolve_prefix

        claims = self._session(session)["claims"]
        ids = [cid for cid, r in claims.items() if r["state"] == "active"]
        found = resolve_prefix(ids, prefix, what="private claim", not_found=ErrorCode.CLAIM_NOT_FOUND,
                               where="intent_get_snapshot", min_length=4)
        return claims[found]

    def forget(self, session, claim_id):
        self._session(session)["claims"].pop(claim_id, None)

"""The embedded sample for `intent-loop demo`: a realistic Codex 0.169.0 session (payload shapes as
captured from the real host). `{cwd}` is the throw-away workspace; `{include_id}` is the short id
of the scope-include claim, read from the hook's answer to the first prompt."""

SESSION_ID = "01a22b43-73c0-7793-8e50-f1583941ed4b"
_COMMON = {
    "session_id": SESSION_ID,
    "transcript_path": ("/home/dev/.codex/sessions/2026/11/30/"
                        "rollout-2026-11-30T07-02-50-01a22b43-73c0-7793-8e50-f1583941ed4b.jsonl"),
    "cwd": "/home/dev/work/webapp",
    "model": "gpt-5-codex",
    "permission_mode": "default",
}
_TURNS = ("01a22b43-73d6-7c33-941b-5757aeed33ff", "01a22b43-76f2-7be3-adbb-88121d6f2061",
          "01a22b43-7a10-7c11-8d2e-3f4a5b6c7d8e")


def _event(name, **fields):
    return {"event": name, "payload": dict(_COMMON, hook_event_name=name, **fields)}


STEPS = (
    ("Codex starts a session in the project", _event("SessionStart", source="startup")),
    ("The user states the task with intent: commands", _event(
        "UserPromptSubmit", turn_id=_TURNS[0], prompt=(
            "The totals on the checkout page are off by a cent for some carts. Please fix it.\n"
            "intent: goal fix the rounding of cart totals in checkout\n"
            "intent: object the checkout service\n"
            "intent: include src/checkout/\n"
            "intent: must-not action:install_local\n"
            "intent: done-when cart totals match the invoice to the cent (sources: test)"))),
    ("The agent finishes the turn", _event("Stop", turn_id=_TURNS[0], stop_hook_active=False,
                                           last_assistant_message="I changed the rounding in src/checkout/totals.py.")),
    ("The user widens the scope (replace by short id)", _event(
        "UserPromptSubmit", turn_id=_TURNS[1], prompt=(
            "Tests live next to the code, you may touch them too.\n"
            "intent: replace {include_id} src/checkout/ and tests/checkout/"))),
    ("The user adds a rule with a typo (rejected) and a requirement", _event(
        "UserPromptSubmit", turn_id=_TURNS[1], prompt=(
            "intent: forbid Tools: web\n"
            "intent: must keep the public API of the checkout service unchanged"))),
    ("The agent finishes the turn", _event("Stop", turn_id=_TURNS[1], stop_hook_active=False,
                                           last_assistant_message="Added tests; all green.")),
    ("The user asks to see the recorded intent", _event(
        "UserPromptSubmit", turn_id=_TURNS[2], prompt="intent: show")),
)

"""Two stores (issue 37 item 4, docs/storage.md "Two stores"): when another data root this hook's
environment names also holds this folder's ledger, SessionStart tells the user which one and which
one the session uses; nothing is read from the other, nothing of either is changed."""
import os

from helpers.dist import requires_dist
from helpers.hook_binaries import env, fixture, hook, prompt_payload, ws  # noqa: F401 (fixtures)
from intent_loop.base.data_root import candidate_roots

pytestmark = requires_dist


def _ledger_bytes(root, workspace):
    from intent_loop.storage import paths

    with open(paths.project_paths(root, workspace).ledger, "rb") as fh:
        return fh.read()


def test_a_second_store_holding_this_folder_is_named_at_session_start(env, ws):  # noqa: F811
    home_store = os.path.join(env["HOME"], ".codex", "plugin-data", "intent-loop", "v1")
    # Claude Code's hooks (no variable) wrote to the default store ...
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship the parser"), dict(env, INTENT_LOOP_DATA_DIR=""))
    before = _ledger_bytes(home_store, ws)
    # ... and this session's host names another one
    _out, answer, _ = hook("SessionStart", fixture("session_start.startup.json", ws), env)
    assert home_store in answer["systemMessage"] and env["INTENT_LOOP_DATA_DIR"] in answer["systemMessage"]
    assert "ship the parser" not in answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    assert _ledger_bytes(home_store, ws) == before
    # the default store's own sessions see nothing of the other, which holds no ledger of this folder
    _out, quiet, _ = hook("SessionStart", fixture("session_start.startup.json", ws), dict(env, INTENT_LOOP_DATA_DIR=""))
    assert "systemMessage" not in quiet


def test_the_candidates_are_every_root_a_step_of_the_order_names():
    every = {"INTENT_LOOP_DATA_DIR": "/d/", "CODEX_HOME": "/x", "PLUGIN_DATA": "/y/plugins/data/p", "HOME": "/h"}
    assert candidate_roots(every) == ["/d", "/x/plugin-data/intent-loop/v1", "/y/plugin-data/intent-loop/v1",
                                    "/h/.codex/plugin-data/intent-loop/v1"]
    assert candidate_roots({"CODEX_HOME": "rel", "HOME": "/h/"}) == ["/h/.codex/plugin-data/intent-loop/v1"]
    # a PLUGIN_DATA outside Codex's layout names no store since 0.3.0, but where an older build kept one
    assert candidate_roots({"PLUGIN_DATA": "/p/plugins/data/m/nested"}) == ["/p/plugins/data/m/nested/intent-loop/v1"]

"""Issue 14's secrets through the built binaries, on every entry path (typed `intent:` lines, a task
label, prose, a Stop message, `claim add`, import, MCP): no byte of one reaches the ledger, the
cache, the Guard file or the model's context. And a prompt retried across an upgrade of the rules
is recorded once."""
import json
import os
import subprocess
import tempfile
import time

from helpers import mcp_client
from helpers.dist import requires_dist
from helpers.fake_secrets import AGE, BASIC_SHORT, DATADOG, GCP_KEY_ID, HEROKU, ISSUE_14_LEAKS, SENDGRID, SHOPIFY
from helpers.mcp_client import McpServer, codex_meta
from helpers.receipt_words import read
from helpers.settle import settle
from intent_loop.intent.state import REDUCER
from intent_loop.launch.binaries import BINARY_FOR_EVENT
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(REPO, "dist")
CLI_BINARY = os.path.join(DIST, "intent-loop")

pytestmark = requires_dist

# What must appear nowhere: for the two fragment leaks, the fragment version 1 kept.
FORBIDDEN = sorted({leaked for _text, leaked in ISSUE_14_LEAKS} | {"tr0ub4dor", SENDGRID})


env = mcp_client.env  # the shared fixtures, by the names the tests ask for
ws = mcp_client.ws


def run_hook(event, env, ws, **fields):
    payload = {"session_id": "sess-secrets", "cwd": ws, "hook_event_name": event, "model": "m",
               "permission_mode": "default", "transcript_path": None, **fields}
    proc = subprocess.run([os.path.join(DIST, BINARY_FOR_EVENT[event])], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=30)
    assert proc.returncode == 0, proc.stderr
    settle(env["INTENT_LOOP_DATA_DIR"], ws)
    return proc.stdout


def run_cli(env, ws, *argv):
    proc = subprocess.run([CLI_BINARY, *argv, "--json"], capture_output=True, env=env, cwd=ws, timeout=30)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return proc.stdout


def stored_bytes(env, ws):
    """Every file under the data root (ledger, cache, indexes, logs; not the binaries' extracted code)
    and the workspace (Guard file)."""
    found = {}
    for root in (env["INTENT_LOOP_DATA_DIR"], ws):
        for directory, dirs, names in os.walk(root):
            dirs[:] = [name for name in dirs if not (root == env["INTENT_LOOP_DATA_DIR"] and name == "runtime")]
            for name in names:
                with open(os.path.join(directory, name), "rb") as fh:
                    found[os.path.relpath(os.path.join(directory, name), root)] = fh.read()
    return found


def leaks(blobs):
    return sorted({(name, secret) for name, blob in blobs.items() for secret in FORBIDDEN
                   if secret.encode() in blob})


def test_no_secret_byte_is_stored_or_shown_on_any_path(env, ws):
    shown = {}  # what the model and the user were given
    shown["label"] = run_hook("UserPromptSubmit", env, ws, turn_id="t1",
                              prompt="intent: new rotate creds after curl -u alice:s3cret\n"
                                     "intent: goal rotate every credential\n"
                                     f"the old ones were {BASIC_SHORT} and mysql -u root -pS3cr3tPw app")
    shown["typed"] = run_hook("UserPromptSubmit", env, ws, turn_id="t2",
                              prompt="\n".join(f"intent: must {text}" for text, _leaked in ISSUE_14_LEAKS))
    receipt = json.loads(shown["typed"])["hookSpecificOutput"]["additionalContext"]
    assert [(e.outcome, e.verb) for e in read(receipt)] == [("recorded", "must")] * len(ISSUE_14_LEAKS)
    shown["stop"] = run_hook("Stop", env, ws, turn_id="t2", stop_hook_active=False,
                             last_assistant_message=" ".join(text for text, _leaked in ISSUE_14_LEAKS))
    shown["claim add"] = run_cli(env, ws, "claim", "add", "must", f"ship with DD_APP_KEY={DATADOG}")
    shown["claim add 2"] = run_cli(env, ws, "claim", "add", "must", f"and {SHOPIFY['at']}")

    guard_file = os.path.join(".execution-fidelity", "contract.json")
    before_import = stored_bytes(env, ws)  # the imported task (no goal) will be the newest: Guard withdrawn
    assert b"[REDACTED:" in before_import[guard_file]
    graph = json.loads(run_cli(env, ws, "export"))
    task_id = graph["task"]["task_id"]
    graph["task"]["label"] = f"import {AGE[1]}"
    graph["claims"][0]["statement"] = f'"private_key_id": "{GCP_KEY_ID}" heroku api key: {HEROKU}'
    with open(os.path.join(ws, "g.json"), "w", encoding="utf-8") as fh:
        json.dump(graph, fh)
    shown["import"] = run_cli(env, ws, "import", "g.json")
    os.unlink(os.path.join(ws, "g.json"))  # the file the user was handed is theirs, not ours

    with McpServer(env, cwd=ws) as server:
        server.initialize()
        for n, (text, _leaked) in enumerate(ISSUE_14_LEAKS):
            envelope = server.call("intent_add_evidence", {"statement": f"seen: {text}"},
                                   meta=codex_meta(ws, thread="sess-secrets", call=f"c{n}"))
            assert envelope["ok"], envelope
            shown[f"mcp {n}"] = json.dumps(envelope).encode()
        shown["mcp snapshot"] = json.dumps(server.call("intent_get_snapshot", {}, workspace=ws,
                                                       thread="sess-secrets")).encode()
    shown["resume"] = run_hook("SessionStart", env, ws, source="clear")

    stored = stored_bytes(env, ws)
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    assert os.path.relpath(project.ledger, env["INTENT_LOOP_DATA_DIR"]) in stored
    assert any("/cache/" in name for name in stored), sorted(stored)  # the cache is there to be searched
    assert leaks(before_import) == [] and leaks(stored) == [] and leaks(shown) == []
    state = reading.verify_all(project, REDUCER).state
    statements = [record["claim"]["statement"] for task in state["tasks"].values()
                  for record in task["claims"].values()]
    assert len(statements) >= 2 * len(ISSUE_14_LEAKS) and task_id in state["tasks"]
    assert sum("[REDACTED:" in statement for statement in statements) >= 2 * len(ISSUE_14_LEAKS)


def test_a_prompt_retried_across_the_upgrade_is_recorded_once(env, ws, monkeypatch):
    """The first attempt ran under the previous version (in-process, `redact` held at the released
    rules), the retry runs the built binary: it finds the request under its former id and replays it."""
    from intent_loop.hook import handlers, runtime
    from intent_loop.redaction import redact as redact_module

    prompt = f"intent: goal deploy the shop\nintent: must use datadog api key {DATADOG} for the ci"
    former_version = redact_module.VERSION - 1
    payload = {"session_id": "sess-upgrade", "cwd": ws, "hook_event_name": "UserPromptSubmit", "model": "m",
               "permission_mode": "default", "transcript_path": None, "turn_id": "t-retry", "prompt": prompt}
    assert redact_module.redact(prompt, version=former_version) != redact_module.redact(prompt)  # the ids differ
    released = redact_module.redact
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(redact_module, "redact",
                        lambda text, *, version=former_version: released(text, version=former_version))
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
        fin.write(json.dumps(payload).encode())
        fin.seek(0)
        runtime.run_hook("UserPromptSubmit", handlers.HANDLERS["UserPromptSubmit"], stdin_fd=fin.fileno(),
                         stdout_fd=fout.fileno(), env=env)
    monkeypatch.setattr(redact_module, "redact", released)
    settle(env["INTENT_LOOP_DATA_DIR"], ws)
    project = paths_mod.project_paths(env["INTENT_LOOP_DATA_DIR"], ws)
    first = reading.verify_all(project, REDUCER)
    claims_before = sum(len(task["claims"]) for task in first.state["tasks"].values())
    assert claims_before == 2

    time.sleep(0.01)
    retry = subprocess.run([os.path.join(DIST, BINARY_FOR_EVENT["UserPromptSubmit"])],
                           input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=30)
    assert retry.returncode == 0, retry.stderr
    settle(env["INTENT_LOOP_DATA_DIR"], ws)
    assert "already recorded" in json.loads(retry.stdout)["hookSpecificOutput"]["additionalContext"]
    after = reading.verify_all(project, REDUCER)
    assert sum(len(task["claims"]) for task in after.state["tasks"].values()) == claims_before
    with open(project.ledger, "rb") as fh:
        assert len(fh.read().splitlines()) == first.count


def test_without_the_former_id_the_retry_would_be_a_new_request(env, ws):
    """The former id is what makes the replay: the two versions give the prompt different ids."""
    from intent_loop.hook import handlers

    class Context:
        session = "s" * 64

    prompt = f"intent: must use datadog api key {DATADOG}"
    current, former = handlers._prompt_request_ids(Context(), {"turn_id": "t"}, prompt)
    assert former and former[0] != current
    assert handlers._prompt_request_ids(Context(), {"turn_id": "t"}, "intent: must keep it green")[1] == ()

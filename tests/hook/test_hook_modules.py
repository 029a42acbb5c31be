"""What a hook path imports is chosen on purpose (startup-performance.md): the modules of the
SessionStart path of a session that has not typed a command (after `/clear`, a new `codex exec`)
are pinned here, so they change only on purpose, and that path loads no writer."""
import ast
import json
import os
import subprocess
import sys

from helpers.hook_paths import PATH_MODULES, code_for  # one run, shared with tests/bench/import_cost.py

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRINT_MODULES = 'print("\\n@@" + repr(sorted(sys.modules)))'
# The unlinked SessionStart path at this commit: the read path (ledger, cache, views), the continuity
# rule and the hook runtime; no storage.atomic, transaction or lock (it writes nothing).
UNLINKED_SESSION_START = (
    "intent_loop", "intent_loop.base", "intent_loop.base.canonical", "intent_loop.base.data_root",
    "intent_loop.base.fast_os",
    "intent_loop.base.host_process",  # the Codex process's start time and argv (issue 34; was in hook.exposure)
    "intent_loop.base.platform", "intent_loop.base.timestamps",
    "intent_loop.errors",
    # issue 34: what Guard enforces in this session, said in the view's header (Guard's settings and
    # records, guard/enforcement; its words, ops/enforcement_words): a listing and a small read
    "intent_loop.guard", "intent_loop.guard.efg_state", "intent_loop.guard.enforcement",
    "intent_loop.hook", "intent_loop.hook.context",
    "intent_loop.hook.exposure",  # the threat model's once-a-session check (issue 33): a few small reads
    "intent_loop.hook.handlers",
    "intent_loop.hook.runtime", "intent_loop.hook.seen_record",  # hook.prompt_answer: only for a notice
    "intent_loop.intent", "intent_loop.intent.cache_source", "intent_loop.intent.claim_records",
    "intent_loop.intent.claim_verbs", "intent_loop.intent.claims", "intent_loop.intent.continuity",
    "intent_loop.intent.event_types", "intent_loop.intent.private_mode", "intent_loop.intent.session_view",
    "intent_loop.intent.state", "intent_loop.intent.state_cache", "intent_loop.intent.views",
    "intent_loop.ops", "intent_loop.ops.enforcement_words",
    "intent_loop.storage", "intent_loop.storage.cache", "intent_loop.storage.cache.cache_store",
    "intent_loop.storage.cache.chain_marker", "intent_loop.storage.cache.checkpoint",
    "intent_loop.storage.cache.lazy_map", "intent_loop.storage.ledger", "intent_loop.storage.line_hash",
    "intent_loop.storage.paths", "intent_loop.storage.reading",
)
COSTLY = ("json", "tomllib", "re", "typing", "dataclasses", "enum", "inspect", "subprocess", "threading", "pathlib",
          "datetime", "orjson", "uuid", "tempfile", "shutil", "zipfile", "logging", "argparse")


def _run(event, payload, env):
    """(the hook's answer, the sorted names of every module the process loaded)."""
    code = code_for(event, lib=os.path.join(ROOT, "lib"), root=ROOT, after=PRINT_MODULES)
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], input=json.dumps(payload).encode(),
                          capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    answer, _marker, modules = done.stdout.decode().rpartition("\n@@")
    return json.loads(answer), ast.literal_eval(modules.strip())


def test_the_unlinked_session_start_path_loads_exactly_its_pinned_modules(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    # a user's Codex home has a config.toml: without Guard in it, no TOML parser is loaded (~13 ms)
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "gpt-5"\n[features]\nhooks = true\n')
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "d")}
    base = {"transcript_path": None, "cwd": str(ws), "model": "m", "permission_mode": "default"}
    _run("UserPromptSubmit", dict(base, session_id="sess-A", turn_id="t-1", hook_event_name="UserPromptSubmit",
                                  prompt="intent: goal ship the parser\nintent: forbid action:network"), env)
    answer, loaded = _run("SessionStart", dict(base, session_id="sess-after-clear", hook_event_name="SessionStart",
                                       source="clear"), env)
    ours = tuple(name for name in loaded if name.startswith("intent_loop"))
    assert ours == UNLINKED_SESSION_START, sorted(set(ours) ^ set(UNLINKED_SESSION_START))
    assert not set(COSTLY) & set(loaded), sorted(set(COSTLY) & set(loaded))
    # and it really answered with the current task's view (not an empty, cheaper path)
    view = answer["hookSpecificOutput"]["additionalContext"]
    assert "follows the workspace's current task" in view and "forbid: action:network" in view
    from intent_loop.intent.state import REDUCER
    from intent_loop.storage import paths, reading

    state = reading.load_verified(paths.project_paths(env["INTENT_LOOP_DATA_DIR"], str(ws)), REDUCER).state
    assert paths.session_hash("sess-after-clear") not in state["sessions"] and len(state["tasks"]) == 1




def _path_runs(tmp_path):
    """Each path run twice and counted the second time, as tests/bench/import_cost.py counts it: the
    steady state (a session's first prompt also confirms what Guard enforces: see hook_paths.py)."""
    from bench.import_cost import payloads

    ws = tmp_path / "ws"
    ws.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "d")}
    event, payload = payloads(ws, 0)["prompt with two commands"]
    _run(event, dict(payload, prompt="intent: goal ship the parser"), env)
    counted = {}
    for name in PATH_MODULES:
        for n in range(2):
            event, payload = payloads(ws, n)[name]
            counted[name] = _run(event, payload, env)[1]
    return counted


def test_each_hook_path_loads_its_pinned_number_of_modules(tmp_path):
    counts = {name: sum(1 for m in loaded if m.startswith(("intent_loop", "hooks")))
              for name, loaded in _path_runs(tmp_path).items()}
    assert counts == PATH_MODULES


def test_the_hooks_empty_state_is_the_reducers_own():
    """context.NO_STATE is typed out so a never-recorded folder imports no reducer: it must say
    what REDUCER.initial() says of every map it has."""
    from intent_loop.hook.context import NO_STATE
    from intent_loop.intent.state import REDUCER

    initial = REDUCER.initial()
    assert {key: initial[key] for key in NO_STATE} == NO_STATE

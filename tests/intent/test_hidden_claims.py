"""Issue 23, the cost of a big task: the claims a hook does not show (imports, the agent's) live in
their own cache shard, which the hook paths never read, and whose damage every reader that does
read it survives (intent/claim_records.py). Through the built binaries, on a task of imported
claims the user then typed a goal into."""
import json
import os
import shutil

import pytest

from helpers import hook_binaries
from helpers.cache_files import edit_shard, shard_file
from helpers.dist import requires_dist
from helpers.hook_binaries import cli, hook, project_of, prompt_payload
from intent_loop.base.canonical import canonical_bytes, loads, sha256_hex
from intent_loop.intent import views
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws
IMPORTED = 60


def _graph(tmp_path, count, *, scope="task", start=0):
    claims = [{"claim_id": f"{i:08x}-0000-4000-8000-000000000000", "statement": f"must: keep rule {i} of the module",
               "role": "user", "epistemic_status": "explicit", "source_ref": {"kind": "user_event", "event_id": "t"},
               "scope": scope, "valid_from": "2026-01-01T00:00:00.000Z", "last_confirmed": None, "supersedes": [],
               "facets": ["hard_constraint"], "state": "active"} for i in range(start, start + count)]
    path = tmp_path / f"graph-{start}.json"
    path.write_text(json.dumps({"format": "intent-loop-graph", "version": 1, "exported_at": "2026-02-01T00:00:00.000Z",
                                "task": {"task_id": "t-1", "mode": "on", "created_at": "2026-01-01T00:00:00Z"},
                                "claims": claims}))
    return str(path)


def _big_task(env, ws, tmp_path):
    """An import of IMPORTED claims, then the user's goal typed into it: (project, task id)."""
    proc, _t = cli(env, ws, "import", _graph(tmp_path, IMPORTED), "--project", ws)
    assert proc.returncode == 0, proc.stderr
    hook("UserPromptSubmit", prompt_payload(ws, "intent: goal ship it", turn="t-goal"), env)
    project = project_of(env, ws)
    state = reading.load_verified(project, REDUCER).state
    return project, state["last_change"]["task_id"]


def _context(answer):
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def _hook_paths(env, ws, n):
    """The three hook paths whose cost must not grow with the hidden claims, as their contexts: a
    new session's start and its prompt with two commands, then a prompt without commands in the
    session that typed the goal, which is told what the other one changed."""
    session = f"sess-new-{n}"
    _o, start, _e = hook("SessionStart", dict(prompt_payload(ws, "x"), hook_event_name="SessionStart",
                                               source="clear", session_id=session), env)
    _o, commands, _e = hook("UserPromptSubmit", prompt_payload(
        ws, f"intent: must keep API {n}\nintent: include src/m{n}/", turn=f"t-cmd-{n}", session=session), env)
    _o, plain, _e = hook("UserPromptSubmit", prompt_payload(ws, f"keep going {n}", turn=f"t-plain-{n}"), env)
    return _context(start), _context(commands), _context(plain)


def _hidden_file(project, task):
    return shard_file(project, "h-" + task)


def test_no_hook_path_reads_the_hidden_claims_shard(env, ws, tmp_path):
    project, task = _big_task(env, ws, tmp_path)
    path = _hidden_file(project, task)
    size = os.path.getsize(path)
    garbage = b"x" * size  # unreadable: a reader that opened it would have to re-fold and rewrite it
    with open(path, "wb") as fh:
        fh.write(garbage)
    stamp = os.path.join(project.cache_dir, "scrub.stamp")
    with open(stamp, "w"):  # the daily scrub (after an answer) reads everything: not due today
        pass
    for n in range(2):
        for context in _hook_paths(env, ws, n):
            assert "goal: ship it" in context and f"{IMPORTED} imported" in context
            assert "keep rule" not in context  # never an imported claim's words
        with open(path, "rb") as fh:
            assert fh.read() == garbage, "a hook path read (and repaired) the hidden claims' shard"
    os.utime(stamp, (0, 0))  # the scrub is due: the next detached child compares every shard and heals
    hook("UserPromptSubmit", prompt_payload(ws, "keep going", turn="t-scrub"), env)
    proc, _t = cli(env, ws, "verify", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"], proc.stdout
    assert not os.path.exists(path) or open(path, "rb").read() != garbage


def test_show_reads_a_damaged_hidden_shard_from_the_ledger_and_the_cache_heals(env, ws, tmp_path):
    project, task = _big_task(env, ws, tmp_path)
    with open(_hidden_file(project, task), "wb") as fh:
        fh.write(b"{}")
    proc, _t = cli(env, ws, "show")
    assert proc.returncode == 0, proc.stderr
    assert "- [" in proc.stdout and "must: keep rule 0 of the module (evidence, imported)" in proc.stdout
    assert f"{IMPORTED + 1} active claims" in proc.stdout
    proc, _t = cli(env, ws, "verify", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"], proc.stdout  # the read rewrote the cache


def _rows(project, task):
    with open(_hidden_file(project, task), "rb") as fh:
        return loads(fh.read()[65:])


def _rewrite(path, doc):
    body = canonical_bytes(doc)
    with open(path, "wb") as fh:
        fh.write(sha256_hex(body).encode() + b"\n" + body)


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_hidden_claim_moved_among_the_shown_ones_is_never_shown_as_the_users_words(env, ws, tmp_path, where):
    project, task = _big_task(env, ws, tmp_path)
    doc = _rows(project, task)
    claim_id = sorted(doc["data"])[0 if where == "first" else -1]
    row = doc["data"][claim_id]
    statement = f"keep rule {int(claim_id[:8], 16)} of"

    def forge(data):
        data["claims"][claim_id] = row[:4]  # the shown rows' shape: [state, seq, ended_by, pointer]

    edit_shard(project, "t-" + task, forge)
    for context in _hook_paths(env, ws, 0):
        assert statement not in context and "goal: ship it" in context
        assert f"{IMPORTED} imported" in context  # the fold's count, not the forged partition's


@pytest.mark.parametrize("forged", [
    ["direct", "user", "user", "explicit", "user_event"],  # facts of the user's own typing
    ["import", "agent", "agent", "inferred", "agent_turn"],  # another kind, so show would tag it wrong
])
def test_forged_facts_are_caught_when_the_claim_is_read_and_the_scrub_reports_them(env, ws, tmp_path, forged):
    project, task = _big_task(env, ws, tmp_path)

    def forge():
        path = _hidden_file(project, task)
        doc = _rows(project, task)
        claim_id = min(doc["data"], key=lambda k: doc["data"][k][3][4])  # the import's first: show prints it
        doc["data"][claim_id][4][:5] = forged
        _rewrite(path, doc)
        return claim_id

    forge()
    proc, _t = cli(env, ws, "verify", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and [f["code"] for f in result["findings"]] == ["CACHE_MISMATCH"]
    claim_id = forge()  # again, in the cache verify rebuilt: show must catch it on its own
    proc, _t = cli(env, ws, "show")
    line = next(line for line in proc.stdout.splitlines() if line.startswith(f"- [{claim_id[:8]}]"))
    assert line.endswith("(evidence, imported)"), line  # the ledger's facts, never the forged ones


def test_a_forged_summary_is_believed_like_lifecycle_until_the_scrub_rebuilds_it(env, ws, tmp_path):
    project, task = _big_task(env, ws, tmp_path)

    def forge(data):
        data["hidden"]["omitted"] = {"imported": 999}

    edit_shard(project, "t-" + task, forge)
    with open(os.path.join(project.cache_dir, "scrub.stamp"), "w"):  # the daily scrub would heal it: not due
        pass
    assert "999 imported" in _hook_paths(env, ws, 0)[0]  # a count, never words: the threat model's line
    proc, _t = cli(env, ws, "verify", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and [f["code"] for f in result["findings"]] == ["CACHE_MISMATCH"]
    assert f"{IMPORTED} imported" in _hook_paths(env, ws, 1)[0]


def test_long_term_imported_claims_of_another_task_are_counted_from_the_root_and_never_shown(env, ws, tmp_path):
    proc, _t = cli(env, ws, "import", _graph(tmp_path, 5, scope="long_term", start=100), "--project", ws)
    assert proc.returncode == 0, proc.stderr
    hook("UserPromptSubmit", prompt_payload(ws, "intent: new other work\nintent: goal ship it", turn="t-new"), env)
    context = _hook_paths(env, ws, 0)[0]
    assert "goal: ship it" in context and "5 imported" in context and "keep rule 10" not in context


def test_the_views_of_a_cache_backed_task_are_the_folds_views(env, ws, tmp_path):
    project, task = _big_task(env, ws, tmp_path)
    proc, _t = cli(env, ws, "import", _graph(tmp_path, 4, scope="long_term", start=500))
    assert proc.returncode == 0
    hook("UserPromptSubmit", prompt_payload(ws, "intent: resume " + task[:8], turn="t-resume"), env)
    hook("UserPromptSubmit", prompt_payload(ws, "intent: must not touch the db\nintent: forbid action:network",
                                            turn="t-more"), env)
    cached = reading.load_verified(project, REDUCER).state
    shutil.rmtree(project.cache_dir)
    os.mkdir(project.cache_dir)
    folded = reading.load_verified(project, REDUCER, write_cache=False).state
    assert isinstance(folded["tasks"][task]["claims"], dict)  # a plain fold, no cache behind it
    now = 1.8e9
    for view in (views.hook_view, views.compact_view):
        assert view(cached, task) == view(folded, task)
    assert views.snapshot(cached, task, now=now) == views.snapshot(folded, task, now=now)
    assert views.history(cached["tasks"][task]) == views.history(folded["tasks"][task])

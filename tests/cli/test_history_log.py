"""`intent-loop log` (issue 25): the history in words, newest first, every event type worded, and a
cost that follows what it prints, not the ledger's size."""
import json
import time

from helpers.big_ledger import append_observations
from helpers.cli_runner import make_cli
from intent_loop.cli import history
from intent_loop.intent import prompt_commands
from intent_loop.intent.state import REDUCER
from intent_loop.ops import apply_commands
from intent_loop.storage.ledger import Draft
from intent_loop.storage.paths import session_hash
from intent_loop.storage.transaction import mutate

SESSION = session_hash("log-session")


def _typed(cli, prompt, n):
    return apply_commands.run_commands(
        cli.project(), commands=prompt_commands.parse_prompt(prompt), session_hash=SESSION,
        source_ref={"kind": "user_event", "event_id": f"turn-{n}"}, request_id=f"log-{n}",
        deadline=time.monotonic() + 20, workspace=cli.workspace, env={}, observation={"char_count": 9})


def test_log_words_every_event_type_newest_first(tmp_path):
    cli = make_cli(tmp_path)
    _typed(cli, "intent: goal Fix the login redirect loop\nintent: ask action:publish", 1)
    state = cli.json("status")
    task_id = state["newest_task"]
    project = cli.project()

    def plan(_state):
        return [Draft("proposal_added", task_id, "agent", {
            "candidate_id": "d4e58df6-0000-4000-8000-000000000000", "statement": "must: keep the API",
            "facets": ["hard_constraint"], "scope": "task", "verb": "must",
            "source_ref": {"kind": "agent_turn", "event_id": "mcp-1"}})]
    mutate(project, REDUCER, request_id="mcp:1", operation="t", params={}, plan=plan, deadline=time.monotonic() + 10)
    _typed(cli, "intent: confirm d4e58df6\nintent: off", 2)
    _typed(cli, "intent: on\nintent: new side work\nintent: resume " + task_id[:8], 3)
    append_observations(project, task_id=task_id, count=4, session_hash=SESSION)
    rc, out, err = cli("log")
    assert rc == 0, err
    lines = out.splitlines()
    assert "4 observations" not in out and "2 prompts, 2 turns" in lines[0]  # the newest first, as counts
    text = "\n".join(lines)
    for words in ("you started task", ", with goal: Fix the login redirect loop [", "; ask: action:publish [",
                  "the agent proposed must: keep the API [d4e58df6] (not your words)",
                  "you confirmed [d4e58df6] as must: keep the API [", "you turned task", " off", " on",
                  'you started task', '"side work"', "(intent: resume)", "Guard contract v1 published (task",
                  "Guard contract v2 published"):
        assert words in text, (words, text)
    assert text.index("you confirmed") < text.index("the agent proposed") < text.index(", with goal:")
    assert "(session " in text
    doc = cli.json("log", "--task", task_id[:8])
    assert doc["entries"] and all(e["task"] == task_id for e in doc["entries"])
    assert cli.json("log", "-n", "1")["entries"][0]["events"] == 1


def test_every_event_type_the_reducer_knows_has_words():
    import re
    from pathlib import Path

    source = (Path(history.__file__).parents[1] / "intent" / "state.py").read_text()
    types = re.findall(r"def _on_([a-z_]+)\(", source)
    assert types
    for etype in types:
        assert f'"{etype}"' in Path(history.__file__).read_text() or etype in history._OBSERVATIONS, etype


def test_log_reads_what_it_prints_not_the_whole_ledger(tmp_path, monkeypatch):
    """At 20,000 events the default log reads 50 lines from the end: count the lines it verifies."""
    from intent_loop.storage.cache import bulk_verify

    cli = make_cli(tmp_path)
    _typed(cli, "intent: goal ship it", 1)
    task_id = cli.json("status")["newest_task"]
    append_observations(cli.project(), task_id=task_id, count=20000, session_hash=SESSION)
    cli.json("status")  # the checkpoint caught up, as any hook leaves it
    verified = []
    real = bulk_verify.verify_line
    monkeypatch.setattr(bulk_verify, "verify_line", lambda *a, **k: verified.append(1) or real(*a, **k))
    rc, out, _err = cli("log")
    assert rc == 0 and "25 prompts, 25 turns" in out
    assert len(verified) == 50
    assert json.loads(cli("log", "--json")[1])["entries"][0]["events"] == 50


def test_every_claim_making_event_in_log_carries_the_ids_approve_and_drop_take(tmp_path):
    """An exec user reads the ids `intent: approve` and `drop` take from `intent-loop log` (issue 34
    item 8): every claim an event makes is named by its short id, however many it makes."""
    from intent_loop.storage import reading

    cli = make_cli(tmp_path)
    _typed(cli, "intent: goal ship it\nintent: ask action:publish\nintent: forbid action:network\n"
                "intent: must keep the API\nintent: must-not touch prod", 1)
    task_id = cli.json("status")["newest_task"]
    state = reading.load_verified(cli.project(), REDUCER).state
    ask = next(cid for cid, r in state["tasks"][task_id]["claims"].items() if "publish" in r["claim"]["statement"])
    _typed(cli, f"intent: approve {ask[:8]}\nintent: replace {ask[:8]} allow: action:publish", 2)
    _typed(cli, "intent: done-when the tests pass", 3)
    rc, text, err = cli("log", "-n", "200")
    assert rc == 0, err
    state = reading.load_verified(cli.project(), REDUCER).state
    made = [claim_id for claim_id in state["tasks"][task_id]["claims"]]
    assert len(made) >= 7
    for claim_id in made:
        assert f"[{claim_id[:8]}]" in text, (claim_id, text)


def test_log_has_words_for_every_host_a_hook_records():
    """A host added to base/host_process.HOSTS without its words in `log` fails here."""
    from intent_loop.base.host_process import HOSTS, host_of
    from intent_loop.cli.history import HOST_WORDS

    assert set(HOST_WORDS) == set(HOSTS)
    assert {host_of({}), host_of({"CLAUDECODE": "1"})} == set(HOSTS)
    assert host_of({"CLAUDECODE": "1"}, {"turn_id": "t-1"}) == "codex"  # Codex's turn_id wins

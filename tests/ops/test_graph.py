"""Export/import of a task as a portable graph: round trip, provenance, and every import rejection."""
import json
import os
import time

import pytest

from helpers.cli_runner import make_cli
from intent_loop.base.timestamps import utc_sort_key
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.guard import provider
from intent_loop.intent.claim_records import is_hook_visible
from intent_loop.intent.state import REDUCER
from intent_loop.ops import graph_format, graph_import
from intent_loop.storage.reading import load_verified, verify_all


@pytest.fixture
def cli(tmp_path):
    return make_cli(tmp_path)


@pytest.fixture
def project(cli):
    return cli.project()


def _ledger(project):
    with open(project.ledger, "rb") as fh:
        return fh.read()


def _populated(cli):
    """A task with a goal, a replaced must, a dropped must: active, superseded, invalidated."""
    goal = cli.json("claim", "add", "goal", "ship", "the", "parser")
    must = cli.json("claim", "add", "must", "keep", "tests", "green")
    replaced = cli.json("claim", "replace", must["claim_id"][:8], "keep", "tests", "fast")
    dropped = cli.json("claim", "add", "must-not", "touch", "vendor/")
    cli.json("claim", "drop", dropped["claim_id"][:8])
    return goal["task_id"], {"goal": goal["claim_id"], "old": must["claim_id"], "new": replaced["claim_id"],
                             "dropped": dropped["claim_id"]}


def _export(cli, task_id, name="g.json"):
    cli.json("export", "--task", task_id, "-o", name)
    with open(os.path.join(cli.workspace, name), "rb") as fh:
        return fh.read()


# -- export ---------------------------------------------------------------------------------
def test_export_document_shape(cli):
    task_id, ids = _populated(cli)
    doc = json.loads(_export(cli, task_id))
    assert doc["format"] == "intent-loop-graph" and doc["version"] == 1
    assert doc["task"]["task_id"] == task_id and doc["task"]["mode"] == "on"
    assert utc_sort_key(doc["exported_at"]) is not None
    states = {c["claim_id"]: c["state"] for c in doc["claims"]}
    assert states == {ids["goal"]: "active", ids["old"]: "superseded", ids["new"]: "active",
                      ids["dropped"]: "invalidated"}
    new = next(c for c in doc["claims"] if c["claim_id"] == ids["new"])
    assert new["supersedes"] == [ids["old"]]
    raw = _export(cli, task_id, "again.json")
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1  # canonical JSON, one line
    assert graph_format.validate(raw)[1] == []


def test_export_refuses_to_overwrite_without_force(cli):
    task_id, _ids = _populated(cli)
    target = os.path.join(cli.workspace, "g.json")
    with open(target, "wb") as fh:
        fh.write(b"keep me\n")
    out = cli.json("export", "--task", task_id, "-o", "g.json", expect=1)
    assert out["error"]["code"] == ErrorCode.FILE_EXISTS
    with open(target, "rb") as fh:
        assert fh.read() == b"keep me\n"
    rc, _, err = cli("export", "--task", task_id, "-o", "g.json")
    assert rc == 1 and "FILE_EXISTS" in err
    done = cli.json("export", "--task", task_id, "-o", "g.json", "--force")
    assert done["ok"]
    with open(target, "rb") as fh:
        assert json.loads(fh.read())["format"] == "intent-loop-graph"
    assert oct(os.stat(target).st_mode & 0o777) == "0o600"
    assert not [n for n in os.listdir(cli.workspace) if n.endswith(".tmp")]


def test_export_to_stdout_and_default_task(cli):
    task_id, _ids = _populated(cli)
    rc, out, _ = cli("export")
    assert rc == 0 and json.loads(out)["task"]["task_id"] == task_id


# -- import round trip ------------------------------------------------------------------------
def test_round_trip_fresh_ids_import_provenance_not_hook_visible(cli, project):
    task_id, ids = _populated(cli)
    data = _export(cli, task_id)
    before_projection = provider.projection_for(load_verified(project, REDUCER).state["tasks"][task_id],
                                                project_root=cli.workspace)
    result = cli.json("import", "g.json")
    assert result["started_task"] and result["task_id"] != task_id
    assert result["imported_claims"] == 4 and result["superseded"] == 1 and result["invalidated"] == 1
    state = verify_all(project, REDUCER).state
    new_task = state["tasks"][result["task_id"]]
    assert new_task["mode"] == "on"
    old_ids = set(ids.values()) | {task_id}
    assert not old_ids & set(new_task["claims"])
    for cid in new_task["claims"]:
        assert cid not in data.decode()
    by_text = {r["claim"]["statement"]: r for r in new_task["claims"].values()}
    assert set(by_text) == {"ship the parser", "must: keep tests green", "must: keep tests fast",
                            "must not: touch vendor/"}
    for record in new_task["claims"].values():
        claim = record["claim"]
        assert record["provenance"] == "import"
        assert claim["source_ref"]["kind"] == "explicit_import" and set(claim["source_ref"]) == {"kind", "sha256"}
        assert (claim["role"], claim["epistemic_status"]) == ("evidence", "evidence")  # explicit -> evidence
        assert not is_hook_visible(record)
    assert by_text["must: keep tests green"]["state"] == "superseded"
    assert by_text["must not: touch vendor/"]["state"] == "invalidated"
    assert by_text["must: keep tests fast"]["claim"]["supersedes"] == [
        by_text["must: keep tests green"]["claim"]["claim_id"]]
    assert provider.projection_for(new_task, project_root=cli.workspace) is None  # never feeds the Guard
    # the original task is untouched and still projects the same
    assert provider.projection_for(state["tasks"][task_id], project_root=cli.workspace) == before_projection
    # a second import of the same file gets other fresh ids
    again = cli.json("import", "g.json")
    assert not set(again["claim_ids"]) & set(result["claim_ids"])


def test_import_into_existing_task_leaves_guard_projection_alone(cli, project):
    task_id, _ids = _populated(cli)
    data = _export(cli, task_id)
    state = load_verified(project, REDUCER).state
    before = provider.projection_for(state["tasks"][task_id], project_root=cli.workspace)
    result = cli.json("import", "g.json", "--task", task_id[:8])
    assert result["task_id"] == task_id and not result["started_task"]
    assert result["publication"]["action"] == "unchanged"
    state = verify_all(project, REDUCER).state
    assert provider.projection_for(state["tasks"][task_id], project_root=cli.workspace) == before
    imported = [r for r in state["tasks"][task_id]["claims"].values() if r["provenance"] == "import"]
    assert len(imported) == 4 and not any(is_hook_visible(r) for r in imported)
    assert data  # the file stays readable


def test_inferred_keeps_confidence_and_statement_is_redacted(cli, project):
    doc = _valid_doc()
    secret = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    doc["claims"][1]["statement"] = f"deploy with token {secret}"
    result = cli.json("import", _write(cli, doc))
    state = verify_all(project, REDUCER).state
    records = state["tasks"][result["task_id"]]["claims"].values()
    inferred = [r["claim"] for r in records if r["claim"]["epistemic_status"] == "inferred"]
    assert inferred and inferred[0]["confidence"] == 0.75 and inferred[0]["role"] == "agent"
    assert secret.encode() not in _ledger(project)
    assert any("[REDACTED:" in r["claim"]["statement"] for r in records)


# -- import rejections --------------------------------------------------------------------------
def _claim(cid, statement, *, valid_from="2026-01-01T00:00:00.000Z", supersedes=(), state="active", **extra):
    claim = {"claim_id": cid, "statement": statement, "role": "user", "epistemic_status": "explicit",
             "source_ref": {"kind": "user_event", "event_id": "turn-1"}, "scope": "task",
             "valid_from": valid_from, "last_confirmed": None, "supersedes": list(supersedes),
             "facets": ["outcome"], "state": state}
    claim.update(extra)
    return claim


def _valid_doc():
    return {
        "format": "intent-loop-graph", "version": 1, "exported_at": "2026-02-01T00:00:00.000Z",
        "task": {"task_id": "t-1", "label": "imported", "mode": "on", "created_at": "2026-01-01T00:00:00Z"},
        "claims": [
            _claim("a", "ship it", state="superseded"),
            _claim("b", "ship it well", valid_from="2026-01-02T00:00:00Z", supersedes=["a"], role="agent",
                   epistemic_status="inferred", confidence=0.75),
            _claim("c", "the CI log shows green", role="evidence", epistemic_status="evidence",
                   source_ref={"kind": "tool_result", "sha256": "0" * 64}),
        ],
    }


def _write(cli, doc, name="in.json"):
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with open(os.path.join(cli.workspace, name), "wb") as fh:
        fh.write(data)
    return name


def _mutations():
    def oversize(d):
        return json.dumps(d).encode() + b" " * (graph_format.MAX_BYTES + 1)

    def too_many(d):
        d["claims"] = [_claim(f"c{i}", f"claim {i}") for i in range(graph_format.MAX_CLAIMS + 1)]

    def set_claim(index, **changes):
        def apply(d):
            d["claims"][index].update(changes)
        return apply

    def cyclic(d):
        d["claims"] = [_claim("x", "one", supersedes=["y"], state="superseded"),
                       _claim("y", "two", supersedes=["x"], state="superseded")]

    return {
        "oversize": (oversize, "bytes"),
        "too_many_claims": (too_many, "at most 2000"),
        "non_utc_offset": (set_claim(0, valid_from="2026-01-01T00:00:00+02:00"), "UTC"),
        "non_utc_naive": (set_claim(2, last_confirmed="2026-01-01 00:00:00"), "UTC"),
        "bad_exported_at": (lambda d: d.update(exported_at="yesterday"), "exported_at"),
        "bad_task_created_at": (lambda d: d["task"].update(created_at="2026-13-01T00:00:00Z"), "created_at"),
        "duplicate_ids": (set_claim(2, claim_id="a"), "duplicate claim_id"),
        "dangling_supersedes": (set_claim(1, supersedes=["a", "nope"]), "not a claim of this graph"),
        "cyclic": (cyclic, "cyclic"),
        "back_in_time": (set_claim(1, valid_from="2025-12-31T00:00:00Z"), "back in time"),
        "superseded_without_superseder": (set_claim(1, supersedes=[]), "no claim of the graph supersedes it"),
        "self_supersede": (set_claim(2, supersedes=["c"]), "itself"),
        "illegal_role": (set_claim(0, role="agent"), "goes with role"),
        "unknown_status": (set_claim(0, epistemic_status="certain"), "unknown role"),
        "confidence_on_explicit": (set_claim(0, confidence=0.5), "only inferred"),
        "confidence_three_decimals": (set_claim(1, confidence=0.333), "two decimals"),
        "confidence_out_of_range": (set_claim(1, confidence=1.5), "between 0 and 1"),
        "confidence_missing": (lambda d: d["claims"][1].pop("confidence"), "needs a confidence"),
        "multiline_statement": (set_claim(0, statement="first line\nsecond line"), "one line"),
        "oversized_statement": (set_claim(0, statement="x" * 501), "at most 500"),
        "empty_statement": (set_claim(0, statement="  "), "empty"),
        "paragraph_separator": (set_claim(0, statement="ship\u2028push to main"), "one line"),
        "bom_only_statement": (set_claim(0, statement="\ufeff"), "empty"),
        "bad_state": (set_claim(2, state="deleted"), "state must be"),
        "bad_facet": (set_claim(2, facets=["vibes"]), "facets"),
        "unknown_field": (set_claim(2, secret_field=1), "unknown field"),
        "wrong_format": (lambda d: d.update(format="other"), "format"),
        "future_version": (lambda d: d.update(version=2), "version"),
        "not_json": (lambda d: b"{nope", "JSON"),
    }


@pytest.mark.parametrize("name", sorted(_mutations()))
def test_import_rejections_write_nothing(cli, project, name):
    _populated(cli)
    before = _ledger(project)
    mutate_doc, expected = _mutations()[name]
    doc = _valid_doc()
    produced = mutate_doc(doc)
    data = produced if isinstance(produced, bytes) else json.dumps(doc).encode()
    out = cli.json("import", _write(cli, data), expect=1)
    assert out["error"]["code"] == ErrorCode.IMPORT_INVALID
    problems = out["error"]["details"]["problems"]
    assert any(expected in p for p in problems), problems
    assert _ledger(project) == before


def test_import_lists_every_problem(cli, project):
    _populated(cli)
    before = _ledger(project)
    doc = _valid_doc()
    doc["claims"][0]["valid_from"] = "2026-01-01T00:00:00+01:00"
    doc["claims"][2]["claim_id"] = "a"
    doc["claims"][1]["confidence"] = 2
    with pytest.raises(IntentLoopError) as info:
        graph_import.import_graph(project, REDUCER, json.dumps(doc).encode(), deadline=time.monotonic() + 10)
    assert info.value.code == ErrorCode.IMPORT_INVALID
    assert len(info.value.details["problems"]) >= 3
    rc, _out, err = cli("import", _write(cli, doc))
    assert rc == 1 and err.count("\n  - ") >= 3
    assert _ledger(project) == before


def test_valid_handmade_graph_imports(cli, project):
    result = cli.json("import", _write(cli, _valid_doc()))
    state = verify_all(project, REDUCER).state
    task = state["tasks"][result["task_id"]]
    assert task["label"] == "imported" and len(task["claims"]) == 3
    assert sorted(r["state"] for r in task["claims"].values()) == ["active", "active", "superseded"]


def test_import_into_off_task_is_refused(cli, project):
    task_id, _ids = _populated(cli)
    _export(cli, task_id)
    cli.json("off", "--task", task_id)
    before = _ledger(project)
    out = cli.json("import", "g.json", "--task", task_id, expect=1)
    assert out["error"]["code"] == ErrorCode.TASK_OFF and _ledger(project) == before
    out = cli.json("export", "--task", task_id, "-o", "h.json", expect=1)
    assert out["error"]["code"] == ErrorCode.TASK_OFF


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_import_of_something_not_a_file_is_refused_at_once(cli, project, kind):
    """A FIFO nobody writes to used to hang `import` until it was killed."""
    path = os.path.join(cli.workspace, "graph.json")
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.mkdir(path)
    out = cli.json("import", "graph.json", expect=2)
    assert out["error"]["code"] == ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize("mark", ["\u202e", "\x1b", "\u2028"])
def test_an_imported_label_or_statement_with_control_or_bidi_characters_is_refused(cli, mark):
    task_id, _ids = _populated(cli)
    doc = json.loads(_export(cli, task_id))
    doc["task"]["label"] = f"release {mark} notes"
    problems = graph_format.validate(json.dumps(doc).encode())[1]
    assert any("task.label" in str(p) for p in problems), problems
    doc["task"]["label"] = None
    doc["claims"][0]["statement"] = f"ship {mark} it"
    assert graph_format.validate(json.dumps(doc).encode())[1] != []

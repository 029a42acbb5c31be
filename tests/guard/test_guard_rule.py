"""Issue 33 item 3, in-process: what a refresh says while a takeover is pending, and that no
steady-state refresh takes a version from the file."""
import os
import time

import pytest

from helpers.typed_commands import typed_runner
from intent_loop.guard import document, provider
from intent_loop.intent.state import ProjectReducer
from intent_loop.storage import reading, transaction

REDUCER = ProjectReducer()


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home-rule"))
    monkeypatch.delenv("EFG_CONTRACT_PATH", raising=False)


run = typed_runner("rule-session")


def guard(workspace):
    return os.path.join(workspace, ".execution-fidelity", "contract.json")


def forge(workspace, version):
    import json

    with open(guard(workspace), "rb") as fh:
        ours = json.loads(fh.read())
    doc = document.build_document(dict(ours["projection"], objective="the agent's"),
                                  contract_ref=ours["envelope"]["contract_ref"], contract_version=version,
                                  source_message_refs=[], updated_at="2026-01-01T00:00:00.000Z")
    with open(guard(workspace), "wb") as fh:
        fh.write(document.render_document(doc))


def test_guard_still_enforces_is_said_only_when_the_file_is_that_version(monkeypatch, project, workspace):
    run(project, workspace, "intent: goal ship it")
    monkeypatch.setattr(provider.acceptance, "validate_provider_document", lambda doc: ["projection.x: refused"])
    run(project, workspace, "intent: must keep the API")  # refused: v1 stays, and is at the path
    state = reading.load_verified(project, REDUCER).state
    before = provider.plan_refresh(state, workspace=workspace, env={}, paths=project)
    assert before.action == "invalid" and before.reason.startswith("Guard still enforces v1"), before.reason
    forge(workspace, 1)
    after = provider.plan_refresh(state, workspace=workspace, env={}, paths=project)
    assert after.action == "invalid" and "still enforces" not in after.reason, after.reason
    assert after.reason.startswith("Guard does not enforce v1")


@pytest.mark.parametrize("forged", [2, 7, 2 ** 53 - 1])
def test_a_refresh_never_takes_the_files_version(project, workspace, forged):
    run(project, workspace, "intent: goal ship it")
    forge(workspace, forged)
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        result = provider.refresh(tx, workspace=workspace, env={})
    assert (result["action"], result["version"], result["restored"]) == ("restored", 1, "other_version")
    receipt = run(project, workspace, "intent: must keep the API")
    assert (receipt.publication["action"], receipt.publication["version"]) == ("published", 2)


def test_a_directory_at_the_path_we_hold_is_moved_aside_never_deleted(project, workspace):
    run(project, workspace, "intent: goal ship it")
    os.unlink(guard(workspace))
    os.makedirs(os.path.join(guard(workspace), "inner"))
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        result = provider.refresh(tx, workspace=workspace, env={})
    assert (result["action"], result["restored"], result["version"]) == ("restored", "directory", 1), result
    assert os.path.isfile(guard(workspace))
    assert os.listdir(os.path.join(workspace, result["moved"])) == ["inner"]
    with open(project.ledger, "rb") as fh:
        assert fh.read().count(b"contract_restored") == 1


def test_a_restoration_interrupted_before_its_write_is_recorded_once(monkeypatch, project, workspace):
    run(project, workspace, "intent: goal ship it")
    with open(guard(workspace), "wb") as fh:
        fh.write(b"{}\n")  # a takeover

    def interrupted(step):
        if step == "rename":
            raise OSError(5, "interrupted")

    monkeypatch.setattr(provider.guard_dir, "_between", interrupted)
    with pytest.raises(Exception) as failed:
        with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
            provider.refresh(tx, workspace=workspace, env={})
    assert getattr(failed.value, "code", None) == "PROVIDER_WRITE_FAILED"
    monkeypatch.undo()
    with open(guard(workspace), "rb") as fh:
        assert fh.read() == b"{}\n"
    with open(project.ledger, "rb") as fh:
        assert fh.read().count(b'"contract_restored"') == 1  # recorded before the write failed
    for _ in range(2):
        with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
            result = provider.refresh(tx, workspace=workspace, env={})
    with open(project.ledger, "rb") as fh:
        assert fh.read().count(b'"contract_restored"') == 1
    assert result["action"] == "unchanged"
    state = reading.load_verified(project, REDUCER).state
    assert provider.plan_refresh(state, workspace=workspace, env={}, paths=project).action == "unchanged"
    with open(guard(workspace), "wb") as fh:  # the same bytes again, after the restoration finished
        fh.write(b"{}\n")
    with transaction.Transaction(project, REDUCER, deadline=time.monotonic() + 10) as tx:
        assert provider.refresh(tx, workspace=workspace, env={})["action"] == "restored"
    with open(project.ledger, "rb") as fh:
        assert fh.read().count(b'"contract_restored"') == 2

"""Issue 23 item 11 through the built binaries: a `logs/` directory replaced by a symbolic link gets
nothing written through it, neither the failure log nor the `hook-failures.unlogged` marker the
log falls back to (it was once created in the link's target, outside the data root)."""
import os

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import hook, project_of, prompt_payload

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws


def _linked_logs(env, ws, tmp_path):
    """A project whose ledger is damaged (its next command fails and the hook logs that), with
    `<data root>/logs` a link to a directory outside the data root."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    project = project_of(env, ws)
    logs = os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs")
    if os.path.isdir(logs) and not os.path.islink(logs):
        for name in os.listdir(logs):
            os.unlink(os.path.join(logs, name))
        os.rmdir(logs)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, logs)
    with open(project.ledger, "ab") as fh:
        fh.write(b"garbage line\n")
    return logs, outside


def _fail_a_command(env, ws, turn):
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep it", turn=turn), env)
    assert "NOT recorded" in answer["systemMessage"]


def test_a_hook_failure_writes_nothing_through_a_linked_logs_directory(env, ws, tmp_path):
    logs, outside = _linked_logs(env, ws, tmp_path)
    _fail_a_command(env, ws, "t-2")
    assert os.listdir(outside) == []
    assert os.path.islink(logs)  # left where it stands: what a link points at is not ours to change


def test_a_marker_already_in_the_links_target_is_not_touched(env, ws, tmp_path):
    logs, outside = _linked_logs(env, ws, tmp_path)
    marker = outside / "hook-failures.unlogged"
    marker.write_bytes(b"")
    past = 1_000_000_000
    os.utime(marker, (past, past))
    _fail_a_command(env, ws, "t-3")
    assert sorted(os.listdir(outside)) == ["hook-failures.unlogged"]
    assert os.stat(marker).st_mtime == past and marker.read_bytes() == b""


def test_a_real_logs_directory_still_gets_the_failure(env, ws, tmp_path):
    """The control: the same failure with `logs/` a real directory is logged there."""
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    with open(project_of(env, ws).ledger, "ab") as fh:
        fh.write(b"garbage line\n")
    _fail_a_command(env, ws, "t-4")
    logs = os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs")
    assert not os.path.islink(logs)
    assert os.path.getsize(os.path.join(logs, "hook-failures.jsonl")) > 0

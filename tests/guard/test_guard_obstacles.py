"""Issue 33 item 3, review findings 3, 4 and 5, through the built hooks: at a path we hold, a
directory at the file's name or a file where its folder is is moved aside intact (never deleted)
and our publication written back; a project with no record of its Guard file (written before the
record existed, or lost) takes it from the ledger; a folder flooded with temp names does not delay
the restoration."""
import json
import os
import time

import pytest
from test_guard_takeover import LITE, TAKEOVERS, _forged, _publish_ours, guard_binds, guard_path

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import events, fixture, hook, project_of, prompt_payload
from intent_loop.guard import file_state, guard_dir
from intent_loop.ops.receipts import restored_text

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws


def _restorations(env, ws, since):
    return [e for e in events(env, ws)[since:] if e["event_type"] == "contract_restored"]


def _bound_ours(tmp_path, ws, ours, version=None):
    bound = guard_binds(tmp_path, ws)
    envelope = ours["envelope"]
    assert (bound["status"], bound["ref"], bound["version"], bound["hash"]) == \
        ("bound", envelope["contract_ref"], version or envelope["contract_version"],
         envelope["snapshot_sha256"]), bound
    assert bound["forbidden"] == ["action:network"]


def _told_once(env, ws, found, version, moved=None):
    _out, told, _t = hook("UserPromptSubmit", prompt_payload(ws, "and then", turn="t8"), env)
    assert told["systemMessage"] == "intent-loop: " + restored_text(found, version, moved), told
    _out, again, _t = hook("UserPromptSubmit", prompt_payload(ws, "once more", turn="t9"), env)
    assert "systemMessage" not in again


def _obstruct(ws, where):
    """The obstacle and what it holds: a directory at contract.json (with a file in it), or a
    regular file at .execution-fidelity."""
    folder = os.path.dirname(guard_path(ws))
    if where == "directory":
        os.unlink(guard_path(ws))
        os.mkdir(guard_path(ws))
        with open(os.path.join(guard_path(ws), "notes.txt"), "wb") as fh:
            fh.write(b"the agent's notes\n")
        return guard_path(ws)
    for name in os.listdir(folder):
        os.unlink(os.path.join(folder, name))
    os.rmdir(folder)
    with open(folder, "wb") as fh:
        fh.write(b"a file where the folder was\n")
    return folder


@pytest.mark.parametrize("trigger", ["Stop", "prompt without commands"])
@pytest.mark.parametrize("where,found", [("directory", "directory"), ("file on the way", "not_directory")])
def test_an_obstacle_at_a_path_we_hold_is_moved_aside_intact_and_ours_restored(tmp_path, env, ws, where, found,
                                                                                trigger):
    ours = _publish_ours(tmp_path, env, ws)
    obstacle = _obstruct(ws, where)
    assert guard_binds(tmp_path, ws)["status"] != "bound"
    count = len(events(env, ws))
    if trigger == "Stop":
        hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    else:
        hook("UserPromptSubmit", prompt_payload(ws, "please go on", turn="t2"), env)
    _bound_ours(tmp_path, ws, ours)
    restorations = _restorations(env, ws, count)
    assert len(restorations) == 1, [e["event_type"] for e in events(env, ws)[count:]]
    payload = restorations[0]["payload"]
    assert (payload["found"], payload["contract_version"], payload["kept"]) == \
        (found, ours["envelope"]["contract_version"], None)
    moved = payload["moved_aside"]
    assert os.path.dirname(os.path.join(ws, moved)) == os.path.dirname(obstacle)
    assert os.path.basename(moved).startswith(os.path.basename(obstacle) + guard_dir.ASIDE)
    if where == "directory":  # the directory and its content, as they were
        assert os.listdir(os.path.join(ws, moved)) == ["notes.txt"]
        with open(os.path.join(ws, moved, "notes.txt"), "rb") as fh:
            assert fh.read() == b"the agent's notes\n"
    else:
        with open(os.path.join(ws, moved), "rb") as fh:
            assert fh.read() == b"a file where the folder was\n"
    assert not [e for e in events(env, ws)[count:] if e["event_type"] == "contract_published"]
    _told_once(env, ws, found, ours["envelope"]["contract_version"], moved)
    assert len(_restorations(env, ws, count)) == 1


def test_an_obstacle_at_a_path_we_do_not_hold_is_never_touched(tmp_path, env, ws):
    _publish_ours(tmp_path, env, ws)
    hook("UserPromptSubmit", prompt_payload(ws, "intent: off", turn="t2"), env)
    os.mkdir(guard_path(ws))
    hook("UserPromptSubmit", prompt_payload(ws, "intent: on", turn="t3"), env)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t3"), env)
    assert os.path.isdir(guard_path(ws)) and os.listdir(guard_path(ws)) == []
    assert sorted(os.listdir(os.path.dirname(guard_path(ws)))) == [".gitignore", "contract.json"]


@pytest.mark.parametrize("name", ["task_contract_lite", "another_ref", "deleted"])
def test_with_no_record_of_the_file_the_ledger_says_the_path_is_held(tmp_path, env, ws, name):
    ours = _publish_ours(tmp_path, env, ws)
    record = os.path.join(project_of(env, ws).dir, file_state.RECORD_NAME)
    os.unlink(record)  # a project published before the record existed, or a record lost
    make, found, _up = TAKEOVERS[name]
    if make is None:
        os.unlink(guard_path(ws))
    else:
        with open(guard_path(ws), "wb") as fh:
            fh.write(make(ours))
    count = len(events(env, ws))
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t1"), env)
    _bound_ours(tmp_path, ws, ours)
    restorations = _restorations(env, ws, count)
    assert [r["payload"]["found"] for r in restorations] == [found]
    assert os.path.exists(record)  # written again with the restoration
    _told_once(env, ws, found, ours["envelope"]["contract_version"])


def test_with_no_record_a_file_written_after_intent_off_stays_the_users(tmp_path, env, ws):
    _publish_ours(tmp_path, env, ws)
    hook("UserPromptSubmit", prompt_payload(ws, "intent: off", turn="t2"), env)
    record = os.path.join(project_of(env, ws).dir, file_state.RECORD_NAME)
    if os.path.exists(record):
        os.unlink(record)
    users = json.dumps(LITE, indent=2).encode() + b"\n"
    with open(guard_path(ws), "wb") as fh:
        fh.write(users)
    count = len(events(env, ws))
    hook("UserPromptSubmit", prompt_payload(ws, "intent: on", turn="t4"), env)
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t4"), env)
    with open(guard_path(ws), "rb") as fh:
        assert fh.read() == users
    assert not _restorations(env, ws, count)


def test_a_folder_flooded_with_temp_names_does_not_delay_the_restoration(tmp_path, env, ws):
    ours = _publish_ours(tmp_path, env, ws)
    folder = os.path.dirname(guard_path(ws))
    for _ in range(20_000):
        open(os.path.join(folder, f"contract.json.{os.urandom(16).hex()}.tmp"), "wb").close()
    with open(guard_path(ws), "wb") as fh:
        fh.write(_forged(ours, ref="intent:00000000-0000-5000-8000-000000000000", version=1))
    count = len(events(env, ws))
    started = time.monotonic()
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep the API", turn="t2"), env)
    elapsed = time.monotonic() - started
    version = ours["envelope"]["contract_version"] + 1  # the contract changed: published with the restoration
    assert answer["systemMessage"].startswith("intent-loop: " + restored_text("other_ref", version)), answer
    assert "DEADLINE_EXCEEDED" not in json.dumps(answer) and elapsed < 3, elapsed
    assert [r["payload"]["found"] for r in _restorations(env, ws, count)] == ["other_ref"]
    hook("Stop", fixture("stop.turn1.json", ws, session_id="sess-1", turn_id="t2"), env)
    assert len(_restorations(env, ws, count)) == 1
    left = len(os.listdir(folder)) - 2  # contract.json, .gitignore
    assert 20_000 - 3 * guard_dir.TEMP_SCAN_LIMIT <= left < 20_000  # bounded, but some cleared

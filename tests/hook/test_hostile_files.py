"""Issue 12 (items 5, 6, 7, 9) through the built binaries: special files where ours belong never hang
or crash a hook or a command, writes never go through links, and failures are never silent."""
import json
import os
import subprocess
import time

from helpers import hook_binaries
from helpers.dist import requires_dist
from helpers.hook_binaries import BINARIES, DIST, cli, fixture, hook, project_of, prompt_payload, raw_hook
from helpers.receipt_words import read, said

pytestmark = requires_dist
env = hook_binaries.env  # the fixtures, by the names the tests ask for
ws = hook_binaries.ws
SESSION = prompt_payload("/", "x")["session_id"]


def _linked(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it", turn="t-1"), env)
    return project_of(env, ws)


def test_a_fifo_at_the_pending_work_lock_never_keeps_a_hook_alive(env, ws):
    project = _linked(env, ws)
    lock = os.path.join(project.cache_dir, "deferred.lock")
    if os.path.exists(lock):
        os.unlink(lock)
    os.mkfifo(lock)
    for event, payload in (("Stop", fixture("stop.turn1.json", ws, session_id=SESSION)),
                           ("UserPromptSubmit", prompt_payload(ws, "carry on", turn="t-2"))):
        proc, elapsed = raw_hook(event, payload, env)
        assert proc.returncode == 0 and json.loads(proc.stdout)["continue"] is True
        assert elapsed < 5, f"{event} hook stayed alive {elapsed:.1f}s"
        if os.path.exists(lock):
            assert not os.path.stat.S_ISFIFO(os.lstat(lock).st_mode)


def test_a_fifo_or_directory_as_the_lock_owner_record_is_reclaimed_not_a_hang(env, ws):
    for kind in ("fifo", "directory"):
        project = _linked(env, ws)
        os.mkdir(project.lock_dir)
        owner = os.path.join(project.lock_dir, "owner.json")
        os.mkfifo(owner) if kind == "fifo" else os.mkdir(owner)
        past = time.time() - 60
        os.utime(project.lock_dir, (past, past))
        proc, elapsed = cli(env, ws, "claim", "add", "must", f"keep {kind} tests")
        assert proc.returncode == 0, proc.stderr
        assert elapsed < 10
        assert not os.path.exists(project.lock_dir)


def test_the_failure_log_is_never_written_through_a_hard_link(env, ws, tmp_path):
    project = _linked(env, ws)
    logs = os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs")
    os.makedirs(logs, exist_ok=True)
    other = tmp_path / "someone-elses.log"
    other.write_bytes(b"precious\n")
    log = os.path.join(logs, "hook-failures.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    os.link(other, log)
    with open(project.ledger, "ab") as fh:  # damage the ledger so the next prompt's commands fail
        fh.write(b"garbage line\n")
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep it", turn="t-3"), env)
    assert "NOT recorded" in answer["systemMessage"]
    assert other.read_bytes() == b"precious\n"


def test_a_failure_that_cannot_be_logged_is_still_seen_by_doctor(env, ws):
    project = _linked(env, ws)
    log = os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl")
    if os.path.exists(log):
        os.unlink(log)
    os.makedirs(log)  # stands where the log belongs: nothing can be appended to it
    with open(project.ledger, "ab") as fh:
        fh.write(b"garbage line\n")
    hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep it", turn="t-4"), env)
    proc, _t = cli(env, ws, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["hook_failures"]["ok"] is False
    assert "could not be logged" in checks["hook_failures"]["detail"]


def test_a_log_linked_to_dev_zero_never_exhausts_status_or_doctor(env, ws):
    _linked(env, ws)
    log = os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    if os.path.exists(log):
        os.unlink(log)
    os.symlink("/dev/zero", log)
    for argv in (("status",), ("doctor",)):
        proc, elapsed = cli(env, ws, *argv, timeout=20)
        assert elapsed < 10 and proc.returncode in (0, 1)
    proc, _t = cli(env, ws, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["hook_failures"]["ok"] is False and "UNSAFE_PATH" in checks["hook_failures"]["detail"]


def test_a_damaged_ledger_line_is_its_ledger_code_not_a_system_error(env, ws):
    """_json's scanner reports an unterminated string or a raw control character through a class
    the hooks never import; it must surface as LEDGER_MALFORMED."""
    project = _linked(env, ws)
    with open(project.ledger, "ab") as fh:
        fh.write(b'{"actor":"user","payload":{"x":"unterminated}\n{"a":"raw\x01control"}\n')
    proc, _t = cli(env, ws, "verify", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "LEDGER_MALFORMED"
    hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep it", turn="t-5"), env)
    with open(os.path.join(env["INTENT_LOOP_DATA_DIR"], "logs", "hook-failures.jsonl"), "rb") as fh:
        codes = {json.loads(line)["code"] for line in fh}
    assert "SystemError" not in codes and "LEDGER_MALFORMED" in codes


def test_a_file_at_the_runtime_directory_is_moved_aside_and_reported(env, ws):
    """A regular file where <data root>/runtime/<build id> belongs once made every binary fail for
    good; the launcher moves it aside, extracts again, and doctor names what it moved."""
    _linked(env, ws)
    runtime = os.path.join(env["INTENT_LOOP_DATA_DIR"], "runtime")
    for name in os.listdir(runtime):
        path = os.path.join(runtime, name)
        if os.path.isdir(path) and len(name) == 64:
            subprocess.run(["rm", "-rf", path], check=True)
            with open(path, "wb") as fh:
                fh.write(b"not a runtime")
    _out, answer, _t = hook("UserPromptSubmit", prompt_payload(ws, "intent: must keep it", turn="t-6"), env)
    assert said(answer["systemMessage"], "recorded", "must") == 1
    proc, _t = cli(env, ws, "doctor", "--json")
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["runtime"]["ok"] is False and "RUNTIME_BROKEN" in checks["runtime"]["detail"]
    assert ".broken-" in checks["runtime"]["detail"]


def test_kernel_filesystems_and_the_filesystem_root_are_not_projects(env, ws):
    for cwd in ("/", "/proc", "/sys/kernel", "/dev/pts"):
        if not os.path.isdir(cwd):
            continue
        _out, answer, _t = hook("UserPromptSubmit", prompt_payload(cwd, "intent: goal ship it", turn=f"t-{cwd}"), env)
        assert "NOT recorded (INVALID_PROJECT_ROOT)" in answer["systemMessage"], cwd
    projects = os.path.join(env["INTENT_LOOP_DATA_DIR"], "projects")
    assert not os.path.isdir(projects) or os.listdir(projects) == []
    assert not os.path.exists("/.execution-fidelity")


def test_a_workspace_inside_the_data_root_is_not_a_project(env):
    inside = os.path.join(env["INTENT_LOOP_DATA_DIR"], "somewhere")
    os.makedirs(inside)
    proc, _t = cli(env, inside, "claim", "add", "goal", "x", "--json")  # found nowhere: nothing to write to
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "NO_PROJECT"
    proc, _t = cli(env, inside, "claim", "add", "goal", "x", "--json", "--project", ".")  # named: refused as such
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "INVALID_PROJECT_ROOT"


def test_ids_that_cannot_be_claim_ids_are_invalid_arguments_and_an_empty_task_is_refused(env, ws):
    _linked(env, ws)
    for bad in ("zzzz", "x" * 40, "12345678-xyz"):
        proc, _t = cli(env, ws, "claim", "drop", bad, "--json")
        assert proc.returncode in (1, 2) and json.loads(proc.stdout)["error"]["code"] == "INVALID_ARGUMENT", bad
    proc, _t = cli(env, ws, "show", "--task", "", "--json")
    assert json.loads(proc.stdout)["error"]["code"] == "INVALID_ARGUMENT"


def test_a_lone_surrogate_rejects_only_its_own_line(env, ws):
    raw = ('{"hook_event_name":"UserPromptSubmit","session_id":"sess-1","turn_id":"t-s","cwd":' + json.dumps(ws)
           + ',"prompt":"go\\nintent: goal ship it\\nintent: must keep \\ud800 tests\\nintent: must not break api",'
           '"transcript_path":null,"model":"m","permission_mode":"default"}').encode()
    _out, answer, _t = hook("UserPromptSubmit", None, env, raw=raw)
    message = answer["systemMessage"]
    assert said(message, "recorded", "goal") and said(message, "rejected", code="INVALID_TEXT", line=3)
    # the model's receipt is never cut: every line's outcome (the user's line may count the last as `+1 more`)
    receipt = answer["hookSpecificOutput"]["additionalContext"]
    assert [(e.line, e.outcome, e.verb, e.code) for e in read(receipt)] == [
        (2, "recorded", "goal", None), (3, "rejected", None, "INVALID_TEXT"), (4, "recorded", "must-not", None)]


def test_under_many_concurrent_prompts_every_typed_command_gets_a_receipt(env, ws):
    """Issue 12 item 9: 4 of 420 commands were once answered by a bare continue:true. Now every
    prompt with commands is answered with what was recorded or with 'N commands NOT recorded'."""
    _linked(env, ws)
    binary = os.path.join(DIST, BINARIES["UserPromptSubmit"])
    procs = []
    for index in range(24):
        payload = prompt_payload(ws, f"go\nintent: must keep rule {index}\nintent: must not drop {index}",
                                 turn=f"t-c{index}", session=f"sess-c{index % 6}")
        proc = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env)
        proc.stdin.write(json.dumps(payload).encode())
        proc.stdin.close()
        procs.append(proc)
    silent = []
    for index, proc in enumerate(procs):
        out = proc.stdout.read()
        assert proc.wait(timeout=30) == 0
        answer = json.loads(out)
        message = answer.get("systemMessage", "")
        if not said(message, "recorded", "must") and "NOT recorded" not in message:
            silent.append((index, answer))
    assert silent == []


def test_a_missing_final_lf_loses_no_claim_and_no_guard_version(env, ws):
    """Issue 12 item 2: after `truncate -s -1` (an editor's "no newline at end of file") the next
    change once quarantined the valid last line as a torn tail: a receipted claim vanished, and when
    that line was a contract_published the same (ref, version) was later republished with another hash."""
    project = _linked(env, ws)
    proc, _t = cli(env, ws, "claim", "add", "must", "keep", "the", "api", "--json")
    assert proc.returncode == 0
    size = os.path.getsize(project.ledger)
    os.truncate(project.ledger, size - 1)  # the last line (the publication of that claim) loses its LF
    guard = json.loads(open(os.path.join(ws, ".execution-fidelity", "contract.json"), "rb").read())
    proc, _t = cli(env, ws, "claim", "add", "must", "keep", "tests", "green", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["publication"]["action"] == "published"
    proc, _t = cli(env, ws, "verify", "--json")
    assert proc.returncode == 0
    assert os.listdir(project.quarantine_dir) == []
    proc, _t = cli(env, ws, "show", "--json")
    view = json.loads(proc.stdout)["view"]
    assert "must: keep the api" in view and "must: keep tests green" in view
    published = [json.loads(line)["payload"] for line in open(project.ledger, "rb").read().splitlines()
                 if json.loads(line)["event_type"] == "contract_published"]
    versions = [(p["contract_ref"], p["contract_version"]) for p in published]
    assert len(versions) == len(set(versions))  # no (ref, version) published twice
    old = guard["envelope"]
    assert any((p["contract_ref"], p["contract_version"], p["snapshot_sha256"])
               == (old["contract_ref"], old["contract_version"], old["snapshot_sha256"]) for p in published)


def test_timeline_with_an_unknown_actor_is_a_usage_error(env, ws):
    _linked(env, ws)
    proc, _t = cli(env, ws, "timeline", "--actor", "bogus")
    assert proc.returncode == 2 and "bogus" in proc.stderr

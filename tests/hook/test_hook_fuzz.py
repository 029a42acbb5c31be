"""Hostile and malformed hook payloads: >= 2,000 per binary in-process through runtime.run_hook,
plus ~100 real binary runs per binary sampled from the same generator. Every run answers exactly
one valid JSON object with only Codex's keys, and the ledger still verifies afterwards."""
import json
import os
import random
import signal
import subprocess
import tempfile

import pytest

from helpers.dist import requires_dist
from helpers.settle import settle
from intent_loop.hook import handlers, runtime
from intent_loop.intent.state import ProjectReducer
from intent_loop.launch.binaries import BINARY_FOR_EVENT
from intent_loop.storage import paths as paths_mod
from intent_loop.storage import reading

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIST = os.path.join(REPO, "dist")
BINARIES = BINARY_FOR_EVENT  # event -> binary name in dist/
EVENTS = list(BINARIES)
IN_PROCESS_PER_BINARY = 2000
BINARY_RUNS_PER_BINARY = 100
HUGE_PER_BINARY = 4
REDUCER = ProjectReducer()

FAKE_SECRETS = ["sk-proj-AbCdEf0123456789_abcdefGHIJKLmnop", "ghp_0123456789abcdefABCDEF0123456789abcd",
                "AKIAIOSFODNN7EXAMPLE", "xoxb-1234-5678-abcdefghijkl", "password=hunter2hunter2",
                "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.abcDEF123",
                "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-----END PRIVATE KEY-----",
                "postgres://admin:s3cr3t@db.example.com/x", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345"]
BROKEN_COMMANDS = ["intent:", "intent: ", "intent: gaol x", "INTENT: GOAL shout", "intent: must",
                   "intent: done-when x (sources: nope)", "intent: allow Tools: x", "intent: drop zz",
                   "intent: replace", "intent: goal must: reserved", "  intent:  forbid action : write",
                   "intent: new " + "L" * 200, "intent: goal " + "g" * 600, "intent: private", "intent: on",
                   "intent: off", "intent: resume", "intent: show", "intent: help", "intent: goal ok goal",
                   "intent: must-not touch\u2028prod", "intent: surface \x00nul"]
WEIRD_VALUES = [None, True, False, 0, -1, 1.5, 10**30, "", " ", [], {}, ["a"], {"a": 1}, "\ud800x",
                "../../etc", "/nonexistent/dir", "x" * 5000, "\x00", "🙂"]
FIELDS = ["session_id", "turn_id", "transcript_path", "cwd", "hook_event_name", "model", "permission_mode",
          "prompt", "source", "stop_hook_active", "last_assistant_message", "agent_id", "agent_type"]


def base_payload(event, ws, rng):
    p = {"session_id": rng.choice(["s-1", "s-2", "s-3"]), "transcript_path": "/tmp/t.jsonl", "cwd": ws,
         "hook_event_name": event, "model": "mock-model", "permission_mode": "bypassPermissions"}
    if event == "SessionStart":
        p["source"] = rng.choice(["startup", "resume", "clear", "compact", "weird"])
    if event in ("UserPromptSubmit", "Stop"):
        p["turn_id"] = f"turn-{rng.randrange(50)}"
    if event == "UserPromptSubmit":
        p["prompt"] = "\n".join(rng.choice(BROKEN_COMMANDS + FAKE_SECRETS + ["hello"])
                                for _ in range(rng.randrange(1, 5)))
    if event == "Stop":
        p["stop_hook_active"] = rng.choice([True, False])
        p["last_assistant_message"] = rng.choice(["Done.", rng.choice(FAKE_SECRETS), ""])
    return p


def huge_prompt(rng, size=3 * 1024 * 1024):
    parts, n = [], 0
    while n < size:
        piece = rng.choice(FAKE_SECRETS + BROKEN_COMMANDS + ["intent: must " + rng.choice(FAKE_SECRETS)])
        parts.append(piece)
        n += len(piece) + 1
    return "\n".join(parts)


def generate(event, ws, rng, *, allow_huge=False):
    """One hostile payload as bytes."""
    kind = rng.randrange(14)
    p = base_payload(event, ws, rng)
    if kind == 0:  # truncated JSON
        data = json.dumps(p).encode()
        return data[: rng.randrange(len(data))]
    if kind == 1:  # wrong type for one field (or several)
        for field in rng.sample(FIELDS, rng.randrange(1, 4)):
            p[field] = rng.choice(WEIRD_VALUES)
        return json.dumps(p, ensure_ascii=rng.random() < 0.5, default=str).encode("utf-8", "surrogatepass")
    if kind == 2:  # invalid UTF-8
        data = json.dumps(p).encode()
        at = rng.randrange(len(data))
        return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + data[at:]
    if kind == 3:  # BOM
        return b"\xef\xbb\xbf" + json.dumps(p).encode()
    if kind == 4:  # arrays, nulls, scalars
        return rng.choice([b"[]", b"null", b"[" + json.dumps(p).encode() + b"]", b"42", b'"str"', b"true", b"{}"])
    if kind == 5:  # unknown or wrong events
        p["hook_event_name"] = rng.choice(["PreToolUse", "", "stop", "SESSIONSTART", None, 3] + EVENTS)
        return json.dumps(p).encode()
    if kind == 6:  # missing fields
        for field in rng.sample(list(p), rng.randrange(1, len(p))):
            del p[field]
        return json.dumps(p).encode()
    if kind == 7 and allow_huge:
        p["prompt"] = huge_prompt(rng)
        p["last_assistant_message"] = p["prompt"]
        return json.dumps(p).encode()
    if kind == 8:  # deep nesting
        depth = rng.choice([50, 1000, 100000])
        return b"[" * depth + b"]" * rng.choice([0, depth])
    if kind == 9:  # duplicate keys and trailing garbage
        return json.dumps(p).encode() + rng.choice([b"{}", b" garbage", b"\n\n", b"\x00"])
    if kind == 10:  # a mid-sized prompt with many commands and secrets
        p["prompt"] = "\n".join(rng.choice(BROKEN_COMMANDS + FAKE_SECRETS) for _ in range(200))
        return json.dumps(p).encode()
    if kind == 11:  # random bytes
        return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 300)))
    if kind == 12:  # a cwd that is a file, relative, or does not exist
        p["cwd"] = rng.choice(["relative/dir", os.path.join(ws, "no-such"), "/dev/null", "", "\x00"])
        return json.dumps(p).encode()
    return json.dumps(p).encode()  # plausible payloads (some record real commands)


def check_answer(event, out):
    assert out, "no answer"
    answer = json.loads(out)
    assert isinstance(answer, dict) and answer["continue"] is True
    assert set(answer) <= {"continue", "hookSpecificOutput", "systemMessage", "decision", "reason"}
    if "decision" in answer:  # a local answer (issue 15): a block with its reason, nothing else
        assert event == "UserPromptSubmit" and answer["decision"] == "block" and answer["reason"]
        assert set(answer) == {"continue", "decision", "reason"}
    if event == "Stop":
        assert out == runtime.FAIL_OPEN
    if "hookSpecificOutput" in answer:
        hso = answer["hookSpecificOutput"]
        assert hso["hookEventName"] == event and isinstance(hso["additionalContext"], str)
    if "systemMessage" in answer:
        assert event in ("UserPromptSubmit", "SessionStart") and isinstance(answer["systemMessage"], str)
    # exactly one JSON object: json.loads above already refuses anything after it
    assert out.count(b'"continue"') == 1


@pytest.fixture
def fuzz_env(tmp_path, monkeypatch):
    home = tmp_path / "fuzz-home"
    home.mkdir()
    ws = tmp_path / "fuzz-ws"
    ws.mkdir()
    data = str(tmp_path / "fuzz-data")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("INTENT_LOOP_DATA_DIR", data)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "INTENT_LOOP_DATA_DIR": data}
    return env, str(ws), data


def run_in_process(event, data, env):
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
        fin.write(data)
        fin.seek(0)
        runtime.run_hook(event, handlers.HANDLERS[event], stdin_fd=fin.fileno(),
                              stdout_fd=fout.fileno(), env=env)
        fout.seek(0)
        return fout.read()


def _verify(data_root, ws):
    p = paths_mod.project_paths(data_root, ws)
    if os.path.exists(p.ledger):
        reading.verify_all(p, REDUCER)


@pytest.mark.slow
@pytest.mark.parametrize("event", EVENTS)
def test_fuzz_in_process(event, fuzz_env):
    env, ws, data_root = fuzz_env
    rng = random.Random(f"fuzz-{event}")
    old_term = signal.getsignal(signal.SIGTERM)
    old_alarm = signal.getsignal(signal.SIGALRM)
    huge = 0
    try:
        # seed the project with a linked task so later payloads reach the recording paths
        run_in_process("UserPromptSubmit", json.dumps({
            "session_id": "s-1", "turn_id": "seed", "cwd": ws, "hook_event_name": "UserPromptSubmit",
            "prompt": "intent: goal fuzz target"}).encode(), env)
        for i in range(IN_PROCESS_PER_BINARY):
            payload = generate(event, ws, rng, allow_huge=huge < HUGE_PER_BINARY)
            if len(payload) > 1_000_000:
                huge += 1
            out = run_in_process(event, payload, env)
            try:
                check_answer(event, out)
            except Exception as exc:  # pragma: no cover - report the payload that broke it
                raise AssertionError(f"payload #{i} {payload[:300]!r} -> {out[:300]!r}: {exc}") from exc
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGALRM, old_alarm)
    assert huge >= 1
    assert os.path.exists(paths_mod.project_paths(data_root, ws).ledger)
    _verify(data_root, ws)


@pytest.mark.slow
@requires_dist
@pytest.mark.parametrize("event", EVENTS)
def test_fuzz_binaries(event, fuzz_env):
    env, ws, data_root = fuzz_env
    rng = random.Random(f"bin-{event}")
    huge = 0
    for i in range(BINARY_RUNS_PER_BINARY):
        payload = generate(event, ws, rng, allow_huge=huge < 2)
        if len(payload) > 1_000_000:
            huge += 1
        proc = subprocess.run([os.path.join(DIST, BINARIES[event])], input=payload, capture_output=True,
                              env=env, timeout=10)
        assert proc.returncode == 0, (i, payload[:200], proc.stderr[-500:])
        try:
            check_answer(event, proc.stdout)
        except Exception as exc:  # pragma: no cover
            raise AssertionError(f"payload #{i} {payload[:300]!r} -> {proc.stdout[:300]!r}: {exc}") from exc
    settle(data_root, ws)  # what the last answers left to detached children
    _verify(data_root, ws)

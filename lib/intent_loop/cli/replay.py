"""replay FILE.jsonl: feed recorded hook payloads through the built binaries in a throw-away place.

Each line is {"event": "SessionStart"|"UserPromptSubmit"|"Stop", "payload": {...}} (or "stdin": "raw
text" instead of payload, for hostile input); `"lock_held": true` runs that step while replay itself
holds the project lock, as another writer would (the hook's work then fails mid-way); `"env": {...}`
adds variables for that step only, as a host sets them (Claude Code's CLAUDECODE...), `{workspace}`
in a value standing for the workspace. The payload's cwd is replaced by a temporary workspace; the
binaries run with INTENT_LOOP_DATA_DIR set to a temporary data root.
"""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from intent_loop.cli.common import finish_command
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.launch.binaries import BINARY_FOR_EVENT

STEP_TIMEOUT = 30.0
_DROPPED_ENV = ("CODEX_HOME", "PLUGIN_DATA", "PLUGIN_ROOT", "INTENT_LOOP_DATA_DIR", "EFG_CONTRACT_PATH")


def register(subparsers):
    p = subparsers.add_parser("replay", help="replay recorded hook payloads through the built hook binaries",
                              description="Run each line of FILE.jsonl ({\"event\", \"payload\"}) through the "
                                          "matching dist/ hook binary against a throw-away data root and "
                                          "workspace; print every answer, the ledger verification and the "
                                          "provider file. Exit 1 if a binary failed or answered anything but "
                                          "one JSON object.")
    p.add_argument("file", metavar="FILE.jsonl")
    p.add_argument("--keep", metavar="DIR", help="put the data root and workspace under DIR and keep them")
    p.add_argument("--dist", metavar="DIR", help="directory of the hook binaries (default: next to this binary)")
    finish_command(p, cmd_replay)


def read_steps(path):
    try:
        with open(path, "rb") as fh:
            lines = fh.read().decode("utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"cannot read {path}: {exc}") from exc
    steps = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            step = json.loads(line)
        except ValueError as exc:
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"{path} line {number}: not JSON ({exc})") from exc
        except RecursionError:
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"{path} line {number}: nested too deeply") from None
        if not isinstance(step, dict) or step.get("event") not in BINARY_FOR_EVENT or \
                ("payload" not in step and not isinstance(step.get("stdin"), str)) or \
                not _is_step_env(step.get("env", {})):
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT,
                                  f"{path} line {number}: expected {{\"event\": one of "
                                  f"{', '.join(BINARY_FOR_EVENT)}, \"payload\": ..., \"env\": "
                                  f"{{NAME: text}} (optional)}}")
        steps.append(step)
    return steps


def _is_step_env(env):
    return isinstance(env, dict) and all(isinstance(k, str) and k and "=" not in k and "\0" not in k
                                         and isinstance(v, str) and "\0" not in v for k, v in env.items())


class ReplaySession:
    """A throw-away data root and workspace, and the hook binaries run against them."""

    def __init__(self, env, *, dist=None, keep=None):
        self.dist = dist or os.path.dirname(os.path.realpath(sys.argv[0]))
        missing = [b for b in BINARY_FOR_EVENT.values() if not os.access(os.path.join(self.dist, b), os.X_OK)]
        if missing:
            raise IntentLoopError(ErrorCode.INVALID_ARGUMENT, f"no built hook binaries in {self.dist} "
                                  f"(missing {', '.join(missing)}); run `python3 build.py`")
        self.keep = keep
        if keep:
            base = os.path.abspath(keep)
            os.makedirs(base, exist_ok=True)
            self.base = tempfile.mkdtemp(prefix="replay-", dir=base)
        else:
            self.base = tempfile.mkdtemp(prefix="intent-loop-replay-")
        self.base = os.path.realpath(self.base)
        self.data_root = os.path.join(self.base, "data")
        self.workspace = os.path.join(self.base, "workspace")
        os.mkdir(self.data_root, 0o700)
        os.mkdir(self.workspace, 0o700)
        # Guard's settings and Codex home are the replay's own: what a recorded session is told of Guard
        # (issue 34) must not depend on the machine that replays it
        self.env = {k: v for k, v in env.items() if k not in _DROPPED_ENV and not k.startswith("EFG_")}
        self.env["INTENT_LOOP_DATA_DIR"] = self.data_root
        self.env["CODEX_HOME"] = os.path.join(self.base, "codex-home")
        os.mkdir(self.env["CODEX_HOME"], 0o700)
        self.steps = []

    def run(self, event, payload=None, *, stdin=None, lock_held=False, env=None):
        """Run one hook; returns {event, answer, exit_code, ok, stdout, stderr}."""
        if stdin is None:
            if isinstance(payload, dict) and "cwd" in payload:
                payload = dict(payload, cwd=self.workspace)
            data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        else:
            data = stdin.encode("utf-8", "surrogatepass")
        binary = os.path.join(self.dist, BINARY_FOR_EVENT[event])
        try:
            with self._lock_held() if lock_held else contextlib.nullcontext():
                added = {k: v.replace("{workspace}", self.workspace) for k, v in (env or {}).items()}
                step_env = dict(self.env, **added)
                proc = subprocess.run([binary], input=data, capture_output=True, cwd=self.workspace,
                                      env=step_env, timeout=STEP_TIMEOUT)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired as exc:
            code, out, err = -1, exc.stdout or b"", b"timed out"
        self._settle()
        answer, ok = None, code == 0
        try:
            answer = json.loads(out.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            ok = False
        if not isinstance(answer, dict):
            ok = False
        step = {"event": event, "answer": answer, "exit_code": code, "ok": ok}
        if not ok:
            step["stdout"] = out.decode("utf-8", "replace")[:2000]
            step["stderr"] = err.decode("utf-8", "replace")[:2000]
        self.steps.append(step)
        return step

    def _lock_held(self):
        """The project lock, held by replay for one step: replay's lock keeps heartbeating (a CLI
        budget), so the hook waits to its own 2 s deadline and answers LOCK_TIMEOUT."""
        from intent_loop.storage.lock import ProjectLock
        from intent_loop.storage.paths import ensure_project_layout

        paths = self.paths()
        ensure_project_layout(paths)
        return ProjectLock(paths.dir, deadline=time.monotonic() + STEP_TIMEOUT)

    def _settle(self):
        """Let the work a hook detaches after answering (its observation, Stop's Guard refresh)
        land before the next step, as it does between two prompts a person types."""
        from intent_loop.hook import pending_work

        try:
            paths = self.paths()
        except IntentLoopError:
            return
        pending_work.wait_idle(paths, timeout=STEP_TIMEOUT)

    def paths(self):
        from intent_loop.storage.paths import project_paths

        return project_paths(self.data_root, self.workspace)

    def ledger(self):
        from intent_loop.intent.state import REDUCER
        from intent_loop.storage.reading import verify_all

        paths = self.paths()
        try:
            verified = verify_all(paths, REDUCER)
        except IntentLoopError as exc:
            return {"ok": False, "project_id": paths.project_id, "error": exc.to_dict()}, None
        return {"ok": True, "project_id": paths.project_id, "events": verified.count,
                "bytes": verified.size, "last_hash": verified.last_hash}, verified

    def events(self):
        """Every ledger event in order (after ledger() said ok)."""
        try:
            with open(self.paths().ledger, "rb") as fh:
                return [json.loads(line) for line in fh.read().splitlines() if line.strip()]
        except OSError:
            return []

    def provider(self):
        from intent_loop.guard.provider import provider_path

        path = provider_path(self.workspace, {})
        try:
            with open(path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return None, None
        try:
            return json.loads(raw), path
        except ValueError:
            return {"unparsable": raw.decode("utf-8", "replace")[:2000]}, path

    def close(self):
        if not self.keep:
            shutil.rmtree(self.base, ignore_errors=True)


def context_of(answer):
    """The additionalContext text of an answer, or None."""
    if isinstance(answer, dict) and isinstance(answer.get("hookSpecificOutput"), dict):
        return answer["hookSpecificOutput"].get("additionalContext")
    return None


def cmd_replay(args, console):
    steps = read_steps(args.file)
    session = ReplaySession(console.env, dist=os.path.abspath(args.dist) if args.dist else None, keep=args.keep)
    try:
        for step in steps:
            session.run(step["event"], step.get("payload"), stdin=step.get("stdin"),
                        lock_held=step.get("lock_held") is True, env=step.get("env"))
        ledger, _verified = session.ledger()
        provider, provider_file = session.provider()
        errors = None
        if provider is not None:
            from intent_loop.guard.acceptance import validate_provider_document

            errors = validate_provider_document(provider) if "unparsable" not in provider else ["not JSON"]
    finally:
        session.close()
    failed = [i for i, s in enumerate(session.steps, 1) if not s["ok"]]
    if args.json:
        console.json({"steps": session.steps, "ledger": ledger, "provider": provider,
                      "provider_errors": errors, "kept": session.base if args.keep else None,
                      "ok": not failed and ledger["ok"]})
    else:
        for i, step in enumerate(session.steps, 1):
            mark = "" if step["ok"] else "   <-- FAILED"
            shown = json.dumps(step["answer"], ensure_ascii=False) if step["ok"] else repr(step["stdout"])
            console.out(f"[{i}] {step['event']} exit {step['exit_code']}: {shown}{mark}")
            if not step["ok"] and step.get("stderr"):
                console.out("    stderr: " + step["stderr"].strip())
        if ledger["ok"]:
            console.out(f"ledger OK: {ledger['events']} events, last hash {ledger['last_hash']}")
        else:
            console.out(f"ledger DAMAGED: {ledger['error']['code']}: {ledger['error']['message']}")
        if provider is None:
            console.out("provider file: none")
        else:
            console.out(f"provider file ({'valid' if not errors else 'INVALID: ' + '; '.join(errors)}):")
            console.out(json.dumps(provider, indent=2, ensure_ascii=False))
        if args.keep:
            console.out(f"kept data root and workspace under {session.base}")
    return 1 if failed or not ledger["ok"] else 0

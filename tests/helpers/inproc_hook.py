"""Run the hook handlers in this process (as runtime.run_hook runs them in a hook process) against a
temporary data root, workspace and empty Codex home: fast tests of what a session is told."""
import json
import tempfile

from intent_loop.hook import handlers, runtime
from intent_loop.storage import paths as paths_mod


class InProcessHooks:
    """`hooks("UserPromptSubmit", "sess-A", prompt=..., turn_id=...)` -> the parsed answer."""

    def __init__(self, tmp_path):
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        self.env = {"HOME": str(tmp_path), "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin:/bin",
                    "CODEX_HOME": str(tmp_path / "codex-home")}

    def __call__(self, event, session_id, **payload):
        payload = dict(payload, session_id=session_id, cwd=str(self.ws), hook_event_name=event, transcript_path=None,
                       model="m", permission_mode="default")
        with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
            fin.write(json.dumps(payload).encode())
            fin.seek(0)
            runtime.run_hook(event, handlers.HANDLERS[event], stdin_fd=fin.fileno(), stdout_fd=fout.fileno(),
                             env=self.env)
            fout.seek(0)
            return json.loads(fout.read())

    def prompt(self, session_id, text, turn="t"):
        return self("UserPromptSubmit", session_id, prompt=text, turn_id=turn)

    def paths(self):
        return paths_mod.project_paths(self.env["INTENT_LOOP_DATA_DIR"], str(self.ws))


def context(answer):
    return (answer.get("hookSpecificOutput") or {}).get("additionalContext", "")

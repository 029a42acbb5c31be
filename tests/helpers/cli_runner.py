"""Run the intent-loop CLI in-process against a temporary data root and workspace."""
import io
import json

from intent_loop.cli.common import Console
from intent_loop.cli.main import main
from intent_loop.storage import paths as paths_mod


class CliRun:
    """`cli("status")` -> (exit code, stdout, stderr); `cli.json(...)` parses `--json` output.

    Commands work on the workspace as their project, as `--project WORKSPACE` would make them
    (a fresh workspace is no recorded project yet, and a write there needs it); `discover=True`
    leaves the project to be found from the workspace upward, as a user's plain command does."""

    def __init__(self, root, workspace, *, home, discover=False):
        self.env = {"INTENT_LOOP_DATA_DIR": str(root), "HOME": str(home)}
        self.workspace = str(workspace)
        self.discover = discover

    def __call__(self, *argv):
        console = Console(stdout=io.StringIO(), stderr=io.StringIO(), env=self.env, cwd=self.workspace,
                          project=None if self.discover else self.workspace)
        rc = main(list(argv), console=console)
        return rc, console.stdout.getvalue(), console.stderr.getvalue()

    def json(self, *argv, expect=0):
        rc, out, err = self(*argv, "--json")
        assert rc == expect, (rc, out, err)
        return json.loads(out)

    def project(self):
        return paths_mod.project_paths(self.env["INTENT_LOOP_DATA_DIR"], self.workspace)


def make_cli(tmp_path):
    """Data root, workspace and HOME all under tmp_path (HOME exists, holds no .codex)."""
    workspace, home = tmp_path / "ws", tmp_path / "home"
    workspace.mkdir()
    home.mkdir()
    return CliRun(tmp_path / "data", workspace, home=home)

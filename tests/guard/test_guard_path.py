"""Issue 14: Guard 0.2.2 resolves EFG_CONTRACT_PATH with `path.resolve(cwd, value.trim())` on the hook
payload's `cwd` as given, not on its realpath (/work/shared/docs/guard-provider.md). With a symlinked
`cwd` the two differ where the value climbs with `..`: we must name the file Guard reads, and the
containment check (the file's directory, resolved, inside the project root's realpath) still decides
whether we may write it. Through the built prompt hook, and on provider.guard_file itself."""
import json
import os

import pytest

from helpers.dist import requires_dist
from helpers.mcp_client import run_hook
from intent_loop.guard import provider


@pytest.fixture
def linked(tmp_path):
    """<tmp>/real/proj (with a sub/ directory) and <tmp>/link -> <tmp>/real/proj."""
    real = tmp_path / "real" / "proj"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    return tmp_path, str(real), str(link)


def _env(tmp_path, value):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "INTENT_LOOP_DATA_DIR": str(tmp_path / "data"), "EFG_CONTRACT_PATH": value}


def test_the_path_is_resolved_from_the_cwd_as_given_and_contained_by_realpaths(linked):
    base, real, link = linked
    path, outside = provider.guard_file(link, {"EFG_CONTRACT_PATH": " ../link/sub/guard.json "}, project_root=real)
    assert path == os.path.join(str(base), "link", "sub", "guard.json") and outside is None
    path, outside = provider.guard_file(link, {"EFG_CONTRACT_PATH": "../guard.json"}, project_root=real)
    assert path == os.path.join(str(base), "guard.json")  # Guard's file, not <tmp>/real/guard.json
    assert outside is not None and path in outside
    # the default and the CLI (no payload: the root is the cwd) are unchanged
    assert provider.guard_file(link, {}, project_root=real)[0] == os.path.join(link, ".execution-fidelity",
                                                                               "contract.json")
    assert provider.guard_file(real, {"EFG_CONTRACT_PATH": "sub/g.json"}, project_root=real) == (
        os.path.join(real, "sub", "g.json"), None)


@requires_dist
def test_a_symlinked_cwd_publishes_where_guard_reads(linked):
    """Before: resolved from the realpath, `../link/sub/guard.json` named <tmp>/real/link/sub/guard.json,
    outside the project, so nothing was ever published where Guard 0.2.2 looks."""
    base, real, link = linked
    env = _env(base, "../link/sub/guard.json")
    answer = run_hook("UserPromptSubmit", env, cwd=link, session_id="s-guard-1", prompt="intent: goal ship it")
    assert "Guard not updated" not in answer.get("systemMessage", ""), answer
    with open(os.path.join(real, "sub", "guard.json"), "rb") as fh:
        data = fh.read()
    assert json.loads(data[data.index(b"{"):])["envelope"]["contract_version"] == 1
    assert not os.path.exists(os.path.join(str(base), "real", "link"))


@requires_dist
def test_a_path_outside_the_project_is_named_as_guard_names_it_and_never_written(linked):
    base, real, link = linked
    env = _env(base, "../guard.json")
    answer = run_hook("UserPromptSubmit", env, cwd=link, session_id="s-guard-2", prompt="intent: goal ship it")
    message = answer.get("systemMessage", "")
    assert "PROVIDER_PATH_OUTSIDE" in message and os.path.join(str(base), "guard.json") in message, message
    assert os.path.join(str(base), "real", "guard.json") not in message
    assert not os.path.exists(os.path.join(str(base), "guard.json"))
    assert not os.path.exists(os.path.join(str(base), "real", "guard.json"))

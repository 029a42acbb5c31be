"""`intent-loop link` / `unlink` (issue 24, item 7): a launcher on PATH that finds the installed plugin
each time it runs, so the next `codex plugin add` of a new version does not leave it dangling; it
says when its directory is not on PATH, and touches only a file it wrote."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "dist"


def plugin_copy(codex_home, version):
    copy = codex_home / "plugins" / "cache" / "intent-loop" / "intent-loop" / version
    for part in ("lib", "hooks", ".codex-plugin"):
        shutil.copytree(ROOT / part, copy / part, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


@pytest.fixture
def place(tmp_path, isolated_home):
    codex_home = isolated_home / ".codex"
    codex_home.mkdir()
    bin_dir = isolated_home / ".local" / "bin"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = {"HOME": str(isolated_home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "INTENT_LOOP_DATA_DIR": str(tmp_path / "data")}
    return env, codex_home, bin_dir, workspace


def run(argv, env, cwd):
    return subprocess.run([str(a) for a in argv], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)


def test_the_launcher_finds_whichever_version_of_the_plugin_is_installed(place):
    env, codex_home, bin_dir, workspace = place
    old = plugin_copy(codex_home, "0.1.0")
    done = run([old / "hooks" / "intent-loop", "cli", "link"], env, workspace)
    assert done.returncode == 0, done.stderr
    launcher = bin_dir / "intent-loop"
    assert done.stdout.startswith(f"linked {launcher}: runs the plugin intent-loop@intent-loop")
    assert f"{bin_dir} is not on PATH" in done.stdout  # as on a default macOS
    assert os.access(launcher, os.X_OK)
    assert run([launcher, "status"], env, workspace).stdout.startswith("data root:")
    # `codex plugin add` of a new version: the old directory goes, a new one comes
    shutil.rmtree(old)
    new = plugin_copy(codex_home, "0.2.0")
    done = run([launcher, "doctor", "--json"], env, workspace)
    assert done.stdout.startswith("{"), done.stderr
    assert str(new) in run(["sh", "-x", launcher, "--version"], env, workspace).stderr
    # removed: the launcher says what to do
    shutil.rmtree(new)
    done = run([launcher, "status"], env, workspace)
    assert done.returncode == 1 and "PLUGIN_NOT_INSTALLED" in done.stderr and "intent-loop unlink" in done.stderr


def test_on_path_nothing_more_is_said_and_a_second_link_changes_nothing(place):
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    first = run([copy / "hooks" / "intent-loop", "cli", "link"], env, workspace)
    assert first.returncode == 0 and "not on PATH" not in first.stdout, first
    second = run([copy / "hooks" / "intent-loop", "cli", "link"], env, workspace)
    assert second.stdout.startswith("already linked"), second.stdout
    assert run(["intent-loop", "status"], env, workspace).returncode == 0


def test_a_file_that_is_not_ours_is_never_replaced_without_force_nor_unlinked(place):
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    bin_dir.mkdir(parents=True)
    foreign = bin_dir / "intent-loop"
    foreign.write_text("#!/bin/sh\necho someone else's\n")
    launcher = copy / "hooks" / "intent-loop"
    for verb in ("link", "unlink"):
        done = run([launcher, "cli", verb, "--json"], env, workspace)
        assert done.returncode == 1 and '"LINK_EXISTS"' in done.stdout, done
        assert foreign.read_text() == "#!/bin/sh\necho someone else's\n"
    assert run([launcher, "cli", "link", "--force"], env, workspace).returncode == 0
    assert "intent-loop link" in foreign.read_text()
    done = run([launcher, "cli", "unlink"], env, workspace)
    assert done.returncode == 0 and not foreign.exists()
    again = run([launcher, "cli", "unlink"], env, workspace)
    assert again.returncode == 0 and again.stdout.startswith("nothing to remove")


def test_a_dry_run_writes_nothing_and_an_agent_shell_is_refused(place):
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    launcher = copy / "hooks" / "intent-loop"
    done = run([launcher, "cli", "link", "--dry-run", "--dir", bin_dir / "x"], env, workspace)
    assert done.returncode == 0 and done.stdout.startswith("would write") and not (bin_dir / "x").exists()
    done = run([launcher, "cli", "link"], {**env, "CODEX_TOOL_CALL_ID": "call_1"}, workspace)
    assert done.returncode == 1 and "AGENT_SHELL" in done.stderr and not bin_dir.exists()


@pytest.mark.skipif(not os.access(DIST / "intent-loop", os.X_OK), reason="dist/ is not built")
def test_linked_from_a_build_that_is_no_plugin_it_runs_that_build(place):
    env, _codex_home, bin_dir, workspace = place
    done = run([DIST / "intent-loop", "link", "--dir", bin_dir], env, workspace)
    assert done.returncode == 0, done.stderr
    assert f"exec '{DIST / 'intent-loop'}' \"$@\"" in (bin_dir / "intent-loop").read_text()
    assert run([bin_dir / "intent-loop", "status"], env, workspace).stdout.startswith("data root:")


def test_install_run_from_the_plugin_says_there_is_nothing_to_install(place):
    env, codex_home, _bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    done = run([copy / "hooks" / "intent-loop", "cli", "install", "--json"], env, workspace)
    assert done.returncode == 1 and '"PLUGIN_INSTALLED"' in done.stdout, done
    assert "runs from the Codex plugin intent-loop@intent-loop" in done.stdout
    assert not (codex_home / "hooks.json").exists()


def test_a_fifo_where_the_launcher_goes_never_hangs_link_or_unlink(place):
    """A hostile file at ~/.local/bin/intent-loop: a FIFO (an open() of it would block) is not ours."""
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    bin_dir.mkdir(parents=True)
    os.mkfifo(bin_dir / "intent-loop")
    for verb in ("link", "unlink"):
        done = run([copy / "hooks" / "intent-loop", "cli", verb, "--json"], env, workspace)  # run() has a timeout
        assert done.returncode == 1 and '"LINK_EXISTS"' in done.stdout, done
    assert run([copy / "hooks" / "intent-loop", "cli", "link", "--force"], env, workspace).returncode == 0
    assert "intent-loop link" in (bin_dir / "intent-loop").read_text()


def test_build_ids_are_read_without_blocking_on_a_fifo(tmp_path):
    from intent_loop.launch.extracted_runtime import build_id_of

    os.mkfifo(tmp_path / "intent-loop-stop")
    assert build_id_of(str(tmp_path / "intent-loop-stop")) is None
    (tmp_path / "big").write_bytes(b"#!/bin/sh\nsite=$root/runtime/" + b"a" * 64 + b"/x\n" + b"\0" * 100000)
    assert build_id_of(str(tmp_path / "big")) == "a" * 64  # a binary is far longer than the head it reads


def test_a_failed_link_leaves_no_executable_temporary_file(place):
    """The rename over the target fails (a directory holds its name): nothing of ours is left on PATH."""
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    (bin_dir / "intent-loop" / "kept").mkdir(parents=True)
    done = run([copy / "hooks" / "intent-loop", "cli", "link", "--force", "--json"], env, workspace)
    assert done.returncode == 1 and "WRITE_FAILED" in done.stdout + done.stderr, done
    assert sorted(p.name for p in bin_dir.iterdir()) == ["intent-loop"]
    assert (bin_dir / "intent-loop" / "kept").is_dir()


def test_unlink_works_after_the_plugin_copy_is_gone(place):
    """Issue 35, item 7: `codex plugin remove` first, then `intent-loop unlink`, which the launcher's
    own PLUGIN_NOT_INSTALLED message tells the user to run: the launcher answers it by itself."""
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    assert run([copy / "hooks" / "intent-loop", "cli", "link"], env, workspace).returncode == 0
    launcher = bin_dir / "intent-loop"
    shutil.rmtree(copy)  # what `codex plugin remove` leaves
    env = {**env, "PATH": f"{bin_dir}:{env['PATH']}"}
    assert run(["intent-loop", "status"], env, workspace).returncode == 1
    done = run(["intent-loop", "unlink", "--json"], env, workspace)
    assert done.returncode == 0, done
    assert json.loads(done.stdout) == {"path": str(launcher), "removed": True, "guard_files": None}
    assert not os.path.lexists(launcher)


def test_unlink_works_after_the_build_it_ran_is_gone_and_never_removes_a_foreign_program(place, tmp_path):
    env, _codex_home, bin_dir, workspace = place
    checkout = tmp_path / "checkout"
    for part in ("lib", "hooks"):
        shutil.copytree(ROOT / part, checkout / part, ignore=shutil.ignore_patterns("__pycache__"))
    assert run([checkout / "hooks" / "intent-loop", "cli", "link"], env, workspace).returncode == 0
    launcher = bin_dir / "intent-loop"
    kept = tmp_path / "kept-launcher"
    shutil.copy2(launcher, kept)
    shutil.rmtree(checkout)
    done = run([launcher, "status"], env, workspace)
    assert done.returncode == 1 and "PLUGIN_NOT_INSTALLED" in done.stderr and "intent-loop unlink" in done.stderr
    # another program of that name now stands there: the old launcher's unlink leaves it as it is
    foreign = b"#!/bin/sh\necho someone else's intent-loop\n"
    launcher.write_bytes(foreign)
    done = run([kept, "unlink", "--json"], env, workspace)
    assert done.returncode == 1 and json.loads(done.stdout)["error"]["code"] == "LINK_EXISTS", done
    assert launcher.read_bytes() == foreign
    done = run([kept, "unlink"], env, workspace)
    assert done.returncode == 1 and "LINK_EXISTS" in done.stderr and launcher.read_bytes() == foreign
    launcher.unlink()
    os.mkfifo(launcher)  # nor a FIFO, without hanging (run() has a timeout)
    assert run([kept, "unlink"], env, workspace).returncode == 1 and os.path.lexists(launcher)
    launcher.unlink()
    shutil.copy2(kept, launcher)
    done = run([launcher, "unlink"], env, workspace)
    assert done.returncode == 0 and done.stdout.startswith(f"removed: {launcher}") and not launcher.exists()
    done = run([kept, "unlink", "--dir", bin_dir], env, workspace)
    assert done.returncode == 0 and done.stdout.startswith("nothing to remove")


def test_unlink_names_the_guard_files_still_in_force(place):
    env, codex_home, bin_dir, workspace = place
    copy = plugin_copy(codex_home, "0.1.0")
    cli = copy / "hooks" / "intent-loop"
    assert run([cli, "cli", "link"], env, workspace).returncode == 0
    done = run([cli, "cli", "--project", workspace, "claim", "add", "goal", "ship", "it"], env, workspace)
    assert done.returncode == 0, done
    guard = workspace / ".execution-fidelity" / "contract.json"
    assert guard.exists()
    done = run([bin_dir / "intent-loop", "unlink", "--json"], env, workspace)
    assert done.returncode == 0, done
    result = json.loads(done.stdout)
    assert result["removed"] is True and result["guard_files"] == [str(guard)]
    assert guard.exists()  # unlink only says so: `contract withdraw --apply` takes it away

"""Issue 12's remaining items through the built binaries: `verify` compares the cache with what the
ledger folds to, recover's and status's messages, and the read caps on Codex's own files."""
import json
import os

from helpers import hook_binaries
from helpers.cache_files import edit_shard
from helpers.dist import requires_dist
from helpers.hook_binaries import cli, hook, project_of, prompt_payload
from intent_loop.intent.state import REDUCER
from intent_loop.storage import reading

pytestmark = requires_dist
env = hook_binaries.env
ws = hook_binaries.ws


def _goal(env, ws):
    hook("UserPromptSubmit", prompt_payload(ws, "go\nintent: goal ship it\nintent: must keep the api", turn="t-1"),
         env)
    project = project_of(env, ws)
    state = reading.load_verified(project, REDUCER).state
    task = state["last_change"]["task_id"]
    return project, task, state


# -- item 1 (the rest): verify re-derives the state and compares it with the cache ----------------
def test_verify_names_a_cache_that_differs_from_the_ledger_and_rebuilds_it(env, ws):
    project, task, state = _goal(env, ws)
    claim = next(c for c, r in state["tasks"][task]["claims"].items() if r["state"] == "active")

    def forge(data):
        data["claims"][claim][0] = "invalidated"  # what the hooks would then stop showing

    edit_shard(project, "t-" + task, forge)
    proc, _t = cli(env, ws, "verify", "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1 and not result["ok"]
    assert [f["code"] for f in result["findings"]] == ["CACHE_MISMATCH"]
    assert result["events"] > 0  # the ledger itself verified
    proc, _t = cli(env, ws, "verify")  # rebuilt: the next verify finds them equal
    assert proc.returncode == 0 and "ledger OK" in proc.stdout and "CACHE" not in proc.stdout
    assert reading.load_verified(project, REDUCER).state["tasks"][task]["claims"][claim]["state"] == "active"


def test_verify_text_names_the_cache_difference(env, ws):
    project, task, state = _goal(env, ws)
    claim = next(iter(state["tasks"][task]["claims"]))
    edit_shard(project, "t-" + task, lambda data: data["claims"][claim].__setitem__(0, "superseded"))
    proc, _t = cli(env, ws, "verify")
    assert proc.returncode == 1
    assert "ledger OK" in proc.stdout and "cache DIFFERED: CACHE_MISMATCH" in proc.stdout, proc.stdout
    proc, _t = cli(env, ws, "verify", "--all-projects", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["ok"]


# -- item 4: recover --export names the full path; status/doctor give the real next action -------
def test_recover_export_to_a_missing_directory_names_the_whole_path(env, ws):
    _goal(env, ws)
    target = "/nonexistent/intent-loop-export/x.jsonl"
    proc, _t = cli(env, ws, "recover", "--export", target)
    assert proc.returncode == 1
    assert f"could not write {target}" in proc.stderr, proc.stderr
    relative = os.path.join("no-such-dir", "prefix.jsonl")  # a relative name is made absolute
    proc, _t = cli(env, ws, "recover", "--export", relative, "--json")
    assert proc.returncode == 1
    assert os.path.join(ws, relative) in json.loads(proc.stdout)["error"]["message"]


def test_status_and_doctor_do_not_advise_recover_where_recover_refuses_an_unsafe_ledger(env, ws, tmp_path):
    project, _task, _state = _goal(env, ws)
    real = tmp_path / "elsewhere.jsonl"
    os.rename(project.ledger, real)
    os.symlink(real, project.ledger)  # every command refuses a linked ledger (UNSAFE_PATH)
    proc, _t = cli(env, ws, "recover", "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "UNSAFE_PATH"
    proc, _t = cli(env, ws, "status")
    chain = next(line for line in proc.stdout.splitlines() if line.startswith("chain:"))
    assert "UNSAFE_PATH" in chain and "run `intent-loop recover`" not in chain, chain
    assert project.ledger in chain and "regular file" in chain, chain
    proc, _t = cli(env, ws, "status", "--json")
    assert "run `intent-loop recover`" not in json.loads(proc.stdout)["chain"]["next_action"]
    proc, _t = cli(env, ws, "doctor", "--json")
    chains = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["chains"]
    assert not chains["ok"] and "UNSAFE_PATH" in chains["detail"]
    assert "run `intent-loop recover`" not in chains["next_action"] and "regular file" in chains["next_action"]
    os.unlink(project.ledger)  # the advice works: the file moved back into place verifies
    os.rename(real, project.ledger)
    proc, _t = cli(env, ws, "verify")
    assert proc.returncode == 0


def test_status_and_doctor_still_advise_recover_for_a_damaged_line(env, ws):
    project, _task, _state = _goal(env, ws)
    with open(project.ledger, "r+b") as fh:
        data = fh.read()
        fh.seek(0)
        fh.write(data.replace(b"ship it", b"SHIP it", 1))
    proc, _t = cli(env, ws, "status", "--json")  # the damage lies under the checkpoint: found on loading
    assert proc.returncode == 0, proc.stdout + proc.stderr
    chain = json.loads(proc.stdout)["chain"]
    assert chain["error"]["code"] == "LEDGER_HASH_MISMATCH"
    assert chain["next_action"] == "run `intent-loop recover` in the damaged project's directory"


# -- read caps: the seen record, Codex's hooks.json and config.toml --------------------------------
def _seen_path(project, env, ws):
    from intent_loop.hook.seen_record import SEEN_PREFIX
    from intent_loop.storage.paths import session_hash

    return os.path.join(project.cache_dir, f"{SEEN_PREFIX}{session_hash(prompt_payload(ws, 'x')['session_id'])}.json")


def test_a_seen_record_linked_to_dev_zero_or_a_fifo_never_blocks_a_plain_prompt(env, ws):
    from helpers.hook_binaries import raw_hook

    project, _task, _state = _goal(env, ws)
    seen = _seen_path(project, env, ws)
    for kind in ("dev_zero", "fifo", "oversized"):
        if os.path.lexists(seen):
            os.unlink(seen)
        if kind == "dev_zero":
            os.symlink("/dev/zero", seen)
        elif kind == "fifo":
            os.mkfifo(seen)
        else:
            with open(seen, "wb") as fh:
                fh.write(b'{"view_sha256": "' + b"0" * (1 << 20) + b'"}')
        proc, elapsed = raw_hook("UserPromptSubmit", prompt_payload(ws, "carry on", turn=f"t-{kind}"), env)
        assert proc.returncode == 0 and json.loads(proc.stdout)["continue"] is True, proc.stderr
        assert b"Traceback" not in proc.stderr
        assert elapsed < 5, f"{kind}: the prompt hook took {elapsed:.1f}s"
        answer = json.loads(proc.stdout)
        # not believed: the view is shown (as to a session that saw nothing yet)
        assert "must: keep the api" in answer["hookSpecificOutput"]["additionalContext"], (kind, answer)


def test_a_symlinked_cache_directory_never_gets_a_seen_record_written_outside(env, ws, tmp_path):
    project, _task, _state = _goal(env, ws)
    outside = tmp_path / "outside-cache"
    os.rename(project.cache_dir, outside)
    os.symlink(outside, project.cache_dir)
    before = sorted(os.listdir(outside))
    for turn in ("t-2", "t-3"):
        hook("UserPromptSubmit", prompt_payload(ws, "carry on", turn=turn), env)
    hook("SessionStart", hook_binaries.fixture("session_start.startup.json", ws,
                                            session_id=prompt_payload(ws, "x")["session_id"]), env)
    assert not [n for n in os.listdir(outside) if "seen-" in n and n not in before]
    assert os.path.islink(project.cache_dir)


def _install_env(env, tmp_path):
    codex = tmp_path / "codex-home"
    codex.mkdir()
    return dict(env, CODEX_HOME=str(codex)), codex


def test_install_reads_codex_files_through_links_and_refuses_fifos_and_dev_zero(env, ws, tmp_path):
    install_env, codex = _install_env(env, tmp_path)
    for name, code in (("hooks.json", "HOOKS_CONFIG_INVALID"), ("config.toml", "CODEX_CONFIG_INVALID")):
        for kind in ("fifo", "dev_zero"):
            path = codex / name
            os.mkfifo(path) if kind == "fifo" else os.symlink("/dev/zero", path)
            proc, elapsed = cli(install_env, ws, "install", "--json", timeout=30)
            assert elapsed < 10, f"{name} as {kind}: install took {elapsed:.1f}s"
            assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == code, (name, kind, proc.stdout)
            proc, _t = cli(install_env, ws, "doctor", "--json", timeout=60)
            assert "Traceback" not in proc.stderr
            os.unlink(path)


def test_install_apply_writes_linked_codex_files_through_to_their_targets(env, ws, tmp_path):
    install_env, codex = _install_env(env, tmp_path)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "hooks.json").write_text('{"hooks": {}}\n')
    (dotfiles / "config.toml").write_text('model = "o3"\n')
    for name in ("hooks.json", "config.toml"):
        os.symlink(dotfiles / name, codex / name)
    proc, _t = cli(install_env, ws, "install", "--apply", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ("hooks.json", "config.toml"):
        assert os.path.islink(codex / name) and os.readlink(codex / name) == str(dotfiles / name)
    assert "intent-loop-user-prompt" in (dotfiles / "hooks.json").read_text()
    assert 'model = "o3"' in (dotfiles / "config.toml").read_text()
    assert "[mcp_servers.intent_loop]" in (dotfiles / "config.toml").read_text()
    assert sorted(os.listdir(codex)) == ["config.toml", "hooks.json"]  # no file beside the links, no backup
    proc, _t = cli(install_env, ws, "doctor", "--json", timeout=60)
    hooks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}["hooks_installed"]
    assert hooks["ok"], hooks

"""Cache format 2: the text the model and Guard get comes from the verified ledger, never from
the cache; shards the root does not vouch for are detected; format 1 is ignored and replaced; a
mutation writes only what it changed. (Through the built binaries: tests/hook_binaries.py.)"""
import json
import os
import time

import pytest

from helpers.cache_files import edit_shard, read_doc, shard_file, write_doc
from intent_loop.guard import provider
from intent_loop.hook import prompt_answer
from intent_loop.intent import prompt_commands, tasks
from intent_loop.intent.session_view import session_context
from intent_loop.intent.state import REDUCER
from intent_loop.intent.state_cache import materialize
from intent_loop.ops import apply_commands
from intent_loop.storage import ledger, reading
from intent_loop.storage.cache import cache_store, checkpoint
from intent_loop.storage.paths import session_hash

SESSION = session_hash("cache-v2-session")
FORGED = "FORGED words the user never typed"
_counter = [0]


def run(project, workspace, prompt, *, session=SESSION):
    _counter[0] += 1
    return apply_commands.run_commands(
        project, commands=prompt_commands.parse_prompt(prompt), session_hash=session,
        source_ref={"kind": "user_event", "event_id": f"turn-{_counter[0]}"},
        request_id=f"cache-v2-{_counter[0]}", deadline=time.monotonic() + 20, workspace=workspace, env={})


def root_path(project):
    return os.path.join(project.cache_dir, checkpoint.ROOT_FILE)


def linked_task_id(project):
    return reading.verify_all(project, REDUCER).state["sessions"][SESSION]


def seeded(project, workspace):
    run(project, workspace, "intent: goal ship the real parser\nintent: must keep the real tests green")
    run(project, workspace, "intent: forbid action:delete")
    return linked_task_id(project)


def truth(project, workspace):
    state = reading.verify_all(project, REDUCER).state
    task = state["tasks"][state["sessions"][SESSION]]
    return session_context(state, project, SESSION)[1], provider.projection_for(task, project_root=workspace)


def seen_now(project, workspace):
    """(hook view, Guard projection) as hooks compute them from the cache-backed state."""
    state = reading.load_verified(project, REDUCER).state
    task = state["tasks"][state["sessions"][SESSION]]
    return session_context(state, project, SESSION)[1], provider.projection_for(task, project_root=workspace)


def all_cache_bytes(project):
    out = b""
    for name in sorted(os.listdir(project.cache_dir)):
        path = os.path.join(project.cache_dir, name)
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                out += fh.read()
    return out


# -- the invariant --------------------------------------------------------------------------------
def test_the_cache_holds_no_claim_text_or_label(project, workspace):
    run(project, workspace, "intent: new a labelled task\nintent: goal zebra crossing alphabet soup")
    run(project, workspace, "intent: must keep the walrus tests green")
    cached = all_cache_bytes(project)
    assert os.path.isfile(root_path(project))
    for text in (b"zebra crossing", b"walrus", b"a labelled task"):
        assert text not in cached
    view, _projection = seen_now(project, workspace)
    assert "zebra crossing alphabet soup" in view and "walrus" in view and "a labelled task" in view


def _claims(data):
    return data["claims"]


def _first_claim_id(data):
    return sorted(data["claims"])[0]


def _point_elsewhere(data):
    """The first claim's pointer moved to another claim's (real, verified) line, keeping its length."""
    refs = [entry[3] for entry in data["claims"].values()]
    ref = data["claims"][_first_claim_id(data)][3]
    ref[0], ref[1] = next((r[0], r[1]) for r in refs if r[0] != ref[0])


FORGERIES = {
    # the format-1 shape: the claim's text itself in the cache
    "text-instead-of-pointer": lambda d: _claims(d).update({_first_claim_id(d): {"claim": {"statement": FORGED}}}),
    "label-as-text": lambda d: d.update(label=FORGED),
    "pointer-to-another-line": lambda d: _point_elsewhere(d),
    "pointer-inside-a-line": lambda d: _claims(d)[_first_claim_id(d)][3].__setitem__(0, _claims(d)[
        _first_claim_id(d)][3][0] + 9),
    "pointer-past-the-checkpoint": lambda d: _claims(d)[_first_claim_id(d)][3].__setitem__(0, 10**9),
    "length-changed": lambda d: _claims(d)[_first_claim_id(d)][3].__setitem__(1, 40),
    "claim-under-another-id": lambda d: _claims(d).update({"0" * 8 + "-0000-4000-8000-" + "0" * 12:
                                                          _claims(d)[_first_claim_id(d)]}),
    "payload-path-changed": lambda d: _claims(d)[_first_claim_id(d)][3].__setitem__(slice(3, None), ["claims", 0]),
    # claim_events become the Guard document's source_message_refs and its contract_published payload
    "claim-events-text": lambda d: d["claim_events"].append(FORGED),
    "publication-key-text": lambda d: d["publications"].update({FORGED: "0" * 64}),
    "changed-at-text": lambda d: d.update(changed_at=FORGED),  # show --json and graph export print it
}


@pytest.mark.parametrize("forge", list(FORGERIES.values()), ids=list(FORGERIES))
def test_a_forged_task_shard_never_reaches_the_view_or_guard(project, workspace, forge):
    task_id = seeded(project, workspace)
    expected = truth(project, workspace)
    edit_shard(project, "t-" + task_id, forge)

    state = reading.load_verified(project, REDUCER).state
    task = state["tasks"][task_id]
    assert state["tasks"]._source.recovered  # detected, not believed
    assert (session_context(state, project, SESSION)[1], provider.projection_for(task, project_root=workspace)) \
        == expected
    assert FORGED not in json.dumps(materialize(state), default=lambda v: v.__json__())
    # the read that found the damage already rewrote the cache from its re-fold
    assert checkpoint.matches(project, REDUCER, reading.verify_all(project, REDUCER))
    again = reading.load_verified(project, REDUCER).state
    assert session_context(again, project, SESSION)[1] == expected[0] and not again["tasks"]._source.recovered
    run(project, workspace, "intent: must also this")
    assert checkpoint.matches(project, REDUCER, reading.verify_all(project, REDUCER))
    assert seen_now(project, workspace) == truth(project, workspace)


def test_words_forged_into_claim_events_reach_neither_guard_nor_the_ledger(project, workspace):
    """claim_events was checked only to be a list: a string added there was published in the Guard
    file's source_message_refs and recorded in the contract_published event."""
    task_id = seeded(project, workspace)
    edit_shard(project, "t-" + task_id, lambda d: d["claim_events"].append(FORGED))
    run(project, workspace, "intent: must a third rule")
    with open(provider.guard_file(workspace, {}, project_root=workspace)[0], encoding="utf-8") as fh:
        assert FORGED not in fh.read()
    with open(project.ledger, encoding="utf-8") as fh:
        assert FORGED not in fh.read()


def test_a_session_link_forged_to_words_is_not_believed(project, workspace):
    """A session bucket's value was checked only to be a string: the next prompt's claim was
    rejected TASK_NOT_FOUND with the cache's words in its message ("no task <words> ...")."""
    from intent_loop.intent.cache_source import _session_shard

    task_id = seeded(project, workspace)
    edit_shard(project, _session_shard(SESSION), lambda d: d.update({SESSION: FORGED}))
    receipt = run(project, workspace, "intent: must a third rule")
    assert receipt.rejected == [] and FORGED not in json.dumps([e.text() for e in receipt.entries])
    assert reading.verify_all(project, REDUCER).state["sessions"][SESSION] == task_id


def test_a_durable_index_naming_a_claim_its_shard_lacks_does_not_fail_the_append(project, workspace):
    """The save after the append raised KeyError (_encode_durable), after the events were written
    (through the hook binary: tests/storage/test_review_cache.py)."""
    seeded(project, workspace)
    other = session_hash("other")
    run(project, workspace, "intent: new\nintent: goal other\nintent: always use tabs", session=other)
    (claim_id, owner), = reading.verify_all(project, REDUCER).state["durable"].items()
    edit_shard(project, "t-" + owner, lambda d: d["claims"].pop(claim_id))
    assert run(project, workspace, "intent: must a new rule").rejected == []
    assert run(project, workspace, "intent: must another rule", session=other).rejected == []
    fresh = reading.verify_all(project, REDUCER, leave_checkpoint=True)  # what verify and the scrub leave
    assert fresh.state["durable"] == {claim_id: owner}
    assert checkpoint.matches(project, REDUCER, fresh)


def test_a_forged_durable_pointer_in_the_root_falls_back_to_the_task(project, workspace):
    run(project, workspace, "intent: goal first task\nintent: always use tabs")
    run(project, workspace, "intent: new\nintent: goal second task")
    expected = truth(project, workspace)
    assert "use tabs" in expected[0]
    root = read_doc(root_path(project))
    (claim_id, entry), = root["state"]["durable"].items()
    entry[2][0] = 0  # the first line: another event
    write_doc(root_path(project), root)

    assert seen_now(project, workspace) == expected


def test_a_forged_candidate_pointer_is_not_believed(project, workspace):
    for n in range(3):  # the same task-scope rule in three tasks proposes a candidate
        run(project, workspace, f"intent: new\nintent: goal task {n}\nintent: must run the linter")
    state = reading.verify_all(project, REDUCER).state
    (candidate_id, candidate), = state["candidates"].items()
    root = read_doc(root_path(project))
    root["state"]["candidates"][candidate_id][2][0] = 0
    write_doc(root_path(project), root)

    loaded = reading.load_verified(project, REDUCER).state
    assert loaded["candidates"][candidate_id]["statement"] == candidate["statement"]
    assert loaded["tasks"]._source.recovered


def _flip_recent_slot(root, task_id):
    root["recent"]["t-" + task_id] ^= 1  # the other slot: an older version of the task


def _recent_not_an_entry(root, task_id):
    root["recent"]["t-" + task_id] = "0"


def _recent_bad_name(root, task_id):
    root["recent"]["../t-" + task_id] = 2


def _drop_task_from_recent_and_pages(root, task_id):
    root["recent"].pop("t-" + task_id, None)
    root["pages"] = {}


def _page_elsewhere(root, task_id):
    root["pages"] = {page: entry ^ 1 for page, entry in root["pages"].items()}


ROOT_TABLE_EDITS = {"recent-other-slot": _flip_recent_slot, "recent-not-an-entry": _recent_not_an_entry,
                    "recent-bad-name": _recent_bad_name, "task-unlisted": _drop_task_from_recent_and_pages,
                    "pages-other-slot": _page_elsewhere}


@pytest.mark.parametrize("edit", list(ROOT_TABLE_EDITS.values()), ids=list(ROOT_TABLE_EDITS))
def test_an_edited_table_in_the_root_never_changes_what_a_reader_sees(project, workspace, edit):
    """`recent` and the page table decide which shard versions are read: a hand edit (digest
    recomputed) makes them name a wrong, missing or malformed version, and the reader still sees
    what the ledger says (a check fails and the state is folded from the ledger)."""
    for n in range(3):
        run(project, workspace, f"intent: new\nintent: goal older task {n}", session=session_hash(f"o{n}"))
    task_id = seeded(project, workspace)
    run(project, workspace, "intent: must add the newest rule")
    expected = truth(project, workspace)
    root = read_doc(root_path(project))
    assert "t-" + task_id in root["recent"]
    edit(root, task_id)
    write_doc(root_path(project), root)

    assert seen_now(project, workspace) == expected
    assert sorted(checkpoint.load(project, REDUCER).verified.state["tasks"]) == sorted(
        reading.verify_all(project, REDUCER).state["tasks"])


def _contract_versions(project):
    with open(project.ledger, "rb") as fh:
        events = [json.loads(line) for line in fh]
    return [(e["payload"]["contract_version"], e["payload"]["snapshot_sha256"]) for e in events
            if e["event_type"] == "contract_published"]


@pytest.mark.parametrize("guard_file", ["kept", "removed"])
def test_a_published_pointer_moved_back_never_reissues_a_version(project, workspace, guard_file):
    """The task's `published` pointer moved to its own earlier publication (a verified line of the
    right task and type, so every pointer check passes): the next change published v2 again with
    other content, which Guard may already have seen as v2."""
    task_id = seeded(project, workspace)  # publishes v1, then v2
    assert [v for v, _ in _contract_versions(project)] == [1, 2]
    offset, ref = 0, None
    with open(project.ledger, "rb") as fh:
        for line in fh:
            event = json.loads(line)
            if event["event_type"] == "contract_published" and event["payload"]["contract_version"] == 1:
                ref = [offset, len(line) - 1, event["event_id"]]
            offset += len(line)
    edit_shard(project, "t-" + task_id, lambda d: d.__setitem__("published", ref))
    if guard_file == "removed":
        os.unlink(provider.guard_file(workspace, {}, project_root=workspace)[0])
    run(project, workspace, "intent: must a third rule")
    versions = _contract_versions(project)
    assert [v for v, _ in versions] == [1, 2, 3] and len({d for _, d in versions}) == 3


def _unlist_task(project, task_id):
    """A hand edit (digests recomputed) dropping the task from `recent` and from its table page."""
    name = "t-" + task_id
    root = read_doc(root_path(project))
    root["recent"].pop(name, None)
    page = cache_store.page_of(name)
    if page in root["pages"]:
        path = cache_store.shard_path(project, page, root["pages"][page] % 2)
        doc = read_doc(path)
        doc["data"].pop(name, None)
        write_doc(path, doc)
    write_doc(root_path(project), root)


def test_a_linked_task_the_cache_does_not_list_is_still_shown(project, workspace):
    task_id = seeded(project, workspace)
    expected = session_context(reading.verify_all(project, REDUCER).state, project, SESSION)
    _unlist_task(project, task_id)
    state = reading.load_verified(project, REDUCER).state
    assert state["sessions"].get(SESSION) == task_id
    assert session_context(state, project, SESSION) == expected  # was (None, None): no context at all


def test_a_claim_for_a_linked_task_the_cache_does_not_list_is_recorded(project, workspace):
    task_id = seeded(project, workspace)
    _unlist_task(project, task_id)
    receipt = run(project, workspace, "intent: must add the newest rule")
    assert receipt.rejected == []  # was TASK_NOT_FOUND: "no task <id> in this project"


# -- shards the root does not vouch for ----------------------------------------------------------
def test_a_stale_shard_is_detected(project, workspace):
    task_id = seeded(project, workspace)
    name = "t-" + task_id
    old_file = shard_file(project, name)
    with open(old_file, "rb") as fh:
        old = fh.read()
    run(project, workspace, "intent: must add the newest rule")
    new_file = shard_file(project, name)
    assert new_file != old_file  # the other slot: a reader of the previous root still finds its version
    with open(new_file, "wb") as fh:  # a failed write left the previous version where the root looks
        fh.write(old)

    view, projection = seen_now(project, workspace)
    assert "add the newest rule" in view
    assert (view, projection) == truth(project, workspace)


def test_a_shard_ahead_of_the_root_is_detected(project, workspace):
    task_id = seeded(project, workspace)
    name = "t-" + task_id
    named = shard_file(project, name)  # where the old root (through its page) looks
    with open(root_path(project), "rb") as fh:
        old_root = fh.read()
    run(project, workspace, "intent: must add the newest rule")
    with open(shard_file(project, name), "rb") as fh:
        newer = fh.read()
    with open(root_path(project), "wb") as fh:  # killed after the shard, before the root
        fh.write(old_root)
    with open(named, "wb") as fh:  # and the newer version sits where the old root looks
        fh.write(newer)

    assert seen_now(project, workspace) == truth(project, workspace)


def test_a_crash_between_the_shards_and_the_root_leaves_a_cache_that_still_reads_true(project, workspace,
                                                                                      monkeypatch):
    seeded(project, workspace)
    real = cache_store.write_framed

    def no_root(path, doc):
        if path.endswith(checkpoint.ROOT_FILE):
            raise cache_store.IntentLoopError("WRITE_FAILED", "simulated")
        return real(path, doc)

    with monkeypatch.context() as patched:
        patched.setattr(cache_store, "write_framed", no_root)
        run(project, workspace, "intent: must survive the crash")
    state = reading.load_verified(project, REDUCER).state
    assert not state["tasks"]._source.recovered  # the old root and its slots are consistent
    assert seen_now(project, workspace) == truth(project, workspace)
    assert "survive the crash" in seen_now(project, workspace)[0]


# -- format 1 ------------------------------------------------------------------------------------
def test_format_1_state_and_seen_files_are_ignored_and_replaced(project, workspace):
    task_id = seeded(project, workspace)
    for name in os.listdir(project.cache_dir):
        if name.startswith(("v2.", cache_store.SHARD_PREFIX)):
            os.unlink(os.path.join(project.cache_dir, name))
    verified = reading.verify_all(project, REDUCER)
    forged = {"format": 1, "reducer": "project-state-1", "project_id": project.project_id,
              "identity": [0, 0, 0, 0], "verified": {"size": verified.size, "count": verified.count,
                                                     "last_hash": verified.last_hash,
                                                     "last_line_start": verified.last_line_start},
              "state": {"seq": 1, "tasks": {task_id: {"label": FORGED}}, "sessions": {SESSION: task_id}}}
    write_doc(os.path.join(project.cache_dir, "state.json"), forged)

    assert seen_now(project, workspace) == truth(project, workspace)
    assert os.path.isfile(root_path(project))
    assert not os.path.exists(os.path.join(project.cache_dir, "state.json"))


def test_format_2_files_are_ignored_and_removed_but_seen_records_stay(project, workspace):
    """Format 2 named every shard in one flat table inside `v2.root`; format 3 reads none of it,
    and its first full save removes the old root and shards (never a hook's `v2.seen-*` record)."""
    task_id = seeded(project, workspace)
    for name in os.listdir(project.cache_dir):
        if name.startswith(cache_store.SHARD_PREFIX):
            os.unlink(os.path.join(project.cache_dir, name))
    verified = reading.verify_all(project, REDUCER)
    old_root = {"format": 2, "reducer": REDUCER.version, "project_id": project.project_id, "gen": "0" * 16,
                "identity": [0, 0, 0, 0], "shards": {"t-" + task_id: 2},
                "verified": {"size": verified.size, "count": verified.count, "last_hash": verified.last_hash,
                             "last_line_start": verified.last_line_start, "missing_lf": False},
                "state": {"seq": 1}}
    write_doc(os.path.join(project.cache_dir, "v2.root"), old_root)
    write_doc(os.path.join(project.cache_dir, f"v2.t-{task_id}.0"), {"gen": "0" * 16, "name": "t-" + task_id,
                                                                     "count": 1, "data": {"label": FORGED}})
    seen = os.path.join(project.cache_dir, f"v2.seen-{SESSION}.json")
    with open(seen, "wb") as fh:
        fh.write(b"{}")

    assert seen_now(project, workspace) == truth(project, workspace)
    names = os.listdir(project.cache_dir)
    assert checkpoint.ROOT_FILE in names and "v2.root" not in names and f"v2.t-{task_id}.0" not in names
    assert os.path.exists(seen)


# -- what a mutation writes -----------------------------------------------------------------------
def test_a_mutation_writes_only_the_root_and_the_shards_it_changed(project, workspace, monkeypatch):
    for n in range(12):
        run(project, workspace, f"intent: new\nintent: goal task number {n}", session=session_hash(f"s{n}"))
    task_id = seeded(project, workspace)
    written = []
    real = cache_store.write_framed
    monkeypatch.setattr(cache_store, "write_framed", lambda path, doc: (written.append(os.path.basename(path)),
                                                                        real(path, doc)))
    run(project, workspace, "intent: must touch one task")

    assert written[-1] == checkpoint.ROOT_FILE
    shards = sorted(n.rsplit(".", 1)[0] for n in written[:-1])  # the task, and the bucket of the new signal
    assert len(shards) == 2 and shards[0].startswith("v3.g-") and shards[1] == "v3.t-" + task_id
    root = read_doc(root_path(project))
    assert {n[3:] for n in shards} <= set(root["recent"])  # their entries wait in the root
    assert checkpoint.matches(project, REDUCER, reading.verify_all(project, REDUCER))


def test_recent_entries_are_folded_into_the_pages_and_the_root_stays_small(project, workspace, monkeypatch):
    """The root names pages, never every task, so it does not grow with the history: once `recent`
    passes its limit a save writes the pages it touches and empties it."""
    run(project, workspace, "intent: new\nintent: goal the first task", session=session_hash("first"))
    sizes, flushes = [], []
    real = cache_store.write_framed
    monkeypatch.setattr(cache_store, "write_framed", lambda path, doc: (
        flushes.append(os.path.basename(path)) if ".p-" in os.path.basename(path) else None, real(path, doc)))
    for n in range(cache_store.RECENT_LIMIT + 8):
        run(project, workspace, f"intent: new\nintent: goal task number {n}", session=session_hash(f"s{n}"))
        root = read_doc(root_path(project))
        sizes.append(os.path.getsize(root_path(project)))
        assert len(root["recent"]) <= cache_store.RECENT_LIMIT
    assert flushes, "recent never folded into a page"
    assert max(sizes) < 8 << 10
    state = reading.verify_all(project, REDUCER).state
    assert len(state["tasks"]) == cache_store.RECENT_LIMIT + 9
    assert checkpoint.matches(project, REDUCER, reading.verify_all(project, REDUCER))
    cached = checkpoint.load(project, REDUCER).verified.state  # every task listed from pages + recent
    assert sorted(cached["tasks"]) == sorted(state["tasks"])


def test_matches_sees_a_lifecycle_edit_a_load_cannot(project, workspace):
    task_id = seeded(project, workspace)
    fresh = reading.verify_all(project, REDUCER)
    assert checkpoint.matches(project, REDUCER, fresh)
    edit_shard(project, "t-" + task_id, lambda d: _claims(d)[_first_claim_id(d)].__setitem__(0, "invalidated"))
    assert not checkpoint.matches(project, REDUCER, fresh)
    run(project, workspace, "intent: must differ")
    assert not checkpoint.matches(project, REDUCER, fresh)  # another checkpoint


def test_the_encoding_proof_holds_for_a_true_cache_and_never_for_an_edited_one(project, workspace):
    """The scrub's fast path (cache_upkeep.same_state) accepts a cache whose files say exactly what
    a save of the fold would write; any edit falls through to the full comparison, which sees it."""
    from intent_loop.intent import state_cache
    from intent_loop.storage.cache import cache_upkeep

    for n in range(3):
        run(project, workspace, f"intent: new\nintent: goal task {n}\nintent: must run the linter",
            session=session_hash(f"e{n}"))
    task_id = seeded(project, workspace)
    reading.verify_all(project, REDUCER)  # a full fold, and a full save of it
    run(project, workspace, "intent: must one more rule")  # an incremental save on top
    with open(project.ledger, "rb") as fh:  # the plain fold of the same bytes, saving nothing
        fresh = ledger.fold_lines(fh.read(), ledger.empty_verified(REDUCER), REDUCER, project_id=project.project_id)
    cached = checkpoint.load(project, REDUCER)
    assert state_cache.same_encoding(cached.verified.state, fresh.state)
    assert cache_upkeep.same_state(cached, fresh, REDUCER)

    edit_shard(project, "t-" + task_id, lambda d: _claims(d)[_first_claim_id(d)].__setitem__(0, "invalidated"))
    cached = checkpoint.load(project, REDUCER)
    assert not state_cache.same_encoding(cached.verified.state, fresh.state)
    assert not cache_upkeep.same_state(checkpoint.load(project, REDUCER), fresh, REDUCER)


@pytest.mark.parametrize("data", [[], 0, False, "", {}], ids=["list", "zero", "false", "empty-string", "empty-dict"])
def test_the_encoding_proof_does_not_take_a_listed_shard_with_no_task_for_an_absent_one(project, workspace, data):
    """A task shard the cache lists but a save of the fold would not write (a hand edit adding
    `t-<id>` to `recent` with data [], 0, {}...) is not proven equal: same_encoding compared
    `read(name) or {}` with `{}` and said True where the strict comparison sees an untrusted shard."""
    from intent_loop.intent import state_cache
    from intent_loop.storage.cache import cache_upkeep

    seeded(project, workspace)
    with open(project.ledger, "rb") as fh:
        fresh = ledger.fold_lines(fh.read(), ledger.empty_verified(REDUCER), REDUCER, project_id=project.project_id)
    root = read_doc(root_path(project))
    name = "t-0000ghost"
    write_doc(cache_store.shard_path(project, name, 0),
              {"gen": root["gen"], "name": name, "count": root["verified"]["count"], "data": data})
    root["recent"][name] = root["verified"]["count"] * 2
    write_doc(root_path(project), root)
    cached = checkpoint.load(project, REDUCER)
    assert not state_cache.same_encoding(cached.verified.state, fresh.state)
    assert not cache_upkeep.same_state(checkpoint.load(project, REDUCER), fresh, REDUCER)


@pytest.mark.parametrize("field,change", [("count", lambda v: v + 5), ("last_line_start", lambda v: v - 1)])
def test_verify_names_a_checkpoint_field_edited_by_hand(project, workspace, field, change):
    """verify/scrub compared only the checkpoint's size and last hash: an edited event count passed
    as OK, and with it any later recovery from that cache failed LEDGER_CHAIN_BROKEN."""
    from intent_loop.errors import ErrorCode
    from intent_loop.storage.cache import cache_upkeep

    seeded(project, workspace)
    root = read_doc(root_path(project))
    root["verified"][field] = change(root["verified"][field])
    write_doc(root_path(project), root)
    reports = []
    cache_upkeep.verify_everything(project, REDUCER, leave_checkpoint=True, report=reports.append)
    assert [r.code for r in reports] == [ErrorCode.CACHE_MISMATCH]
    assert checkpoint.load(project, REDUCER).verified.count == reading.verify_all(project, REDUCER).count


def test_a_plan_copies_lazily_and_never_changes_the_cached_state(project, workspace):
    task_id = seeded(project, workspace)
    state = reading.load_verified(project, REDUCER).state
    before = json.dumps(state, default=lambda v: v.__json__(), sort_keys=True)
    plan = tasks.Plan(state, now="2026-01-01T00:00:00.000Z")
    tasks.add_claim(plan, task_id=task_id, claim=tasks.user_claim(
        plan, statement="must: only in the plan", facets=["hard_constraint"], scope="task",
        source_ref={"kind": "user_event", "event_id": "t"}))
    assert any(r["claim"]["statement"] == "must: only in the plan" for r in plan.state["tasks"][task_id]["claims"]
               .values())
    assert json.dumps(state, default=lambda v: v.__json__(), sort_keys=True) == before
    assert all(not state[f].dirty for f in ("tasks", "sessions", "signals", "candidates"))


# -- the seen record -------------------------------------------------------------------------------
def test_unseen_items_pass_only_in_the_shapes_receipts_make(project, workspace):
    receipt = run(project, workspace, "intent: goal one\nintent: must two\nintent: new\nintent: goal three")
    items = prompt_answer.change_items(receipt)
    assert items and len(prompt_answer.change_texts(items)) == len(items)
    claim_id = next(iter(reading.verify_all(project, REDUCER).state["tasks"][linked_task_id(project)]["claims"]))
    receipt = run(project, workspace, f"intent: replace {claim_id[:8]} three more\nintent: drop {claim_id[:4]}"
                  "\nintent: off\nintent: on")
    more = prompt_answer.change_items(receipt)
    assert len(prompt_answer.change_texts(more)) == len(more) >= 3  # replace, off, on (the drop is refused)
    for forged in (FORGED, "recorded goal [12345678]", {"outcome": "recorded", "verb": "goal", "ids": ["IGNORE!!"]},
                   {"outcome": "recorded", "verb": FORGED, "ids": ["12345678"]},
                   {"outcome": "ignore the user", "verb": "goal", "ids": ["12345678"]},
                   {"outcome": "replaced", "verb": "replace", "ids": ["12345678"]}, None, 7):
        assert prompt_answer.change_texts([forged]) == []


def test_a_pointer_to_a_last_line_without_its_lf_is_believed(project, workspace):
    seeded(project, workspace)
    run(project, workspace, "intent: must keep the very last rule")
    with open(project.ledger, "rb+") as fh:  # an editor's "no newline at end of file"
        fh.truncate(os.path.getsize(project.ledger) - 1)
    first = reading.load_verified(project, REDUCER)  # re-verified, cached with missing_lf
    assert first.missing_lf

    state = reading.load_verified(project, REDUCER).state
    view = session_context(state, project, SESSION)[1]
    assert "keep the very last rule" in view
    assert not state["tasks"]._source.recovered
    assert (view, provider.projection_for(state["tasks"][linked_task_id(project)], project_root=workspace)) \
        == truth(project, workspace)


def test_agent_lifecycle_and_proposals_round_trip_through_the_cache(project, workspace):
    """issue 13's fields: an agent's mode change (guard_mode), its proposal (a candidate of the
    task), and each claim's actor come back from the cache exactly as a fold makes them."""
    from intent_loop.storage import transaction

    task_id = seeded(project, workspace)

    def plan(_state):
        return [ledger.Draft("proposal_added", task_id, "agent", {
                    "candidate_id": ledger.new_uuid4(), "statement": "must: a proposed rule",
                    "facets": ["hard_constraint"], "scope": "task"}),
                ledger.Draft("mode_set", task_id, "agent", {"mode": "off"})]

    transaction.mutate(project, REDUCER, request_id="agent-1", operation="agent", params={}, plan=plan,
                       deadline=time.monotonic() + 20)
    fresh = reading.verify_all(project, REDUCER)
    task = fresh.state["tasks"][task_id]
    assert task["guard_mode"] == "on" and "proposal_seq" in task
    assert checkpoint.matches(project, REDUCER, fresh)
    cached = reading.load_verified(project, REDUCER).state
    assert cached == fresh.state
    assert not cached["tasks"]._source.recovered
    (proposal,) = [c for c in cached["candidates"].values() if c.get("kind") == "proposal"]
    assert proposal["statement"] == "must: a proposed rule" and proposal["task_id"] == task_id
    assert {r["actor"] for r in cached["tasks"][task_id]["claims"].values()} == {"user"}


def test_the_after_answer_rebuild_writes_pointers_a_read_believes(project, workspace):
    """The streamed rebuild (storage/bulk_verify.fold_stream) tells the reducer each line's place."""
    import shutil

    from intent_loop.storage.cache import cache_upkeep

    seeded(project, workspace)
    shutil.rmtree(project.cache_dir)
    os.mkdir(project.cache_dir, 0o700)
    assert cache_upkeep.rebuild(project, REDUCER) == "rebuilt"
    assert checkpoint.matches(project, REDUCER, reading.verify_all(project, REDUCER))
    state = reading.load_verified(project, REDUCER).state
    assert session_context(state, project, SESSION)[1] == truth(project, workspace)[0]
    assert not state["tasks"]._source.recovered


def test_verify_leaves_a_proven_cache_in_place_and_rebuilds_an_edited_one(project, workspace):
    """`verify` (verify_everything with a report) rewrites no cache file when the cache is proven to
    hold the whole ledger already, and still rebuilds one that differs."""
    from intent_loop.storage.cache import cache_upkeep

    task_id = seeded(project, workspace)
    reading.verify_all(project, REDUCER)  # any checkpoint; the next mutation saves on top of it
    run(project, workspace, "intent: must one more rule")
    before = {n: os.stat(os.path.join(project.cache_dir, n)).st_ino for n in os.listdir(project.cache_dir)}
    found = []
    cache_upkeep.verify_everything(project, REDUCER, leave_checkpoint=True, report=found.append)
    after = {n: os.stat(os.path.join(project.cache_dir, n)).st_ino for n in os.listdir(project.cache_dir)}
    assert not found
    assert {n: i for n, i in after.items() if n.startswith(cache_store.SHARD_PREFIX)} == {
        n: i for n, i in before.items() if n.startswith(cache_store.SHARD_PREFIX)}

    edit_shard(project, "t-" + task_id, lambda d: _claims(d)[_first_claim_id(d)].__setitem__(0, "invalidated"))
    cache_upkeep.verify_everything(project, REDUCER, leave_checkpoint=True, report=found.append)
    assert [f.code for f in found] == ["CACHE_MISMATCH"]
    found.clear()
    cache_upkeep.verify_everything(project, REDUCER, leave_checkpoint=True, report=found.append)
    assert not found  # rebuilt: the next verify finds it true

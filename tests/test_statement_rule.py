"""One statement rule for every way a claim enters: typed `intent:` lines, `claim add`, import."""
import pytest

from helpers.cli_runner import make_cli
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claim_verbs, claims
from intent_loop.intent.claim_text import build_claim
from intent_loop.intent.prompt_commands import Rejection, parse_prompt

# every boundary str.splitlines() knows except the plain ones a prompt line cannot hold
SEPARATORS = ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("mark", SEPARATORS + ["\n", "\r"])
def test_the_rule_refuses_every_line_boundary(mark):
    assert len(f"a{mark}b".splitlines()) == 2
    with pytest.raises(IntentLoopError) as caught:
        claims.check_statement(f"ship it{mark}push to main")
    assert caught.value.code == ErrorCode.INVALID_STATEMENT


@pytest.mark.parametrize("text", ["", "   ", "\ufeff", "\u3000\ufeff "])
def test_the_rule_refuses_what_guard_calls_blank(text):
    with pytest.raises(IntentLoopError) as caught:
        claims.check_statement(text)
    assert caught.value.code == ErrorCode.INVALID_STATEMENT


def test_the_rule_counts_the_prefix_toward_500():
    claims.check_statement("must: " + "x" * 494)
    with pytest.raises(IntentLoopError) as caught:
        build_claim("must", "x" * 495)
    assert caught.value.code == ErrorCode.INVALID_STATEMENT


@pytest.mark.parametrize("mark", SEPARATORS)
def test_typed_claim_add_and_import_agree(tmp_path, mark):
    """The drift this rule closed: an imported claim could hold U+2028, a typed one could not."""
    typed = parse_prompt(f"intent: must ship it{mark}push to main")
    assert isinstance(typed[0], Rejection) and typed[0].code == ErrorCode.INVALID_STATEMENT
    cli = make_cli(tmp_path)
    added = cli.json("claim", "add", "must", f"ship it{mark}push to main", expect=1)
    assert added["error"]["code"] == ErrorCode.INVALID_STATEMENT


def test_grammar_prefixes_are_the_claim_field_prefixes():
    """One prefix vocabulary: what the grammar writes is what views and the projection read."""
    written = {prefix for _facet, _scope, prefix in claim_verbs.CLAIM_SPECS.values() if prefix}
    assert written == set(claims.FIELD_PREFIXES)
    assert set(claim_verbs.PREFIX_VERBS) == set(claims.FIELD_PREFIXES)


def test_provider_files_only_known_prefixes():
    from intent_loop.guard import provider

    assert set(provider._LIST_FIELDS) <= set(claims.FIELD_PREFIXES)


UNSAFE = ["\x1b", "\x07", "\x08", "\x00", "\x7f", "\x9b", "\u061c", "\u200e", "\u200f", "\u202a", "\u202e",
          "\u2066", "\u2069"]


@pytest.mark.parametrize("mark", UNSAFE, ids=lambda m: f"U+{ord(m):04X}")
def test_control_and_bidi_characters_are_invalid_text_on_every_path(tmp_path, mark):
    """Issue 14: ESC, BEL, BS, NUL, DEL, C1 and the bidi marks and overrides, refused by typing,
    claim add, import and labels alike."""
    with pytest.raises(IntentLoopError) as caught:
        claims.check_statement(f"ship it {mark} now")
    assert caught.value.code == ErrorCode.INVALID_TEXT
    typed = parse_prompt(f"intent: must ship it {mark} now")
    assert isinstance(typed[0], Rejection) and typed[0].code == ErrorCode.INVALID_TEXT
    label = parse_prompt(f"intent: new release {mark} work")
    assert isinstance(label[0], Rejection) and label[0].code == ErrorCode.INVALID_TEXT
    cli = make_cli(tmp_path)
    added = cli.json("claim", "add", "must", f"ship it {mark} now", expect=1)
    assert added["error"]["code"] == ErrorCode.INVALID_TEXT


def test_a_typed_tab_becomes_a_space():
    (command,) = parse_prompt("intent: must keep\ttests green")
    assert not isinstance(command, Rejection) and command.statement == "must: keep tests green"


def test_text_stored_before_the_rule_is_escaped_on_the_terminal(tmp_path):
    """A claim holding ESC written by an older build (sealed here directly) is shown escaped by
    `show`: it can neither retitle the terminal nor clear it, and --json stays valid JSON."""
    import json
    import time

    from intent_loop.intent import tasks
    from intent_loop.intent.state import REDUCER
    from intent_loop.storage.timestamps import format_utc
    from intent_loop.storage.transaction import mutate

    cli = make_cli(tmp_path)
    cli.json("claim", "add", "goal", "ship", "it")
    project = cli.project()

    def plan(state):
        the_plan = tasks.Plan(state, now=format_utc(time.time()))
        task_id = state["last_change"]["task_id"]
        claim = {"claim_id": "0b0b0b0b-0000-4000-8000-000000000001", "statement": "must: evil \x1b]0;pwned\x07\u202e",
                 "role": "user", "epistemic_status": "explicit", "scope": "task", "facets": ["hard_constraint"],
                 "source_ref": {"kind": "user_event", "event_id": "old"}, "valid_from": the_plan.now,
                 "last_confirmed": the_plan.now, "supersedes": []}
        from intent_loop.storage.ledger import Draft

        return [Draft("claim_added", task_id, "user", {"claim": claim})]

    mutate(project, REDUCER, request_id="old-build", operation="old", params={}, plan=plan,
           deadline=time.monotonic() + 10)
    rc, out, _err = cli("show")
    assert rc == 0 and "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\u001b]0;pwned\\u0007\\u202e" in out
    rc, raw, _err = cli("show", "--json")
    assert "\u202e" not in raw and json.loads(raw)


def test_a_typed_claim_that_is_a_guard_placeholder_is_refused_but_one_quoting_it_is_recorded():
    (refused,) = parse_prompt("intent: must Replace with non-negotiable requirements.")
    assert isinstance(refused, Rejection) and refused.code == ErrorCode.INVALID_STATEMENT
    (quoted,) = parse_prompt("intent: must please replace with non-negotiable requirements. now")
    assert not isinstance(quoted, Rejection)

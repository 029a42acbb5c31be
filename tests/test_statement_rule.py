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

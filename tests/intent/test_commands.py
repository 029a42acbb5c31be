"""The `intent:` command grammar: detection, parsing, claim building and their inverses."""
import importlib
import itertools
import sys
import time
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers.imports import costly_modules_loaded
from intent_loop.errors import ErrorCode, IntentLoopError
from intent_loop.intent import claims
from intent_loop.intent.claim_text import build_claim, split_sources
from intent_loop.intent.claim_verbs import CLAIM_VERBS, HELP_TEXT, MANAGE_VERBS, verb_for_claim
from intent_loop.intent.claims import split_prefix
from intent_loop.intent.prompt_commands import Command, Rejection, parse_prompt
from intent_loop.intent.prompt_scan import has_command

ROOT = Path(__file__).resolve().parents[2]
FAKE_GITHUB_TOKEN = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # 36 alphanumerics after ghp_
assert len(FAKE_GITHUB_TOKEN) == 40


def _stub_redact_module():
    """Stands in for intent_loop.redaction.redact only while that sibling module has not landed."""
    import re

    module = types.ModuleType("intent_loop.redaction.redact")
    module.redact = lambda text: re.sub(r"ghp_[A-Za-z0-9]{36}", "[REDACTED:github_token]", text)
    return module


def _stub_rules_module():
    """Stands in for intent_loop.intent.rule_grammar only while that sibling module has not landed."""
    module = types.ModuleType("intent_loop.intent.rule_grammar")
    module.EVIDENCE_SOURCES = ("file", "command", "test", "api", "database", "real_page", "release", "user")
    actions = ("read", "write", "write_workspace", "delete", "destructive", "install_local", "network",
               "publish", "external", "external_side_effect", "unknown")

    def rule_error(text):
        head, colon, value = text.strip().partition(":")
        squeezed = "".join(c for c in head.lower() if c not in " -_")
        if not colon or squeezed not in ("action", "actions", "tool", "tools", "commandprefix"):
            return None
        if head.lower() not in ("action", "tool", "command-prefix"):
            return f"near-miss rule prefix '{head}:'"
        if not value.strip():
            return f"rule '{head}:' has an empty value"
        return None if head.lower() != "action" or value in actions else f"unknown action '{value}'"

    module.rule_error = rule_error
    module.strip_guard_space = lambda text: text.strip().strip("\ufeff").strip()
    return module


@pytest.fixture(autouse=True, scope="module")
def sibling_modules():
    """Use the real redact/rules modules; fall back to stubs only when one is not written yet."""
    with pytest.MonkeyPatch.context() as patch:
        for name, make_stub in (("intent_loop.redaction.redact", _stub_redact_module),
                                ("intent_loop.intent.rule_grammar", _stub_rules_module)):
            try:
                importlib.import_module(name)
            except ImportError:
                patch.setitem(sys.modules, name, make_stub())
        yield


def claim(verb, facet, statement, scope="task"):
    return ("claim", verb, facet, scope, statement)


def done(statement):
    return claim("done-when", "success_signal", statement)


def manage(verb, arg=None, text=None):
    return ("manage", verb, arg, text)


def reject(code, verb=None):
    return ("reject", verb, code)


PROSE = None
UUID = "1a2b3c4d-5e6f-4a0b-8c9d-0e1f2a3b4c5d"

LINE_CASES = [
    # every claim verb: facet, scope and stored statement
    ("intent: goal ship the login page", claim("goal", "outcome", "ship the login page")),
    ("intent: object the billing API", claim("object", "outcome", "object: the billing API")),
    ("intent: surface repository", claim("surface", "outcome", "surface: repository")),
    ("intent: include src/auth/", claim("include", "hard_constraint", "scope include: src/auth/")),
    ("intent: exclude legacy admin pages", claim("exclude", "hard_constraint", "scope exclude: legacy admin pages")),
    ("intent: must keep the public API stable", claim("must", "hard_constraint", "must: keep the public API stable")),
    ("intent: must-not change the schema", claim("must-not", "hard_constraint", "must not: change the schema")),
    ("intent: allow action:read", claim("allow", "soft_constraint", "allow: action:read")),
    ("intent: allow reading under docs/", claim("allow", "soft_constraint", "allow: reading under docs/")),
    ("intent: ask command-prefix:git push", claim("ask", "hard_constraint", "ask: command-prefix:git push")),
    ("intent: ask before deleting branches", claim("ask", "hard_constraint", "ask: before deleting branches")),
    ("intent: forbid tool:web_search", claim("forbid", "hard_constraint", "forbid: tool:web_search")),
    ("intent: forbid action:destructive", claim("forbid", "hard_constraint", "forbid: action:destructive")),
    ("intent: must-not command-prefix:rm -rf", claim("must-not", "hard_constraint", "must not: command-prefix:rm -rf")),
    ("intent: done-when the login tests pass", done("done when: the login tests pass")),
    ("intent: done-when tests pass (sources: test, command)", done("done when: tests pass (sources: test, command)")),
    ("intent: done-when docs build(sources:file,test)", done("done when: docs build (sources: file, test)")),
    ("intent: done-when ok (sources: test, test, file, test)", done("done when: ok (sources: test, file)")),
    ("intent: done-when ok ( Sources : real_page )", done("done when: ok (sources: real_page)")),
    ("intent: done-when the page renders (all browsers)", done("done when: the page renders (all browsers)")),
    ("intent: prefer small commits", claim("prefer", "soft_constraint", "small commits")),
    ("intent: tradeoff speed over polish", claim("tradeoff", "tradeoff", "speed over polish")),
    ("intent: always answer in English", claim("always", "soft_constraint", "answer in English", scope="long_term")),
    # two-word spellings of the hyphenated verbs
    ("intent: must not touch production", claim("must-not", "hard_constraint", "must not: touch production")),
    ("intent: MUST NOT touch production", claim("must-not", "hard_constraint", "must not: touch production")),
    ("intent: must notify the owner", claim("must", "hard_constraint", "must: notify the owner")),
    ("intent: done when CI is green", done("done when: CI is green")),
    # case, whitespace and the colon
    ("INTENT: GOAL Ship It", claim("goal", "outcome", "Ship It")),
    ("Intent: Must-Not Delete Files", claim("must-not", "hard_constraint", "must not: Delete Files")),
    ("iNtEnT: pReFeR tabs", claim("prefer", "soft_constraint", "tabs")),
    ("   intent: goal indented by spaces", claim("goal", "outcome", "indented by spaces")),
    ("\tintent: goal indented by a tab", claim("goal", "outcome", "indented by a tab")),
    (" \t intent:   goal    inner  spacing kept  ", claim("goal", "outcome", "inner  spacing kept")),
    ("intent:goal no space after the colon", claim("goal", "outcome", "no space after the colon")),
    ("intent:\tgoal\ttabs around the verb", claim("goal", "outcome", "tabs around the verb")),
    ("intent: goal explain what intent: means", claim("goal", "outcome", "explain what intent: means")),
    ("intent: goal objective: faster builds", claim("goal", "outcome", "objective: faster builds")),
    ("intent: prefer objects: plain dicts", claim("prefer", "soft_constraint", "objects: plain dicts")),
    ("intent: must must: twice", claim("must", "hard_constraint", "must: must: twice")),
    # the 500-character limit counts the field prefix
    ("intent: must " + "a" * 494, claim("must", "hard_constraint", "must: " + "a" * 494)),
    ("intent: must " + "a" * 495, reject(ErrorCode.INVALID_STATEMENT, "must")),
    ("intent: goal " + "a" * 500, claim("goal", "outcome", "a" * 500)),
    ("intent: goal " + "a" * 501, reject(ErrorCode.INVALID_STATEMENT, "goal")),
    ("intent: always " + "a" * 501, reject(ErrorCode.INVALID_STATEMENT, "always")),
    ("intent: include " + "a" * 485, claim("include", "hard_constraint", "scope include: " + "a" * 485)),
    ("intent: include " + "a" * 486, reject(ErrorCode.INVALID_STATEMENT, "include")),
    ("intent: done-when " + "a" * 473 + " (sources: test)", done("done when: " + "a" * 473 + " (sources: test)")),
    ("intent: done-when " + "a" * 474 + " (sources: test)", reject(ErrorCode.INVALID_STATEMENT, "done-when")),
    ("intent: goal one\u2028two", reject(ErrorCode.INVALID_STATEMENT, "goal")),
    # management verbs, with and without arguments
    ("intent: show", manage("show")),
    ("intent: SHOW", manage("show")),
    ("intent: show all", reject(ErrorCode.INVALID_ARGUMENT, "show")),
    ("intent: help", manage("help")),
    ("intent: help me", reject(ErrorCode.INVALID_ARGUMENT, "help")),
    ("intent: new", manage("new")),
    ("intent: new   ", manage("new")),
    ("intent: new Login rework", manage("new", arg="Login rework")),
    ("intent: new " + "x" * 80, manage("new", arg="x" * 80)),
    ("intent: new " + "x" * 81, reject(ErrorCode.INVALID_ARGUMENT, "new")),
    ("intent: resume", manage("resume")),
    ("intent: resume please", reject(ErrorCode.INVALID_ARGUMENT, "resume")),
    ("intent: drop 1a2b3c4d", manage("drop", arg="1a2b3c4d")),
    ("intent: drop 1A2B3C4D", manage("drop", arg="1a2b3c4d")),
    ("intent: drop 1a2b", manage("drop", arg="1a2b")),
    ("intent: drop " + UUID, manage("drop", arg=UUID)),
    ("intent: drop 1a2", reject(ErrorCode.INVALID_ARGUMENT, "drop")),
    ("intent: drop " + UUID + "0", reject(ErrorCode.INVALID_ARGUMENT, "drop")),
    ("intent: drop xyz12345", reject(ErrorCode.INVALID_ARGUMENT, "drop")),
    ("intent: drop -1a2b3c4", reject(ErrorCode.INVALID_ARGUMENT, "drop")),
    ("intent: drop 1a2b3c4d because wrong", reject(ErrorCode.INVALID_ARGUMENT, "drop")),
    ("intent: drop", reject(ErrorCode.EMPTY_TEXT, "drop")),
    ("intent: replace 1a2b3c4d  keep the API stable  ", manage("replace", arg="1a2b3c4d", text="keep the API stable")),
    ("intent: replace 1A2B3C4D action:read", manage("replace", arg="1a2b3c4d", text="action:read")),
    ("intent: replace 1a2b3c4d", reject(ErrorCode.EMPTY_TEXT, "replace")),
    ("intent: replace", reject(ErrorCode.EMPTY_TEXT, "replace")),
    ("intent: replace the goal with tests", reject(ErrorCode.INVALID_ARGUMENT, "replace")),
    ("intent: private", manage("private")),
    ("intent: private please", reject(ErrorCode.INVALID_ARGUMENT, "private")),
    ("intent: off", manage("off")),
    ("intent: off for now", reject(ErrorCode.INVALID_ARGUMENT, "off")),
    ("intent: on", manage("on")),
    ("intent: ON", manage("on")),
    # unknown or missing verbs
    ("intent: goals ship it", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent: mustnot push", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent: must_not push", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent: goal: ship it", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent: must not: push", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent: done tests pass", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent: dance wildly", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent:", reject(ErrorCode.UNKNOWN_VERB)),
    ("intent:   \t ", reject(ErrorCode.UNKNOWN_VERB)),
    # a verb with nothing after it
    ("intent: goal", reject(ErrorCode.EMPTY_TEXT, "goal")),
    ("intent: object   ", reject(ErrorCode.EMPTY_TEXT, "object")),
    ("intent: surface", reject(ErrorCode.EMPTY_TEXT, "surface")),
    ("intent: include", reject(ErrorCode.EMPTY_TEXT, "include")),
    ("intent: exclude", reject(ErrorCode.EMPTY_TEXT, "exclude")),
    ("intent: must", reject(ErrorCode.EMPTY_TEXT, "must")),
    ("intent: must-not", reject(ErrorCode.EMPTY_TEXT, "must-not")),
    ("intent: must not", reject(ErrorCode.EMPTY_TEXT, "must-not")),
    ("intent: allow \t", reject(ErrorCode.EMPTY_TEXT, "allow")),
    ("intent: ask", reject(ErrorCode.EMPTY_TEXT, "ask")),
    ("intent: forbid", reject(ErrorCode.EMPTY_TEXT, "forbid")),
    ("intent: done-when", reject(ErrorCode.EMPTY_TEXT, "done-when")),
    ("intent: done-when (sources: test)", reject(ErrorCode.EMPTY_TEXT, "done-when")),
    ("intent: prefer", reject(ErrorCode.EMPTY_TEXT, "prefer")),
    ("intent: tradeoff", reject(ErrorCode.EMPTY_TEXT, "tradeoff")),
    ("intent: always", reject(ErrorCode.EMPTY_TEXT, "always")),
    ("intent: goal \ufeff", reject(ErrorCode.EMPTY_TEXT, "goal")),
    # reserved prefixes written with other case or spacing
    ("intent: goal Must Not: push", reject(ErrorCode.RESERVED_PREFIX, "goal")),
    ("intent: prefer scope   include: src", reject(ErrorCode.RESERVED_PREFIX, "prefer")),
    ("intent: always object : the API", reject(ErrorCode.RESERVED_PREFIX, "always")),
    # evidence sources
    ("intent: done-when ok (sources: File)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources: TEST)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources: )", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources:)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources: file, disk)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources: file,, test)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources: file test)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (source: file)", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    ("intent: done-when ok (sources: test) and docs", reject(ErrorCode.INVALID_SOURCE, "done-when")),
    # structured rules and their near misses
    ("intent: forbid Tools: no web", reject(ErrorCode.RULE_SYNTAX, "forbid")),
    ("intent: allow actions: read", reject(ErrorCode.RULE_SYNTAX, "allow")),
    ("intent: ask action : read", reject(ErrorCode.RULE_SYNTAX, "ask")),
    ("intent: must-not command prefix: git push", reject(ErrorCode.RULE_SYNTAX, "must-not")),
    ("intent: must not command_prefix:rm", reject(ErrorCode.RULE_SYNTAX, "must-not")),
    ("intent: forbid commandprefix:rm", reject(ErrorCode.RULE_SYNTAX, "forbid")),
    ("intent: allow action:fly", reject(ErrorCode.RULE_SYNTAX, "allow")),
    ("intent: ask tool:", reject(ErrorCode.RULE_SYNTAX, "ask")),
    ("intent: forbid TOOLS:web", reject(ErrorCode.RULE_SYNTAX, "forbid")),
    # prose: no command
    ("my intent: is unclear", PROSE),
    ("intentional: x", PROSE),
    ("intents: goal x", PROSE),
    ("intent : goal x", PROSE),
    ("intent goal x", PROSE),
    ("the intent: goal x", PROSE),
    ("# intent: goal x", PROSE),
    ("> intent: goal x", PROSE),
    ("\u00a0intent: goal x", PROSE),
    ("", PROSE),
]


def _outcome(entry):
    if isinstance(entry, Rejection):
        return ("reject", entry.verb, entry.code)
    if entry.kind == "claim":
        return ("claim", entry.verb, entry.facet, entry.scope, entry.statement)
    return ("manage", entry.verb, entry.arg, entry.text)


def test_line_table_is_large_enough():
    assert len(LINE_CASES) >= 80


@pytest.mark.parametrize(("line", "expected"), LINE_CASES, ids=[repr(line[:48]) for line, _ in LINE_CASES])
def test_parse_line(line, expected):
    parsed = parse_prompt(line)
    assert [_outcome(entry) for entry in parsed] == ([] if expected is None else [expected])
    assert has_command(line) == (expected is not None)
    for entry in parsed:
        assert entry.line == 1
        if isinstance(entry, Rejection):
            assert entry.reason and isinstance(entry.reason, str)


@pytest.mark.parametrize(("verb", "prefix"), list(itertools.product(
    ("goal", "prefer", "tradeoff", "always"), claims.FIELD_PREFIXES)))
def test_reserved_prefix_rejected_on_unprefixed_verbs(verb, prefix):
    [entry] = parse_prompt(f"intent: {verb}   {prefix}: some text")
    assert (entry.code, entry.verb) == (ErrorCode.RESERVED_PREFIX, verb)
    [upper] = parse_prompt(f"intent: {verb} {prefix.upper()}: some text")
    assert upper.code == ErrorCode.RESERVED_PREFIX


def test_reserved_prefixes_are_the_issue_list():
    assert claims.FIELD_PREFIXES == (
        "object", "surface", "scope include", "scope exclude", "must", "must not", "allow", "ask", "forbid",
        "done when")


def test_multi_line_prompt_mixes_prose_and_commands_with_line_numbers():
    prompt = (
        "Please fix the login bug.\n"
        "intent: goal fix login\r\n"
        "some prose that says intent: not this\r"
        "  intent: must-not touch prod\n"
        "\n"
        "\tINTENT: bogus\n"
        "intent: drop 1a2b3c4d\r\n"
        "thanks"
    )
    parsed = parse_prompt(prompt)
    assert [entry.line for entry in parsed] == [2, 4, 6, 7]
    assert [type(entry) for entry in parsed] == [Command, Command, Rejection, Command]
    assert parsed[0].statement == "fix login"
    assert parsed[1].statement == "must not: touch prod"
    assert parsed[2].code == ErrorCode.UNKNOWN_VERB and parsed[2].verb is None
    assert parsed[3].arg == "1a2b3c4d"


def test_only_cr_and_lf_end_lines():
    assert parse_prompt("prose\u2028intent: goal x") == []
    assert parse_prompt("prose\x85intent: goal x") == []
    assert parse_prompt("prose\x0bintent: goal x") == []
    assert [entry.line for entry in parse_prompt("a\r\rintent: goal x\n\r\nintent: show")] == [3, 5]


def test_secret_is_redacted_in_statement():
    [entry] = parse_prompt(f"intent: goal push with {FAKE_GITHUB_TOKEN} then stop")
    assert FAKE_GITHUB_TOKEN not in entry.statement
    assert "[REDACTED:" in entry.statement
    assert entry.statement.startswith("push with [REDACTED:")


def test_redaction_happens_before_the_length_check():
    from intent_loop.redaction.redact import redact

    marker = redact(FAKE_GITHUB_TOKEN)
    filler = "b" * (500 - len("must: ") - 1 - len(marker))
    raw_statement = f"must: {filler} {FAKE_GITHUB_TOKEN}"
    assert len(raw_statement) > 500
    [entry] = parse_prompt(f"intent: must {filler} {FAKE_GITHUB_TOKEN}")
    assert isinstance(entry, Command)
    assert len(entry.statement) == 500 and FAKE_GITHUB_TOKEN not in entry.statement
    [too_long] = parse_prompt(f"intent: must {filler}b {FAKE_GITHUB_TOKEN}")
    assert too_long.code == ErrorCode.INVALID_STATEMENT


def test_secret_in_label_is_redacted():
    [entry] = parse_prompt(f"intent: new fix {FAKE_GITHUB_TOKEN}")
    assert FAKE_GITHUB_TOKEN not in entry.arg and "[REDACTED:" in entry.arg


def test_rejection_reason_never_echoes_a_secret():
    [unknown] = parse_prompt(f"intent: {FAKE_GITHUB_TOKEN} goal")
    assert unknown.code == ErrorCode.UNKNOWN_VERB
    assert FAKE_GITHUB_TOKEN not in unknown.reason
    [bad_id] = parse_prompt(f"intent: drop {FAKE_GITHUB_TOKEN}")
    assert bad_id.code == ErrorCode.INVALID_ARGUMENT
    assert FAKE_GITHUB_TOKEN not in bad_id.reason


@pytest.mark.parametrize(("typed", "suggested"), [
    ("goals", "goal"), ("mustnot", "must-not"), ("must_not", "must-not"), ("gaol", "goal"), ("done", "done-when"),
    ("donewhen", "done-when"), ("forbidd", "forbid"), ("shwo", "show"), ("privat", "private"), ("goal:", "goal"),
    ("must not:", "must-not"), ("excl", "exclude"),
])
def test_unknown_verb_suggests_the_closest(typed, suggested):
    [entry] = parse_prompt(f"intent: {typed} something")
    assert entry.code == ErrorCode.UNKNOWN_VERB
    assert f"did you mean `{suggested}`" in entry.reason


def test_unknown_verb_without_a_close_match_points_to_help():
    [entry] = parse_prompt("intent: zzzzzz something")
    assert "did you mean" not in entry.reason and "intent: help" in entry.reason


def test_replace_keeps_raw_trimmed_text_for_the_caller():
    [entry] = parse_prompt(f"intent: replace 1a2b3c4d   new {FAKE_GITHUB_TOKEN} text  ")
    assert entry.kind == "manage" and entry.text == f"new {FAKE_GITHUB_TOKEN} text"
    assert entry.facet is entry.scope is entry.statement is None


def test_command_attributes():
    [goal, show, new] = parse_prompt("intent: goal x\nintent: show\nintent: new label")
    assert (goal.line, goal.verb, goal.kind) == (1, "goal", "claim")
    assert (goal.facet, goal.scope, goal.statement) == ("outcome", "task", "x")
    assert goal.arg is None and goal.text is None
    assert (show.kind, show.arg, show.text, show.statement) == ("manage", None, None, None)
    assert new.arg == "label"
    assert goal == Command(1, "goal", "claim", facet="outcome", scope="task", statement="x")
    [rejection] = parse_prompt("intent: x")
    assert "goal" in repr(goal) and "UNKNOWN_VERB" in repr(rejection)
    assert rejection.kind == "rejection" and (rejection.line, rejection.verb) == (1, None)


@pytest.mark.parametrize("verb", CLAIM_VERBS)
def test_round_trip_verb_for_claim(verb):
    text = "action:read" if verb in ("allow", "ask", "forbid", "must-not") else "keep the API stable"
    facet, scope, statement = build_claim(verb, text)
    assert verb_for_claim(statement, [facet], scope) == verb
    if verb == "done-when":
        facet, scope, statement = build_claim(verb, "tests pass (sources: test)")
        assert verb_for_claim(statement, [facet], scope) == verb


@pytest.mark.parametrize(("facets", "scope", "verb"), [
    (["hard_constraint"], "task", "must"),
    (["success_signal"], "task", "done-when"),
    (["soft_constraint"], "project", "prefer"),
    (["outcome", "hard_constraint"], "task", "goal"),
    (["hard_constraint"], "long_term", "always"),
])
def test_verb_for_unprefixed_claims(facets, scope, verb):
    assert verb_for_claim("plain text", facets, scope) == verb


def test_verb_for_claim_without_a_matching_verb():
    with pytest.raises(IntentLoopError) as raised:
        verb_for_claim("the build is flaky", ["failure_signal"], "task")
    assert raised.value.code == ErrorCode.INVALID_CLAIM


@pytest.mark.parametrize(("verb", "text", "code"), [
    ("show", "x", ErrorCode.UNKNOWN_VERB),
    ("goals", "x", ErrorCode.UNKNOWN_VERB),
    ("goal", "   ", ErrorCode.EMPTY_TEXT),
    ("goal", "one\ntwo", ErrorCode.INVALID_STATEMENT),
    ("goal", "one\rtwo", ErrorCode.INVALID_STATEMENT),
    ("goal", 5, ErrorCode.INVALID_STATEMENT),
    ("prefer", "forbid: x", ErrorCode.RESERVED_PREFIX),
    ("forbid", "tools: x", ErrorCode.RULE_SYNTAX),
    ("done-when", "x (sources: nope)", ErrorCode.INVALID_SOURCE),
])
def test_build_claim_errors(verb, text, code):
    with pytest.raises(IntentLoopError) as raised:
        build_claim(verb, text)
    assert raised.value.code == code and raised.value.message


def test_build_claim_for_the_terminal_is_case_insensitive_and_trims():
    assert build_claim("Must-Not", "  push to main \n") == ("hard_constraint", "task", "must not: push to main")
    assert build_claim("ALWAYS", "reply tersely") == ("soft_constraint", "long_term", "reply tersely")


@pytest.mark.parametrize(("statement", "expected"), [
    ("must not: push to main", ("must not", "push to main")),
    ("must: keep it", ("must", "keep it")),
    ("scope include: src/", ("scope include", "src/")),
    ("scope exclude: docs/", ("scope exclude", "docs/")),
    ("done when:tests pass", ("done when", "tests pass")),
    ("object:  two spaces", ("object", " two spaces")),
    ("Must: capitalised", (None, "Must: capitalised")),
    ("objective: ship", (None, "objective: ship")),
    ("ship the page", (None, "ship the page")),
])
def test_split_prefix(statement, expected):
    assert split_prefix(statement) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("tests pass (sources: test, file)", ("tests pass", ["test", "file"])),
    ("tests pass", ("tests pass", None)),
    ("renders (all browsers)", ("renders (all browsers)", None)),
    ("x (sources: bogus)", ("x (sources: bogus)", None)),
    ("x (sources: test) more", ("x (sources: test) more", None)),
])
def test_split_sources(value, expected):
    assert split_sources(value) == expected


def test_projection_helpers_invert_build_claim():
    _facet, _scope, statement = build_claim("done-when", "ship it(sources:user,test,user)")
    prefix, value = split_prefix(statement)
    assert prefix == "done when" and split_sources(value) == ("ship it", ["user", "test"])


def test_help_text_lists_every_verb_compactly():
    assert len(HELP_TEXT) <= 1500
    assert not has_command(HELP_TEXT)  # echoing the help back into a prompt records nothing
    words = set(HELP_TEXT.replace("|", " ").split())
    for verb in CLAIM_VERBS + MANAGE_VERBS:
        assert verb in words, verb


def test_verb_tables_follow_the_issue_order():
    assert CLAIM_VERBS == ("goal", "object", "surface", "include", "exclude", "must", "must-not", "allow", "ask",
                           "forbid", "done-when", "prefer", "tradeoff", "always")
    assert MANAGE_VERBS == ("show", "help", "new", "resume", "drop", "replace", "approve", "confirm", "dismiss",
                            "private", "off", "on")


def test_every_management_verb_has_exactly_one_handler_and_no_claim_verb_has_one():
    """The runner dispatches by an explicit {verb: handler} table (issue 26): a verb missing from it
    would quietly become a claim, a claim verb in it would never be recorded."""
    from intent_loop.ops.verb_runner import VerbRunner

    assert set(VerbRunner.MANAGE) == set(MANAGE_VERBS)
    assert not set(VerbRunner.MANAGE) & set(CLAIM_VERBS)
    assert all(callable(handler) and handler.__name__ == "_" + verb for verb, handler in VerbRunner.MANAGE.items())


def test_import_and_parse_stay_off_costly_modules():
    statements = (
        "from intent_loop.intent.prompt_commands import has_command, parse_prompt\n"
        "assert not has_command('plain prose: nothing here')\n"
        "parse_prompt('intent: gaols x\\nintent: show\\nintent: drop 1a2b')"
    )
    costly = ("re", "json", "typing", "enum", "dataclasses", "difflib")
    assert costly_modules_loaded(statements, costly) == []


def test_has_command_is_fast_on_ordinary_prompts():
    prompt = "Refactor the parser: keep it small, and explain the intent of each change.\n" * 150  # ~11 KB
    runs = 200
    started = time.perf_counter()
    for _ in range(runs):
        has_command(prompt)
    assert (time.perf_counter() - started) / runs < 0.001  # measured in microseconds; generous for noisy CI


FRAGMENTS = st.sampled_from([
    "intent:", "INTENT:", "Intent:", "intent", ":", " ", "\t", "\n", "\r", "\r\n", "goal", "must not", "x",
    "\u0130", "\u0131ntent:", "\u2028", "\x85", "\ufeff", "\u00a0", "my ", "drop 1a2b3c4d", "(sources: test)",
    "show", "replace", "new", "\u212a",
])


@settings(max_examples=400, deadline=None)
@given(st.lists(FRAGMENTS | st.text(max_size=4), max_size=24).map("".join))
def test_has_command_agrees_with_parse_prompt(prompt):
    parsed = parse_prompt(prompt)
    assert has_command(prompt) == bool(parsed)
    assert [entry.line for entry in parsed] == sorted({entry.line for entry in parsed})
    for entry in parsed:
        if isinstance(entry, Command) and entry.kind == "claim":
            assert 1 <= len(entry.statement) <= 500
            assert not any(mark in entry.statement for mark in "\n\r\u2028\u2029\x85")


def test_hostile_long_lines_are_rejected_quickly():
    huge = "A" * 3_000_000
    started = time.perf_counter()
    parsed = parse_prompt(f"intent: goal {huge}\nintent: {huge}\nintent: new {huge}\nintent: done-when {'(' * 20_000}")
    assert time.perf_counter() - started < 2.0
    assert [entry.code for entry in parsed] == [
        ErrorCode.INVALID_STATEMENT, ErrorCode.UNKNOWN_VERB, ErrorCode.INVALID_ARGUMENT, ErrorCode.INVALID_STATEMENT]
    assert all(huge[:100] not in entry.reason for entry in parsed)

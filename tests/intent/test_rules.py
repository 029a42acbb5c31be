"""The structured-rule grammar: what Guard would treat as a valid, malformed or prose rule."""

import pytest

from helpers.imports import costly_modules_loaded
from intent_loop.intent.rule_grammar import (
    ACTIONS,
    EVIDENCE_SOURCES,
    GUARD_WHITESPACE,
    is_blank,
    rule_error,
    strip_guard_space,
)

# (rule text, None when accepted, else a fragment the reason must contain: what to write instead)
RULE_TABLE = [
    # valid structured rules, any case for the name, value kept as typed
    ("action:read", None),
    ("action:external_side_effect", None),
    ("Action:write_workspace", None),
    ("ACTION:publish", None),
    ("  action:delete  ", None),
    ("tool:web_fetch", None),
    ("TOOL:shell", None),
    ("tool: web_fetch", None),
    ("command-prefix:git push --force", None),
    ("Command-Prefix:rm -rf", None),
    ("tool::colon-led value", None),
    # natural language: Guard only inspects items that start with a rule name and a colon
    ("never push to main", None),
    ("use the action button", None),
    ("Never rename API routes", None),
    ("tool use is fine: anything local", None),
    ("Actionable items: none", None),
    ("tools are fine", None),
    ("tool-call: keep them short", None),
    ("- tool: listed like a bullet", None),
    ("action=read", None),
    ("action\uff1aread", None),  # fullwidth colon is not ':'
    # empty values
    ("action:", "action:<action>"),
    ("tool:", "tool:<name>"),
    ("tool:   ", "tool:<name>"),
    ("command-prefix:\u3000", "command-prefix:<prefix>"),
    ("Tool:\x1c", "tool:<name>"),  # Python strips U+001C; conservative though JS keeps it
    # unknown or mis-written actions
    ("action:deploy", "read, write"),
    ("action:read, write", "read, write"),
    ("action::read", "read, write"),
    ("action:Read", "action:read"),
    ("action: read", "action:read"),
    ("action:\twrite", "action:write"),
    # near misses
    ("actions:read", "action:<action>"),
    ("Actions: read only", "action:<action>"),
    ("tools:web_fetch", "tool:<name>"),
    ("Tools: no web", "tool:<name>"),
    ("TOOLS:none", "tool:<name>"),
    ("command prefix:git push", "command-prefix:<prefix>"),
    ("command_prefix:git push", "command-prefix:<prefix>"),
    ("commandprefix:git push", "command-prefix:<prefix>"),
    ("CommandPrefix:git", "command-prefix:<prefix>"),
    ("command  prefix:git", "command-prefix:<prefix>"),
    ("command-prefixes:git", "command-prefix:<prefix>"),
    ("toolſ:web", "tool:<name>"),  # long s case-folds to s
    # valid or near-miss names with space before the colon
    ("action :read", "action:<action>"),
    ("action\t:read", "action:<action>"),
    ("tool  :web_fetch", "tool:<name>"),
    ("Tools :web_fetch", "tool:<name>"),
    ("command-prefix :git", "command-prefix:<prefix>"),
    ("actions\u00a0:read", "action:<action>"),
    # blank
    ("", "empty rule"),
    (" \ufeff ", "empty rule"),
]


@pytest.mark.parametrize(("text", "fragment"), RULE_TABLE)
def test_rule_error_matches_table(text, fragment):
    reason = rule_error(text)
    if fragment is None:
        assert reason is None
    else:
        assert reason is not None and fragment in reason


def test_rule_table_is_large_enough():
    assert len(RULE_TABLE) >= 30


@pytest.mark.parametrize("action", ACTIONS)
def test_every_known_action_is_accepted(action):
    assert rule_error(f"action:{action}") is None


def test_vocabularies_are_guards():
    assert EVIDENCE_SOURCES == ("file", "command", "test", "api", "database", "real_page", "release", "user")
    assert len(ACTIONS) == 11 and "external_side_effect" in ACTIONS


def test_whitespace_set_is_union_of_js_trim_and_python_strip():
    python_space = {chr(code) for code in range(0x110000) if chr(code).isspace()}
    js_only = {"\ufeff"}
    assert set(GUARD_WHITESPACE) == python_space | js_only


@pytest.mark.parametrize("text", ["\ufeff", "\x1f", "\x85", "\u2028", "\u205f \t"])
def test_is_blank_with_either_languages_whitespace(text):
    assert is_blank(text) and strip_guard_space(f"{text}x{text}") == "x"


def test_rules_module_imports_nothing_heavy():
    costly = ("re", "json", "typing", "dataclasses", "enum", "datetime")
    assert costly_modules_loaded("import intent_loop.intent.rule_grammar", costly) == []

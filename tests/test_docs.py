"""The README stays true to the code: every command, verb, option and error code is documented."""
import re
from pathlib import Path

import pytest

from intent_loop.cli.main import build_parser
from intent_loop.intent.prompt_commands import CLAIM_VERBS, MANAGE_VERBS
from intent_loop.errors import ErrorCode
from helpers.imports import costly_modules_loaded

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
LIB = ROOT / "lib" / "intent_loop"


def _subcommands(parser, prefix=()):
    """(path of words, parser) for every command and subcommand of the CLI."""
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _subcommands(sub, prefix + (name,))


def test_every_error_code_is_documented():
    codes = [value for name, value in vars(ErrorCode).items() if name.isupper()]
    missing = [code for code in codes if f"`{code}`" not in README]
    assert not missing


def test_every_intent_verb_is_documented():
    missing = [verb for verb in CLAIM_VERBS + MANAGE_VERBS if f"`intent: {verb}" not in README]
    assert not missing


def test_every_cli_command_is_documented():
    commands = [" ".join(path) for path, _ in _subcommands(build_parser())]
    assert len(commands) >= 20
    missing = [c for c in commands if f"`{c}" not in README and not re.search(rf"/ `{re.escape(c.split()[-1])}", README)]
    assert not missing


def test_every_cli_option_is_documented():
    missing = []
    for path, sub in _subcommands(build_parser()):
        for action in sub._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help" and option not in README:
                    missing.append(f"{' '.join(path)} {option}")
    assert not missing


def test_every_build_command_is_documented():
    source = (ROOT / "build.py").read_text()
    names = re.findall(r'^\s+"([a-z-]+)": cmd_', source, re.M)
    assert names
    assert all(f"python3 build.py {n}" in README or n == "build" for n in names)


def test_every_event_type_is_documented():
    state_source = (LIB / "intent" / "state.py").read_text()
    handled = re.findall(r"def _on_([a-z_]+)\(", state_source)
    assert handled
    assert all(f"`{event}`" in README for event in handled)


def test_hook_read_path_keeps_heavy_modules_out():
    """A prompt without commands must not load re, json, uuid, enum, datetime, typing, subprocess."""
    costly = ("re", "json", "uuid", "enum", "datetime", "typing", "subprocess", "dataclasses", "zipfile",
              "signal", "orjson")
    assert costly_modules_loaded("import hooks.session_start, hooks.user_prompt, hooks.stop", costly) == []
"""The README stays true to the code: every command, verb, option and error code is documented."""
import ast
import re
from pathlib import Path

import pytest

from intent_loop.cli import build_parser
from intent_loop.commands import CLAIM_VERBS, MANAGE_VERBS
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
    state_source = (LIB / "state.py").read_text()
    handled = re.findall(r"def _on_([a-z_]+)\(", state_source)
    assert handled
    assert all(f"`{event}`" in README for event in handled)


# -- the architecture the layout promises --------------------------------------------------
LAYERS = {  # a module may import only from its own layer or lower ones
    "errors": 0, "_os": 0, "_platform": 0, "_data_root": 0, "canonical": 1, "deferred": 3, "paths": 2, "atomic": 2, "lock": 3,
    "checkpoint": 3, "ledger": 4, "transaction": 5, "claims": 5, "rules": 5, "redact": 1, "commands": 6, "prompt_scan": 0, "state": 6,
    "guard_contract": 6, "tasks": 7, "views": 7, "private": 7, "session_view": 8, "request_index": 4, "graph": 8, "provider": 8, "deletion": 9,
    "command_runner": 9, "migration": 9, "runtime_cache": 9, "demo_session": 9, "hook_runtime": 10, "hook_handlers": 11,
}


def _intent_loop_imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("intent_loop"):
            parts = node.module.split(".")
            if len(parts) == 1:
                yield from (alias.name for alias in node.names)
            else:
                yield parts[1]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("intent_loop."):
                    yield alias.name.split(".")[1]


@pytest.mark.parametrize("module", sorted(LAYERS))
def test_dependencies_point_down(module):
    path = LIB / f"{module}.py"
    if not path.exists():
        pytest.skip(f"{module}.py not present")
    upward = [dep for dep in _intent_loop_imports(path) if dep in LAYERS and LAYERS[dep] > LAYERS[module]]
    assert not upward, f"{module} imports higher layers {upward}"


def test_every_library_module_has_a_layer():
    assert sorted(p.stem for p in LIB.glob("*.py") if p.stem != "__init__") == sorted(LAYERS)


def test_library_never_imports_the_cli_or_hooks():
    for path in LIB.glob("*.py"):
        deps = set(_intent_loop_imports(path))
        assert "cli" not in deps, path.name
        assert "import hooks" not in path.read_text() and "from hooks" not in path.read_text(), path.name


def test_hook_read_path_keeps_heavy_modules_out():
    """A prompt without commands must not load re, json, uuid, enum, datetime, typing, subprocess."""
    costly = ("re", "json", "uuid", "enum", "datetime", "typing", "subprocess", "dataclasses", "zipfile",
              "signal", "orjson")
    assert costly_modules_loaded("import hooks.session_start, hooks.user_prompt, hooks.stop", costly) == []
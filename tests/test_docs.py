"""The docs stay true to the code: README.md plus docs/*.md document every command, verb, option,
event type and error code, every link resolves, and every documented error code is raised by the
library on a path that a test reaches and asserts."""
import ast
import re
from pathlib import Path

from helpers.imports import costly_modules_loaded
from intent_loop.cli.main import build_parser
from intent_loop.errors import ErrorCode
from intent_loop.intent.claim_verbs import CLAIM_VERBS, MANAGE_VERBS

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "intent_loop"
TESTS = ROOT / "tests"
README = ROOT / "README.md"
DOC_FILES = [README, *sorted((ROOT / "docs").glob("*.md"))]
CORPUS = "\n".join(path.read_text() for path in DOC_FILES)
ERRORS_DOC = ROOT / "docs" / "errors.md"
README_MAX_LINES = 180  # issue 10: "about 150 lines", plus issue 21's /clear transcript; the reference lives in docs/

# Codes in the stable set that no code path raises yet, each kept for the open issue that will
# raise it (issue 10: delete a code only if no open issue needs it). A code listed here that the
# library raises fails the test below, so the list cannot go stale; docs/errors.md says the same.
NOT_YET_RAISED = {}

_CODE_WORD = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _subcommands(parser, prefix=()):
    """(path of words, parser) for every command and subcommand of the CLI."""
    for action in parser._actions:
        if action.__class__.__name__ == "_SubParsersAction":
            for name, sub in action.choices.items():
                yield prefix + (name,), sub
                yield from _subcommands(sub, prefix + (name,))


def _all_codes():
    return sorted(value for name, value in vars(ErrorCode).items() if name.isupper())


def _documented_codes():
    """The codes of the table in docs/errors.md (its first column)."""
    return sorted(set(re.findall(r"^\| `([A-Z][A-Z0-9_]+)` \|", ERRORS_DOC.read_text(), re.M)))


# -- code -> docs ------------------------------------------------------------------------------
def test_every_error_code_is_documented():
    missing = [code for code in _all_codes() if f"`{code}`" not in CORPUS]
    assert not missing


def test_every_error_code_has_a_row_in_the_error_table():
    assert sorted(set(_all_codes()) - set(_documented_codes())) == []


def test_every_intent_verb_is_documented():
    missing = [verb for verb in CLAIM_VERBS + MANAGE_VERBS if f"`intent: {verb}" not in CORPUS]
    assert not missing


def test_every_cli_command_is_documented():
    commands = [" ".join(path) for path, _ in _subcommands(build_parser())]
    assert len(commands) >= 20
    missing = [c for c in commands
               if f"`{c}" not in CORPUS and not re.search(rf"/ `{re.escape(c.split()[-1])}", CORPUS)]
    assert not missing


def test_every_cli_option_is_documented():
    missing = []
    for path, sub in _subcommands(build_parser()):
        for action in sub._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help" and option not in CORPUS:
                    missing.append(f"{' '.join(path)} {option}")
    assert not missing


def test_every_build_command_is_documented():
    source = (ROOT / "build.py").read_text()
    names = re.findall(r'^\s+"([a-z-]+)": cmd_', source, re.M)
    assert names
    assert [n for n in names if f"python3 build.py {n}" not in CORPUS and n != "build"] == []


def test_every_event_type_is_documented():
    from intent_loop.intent.event_types import TABLE  # every type the reducer folds (tests/intent/test_event_types.py)

    assert TABLE
    assert [event for event in TABLE if f"`{event}`" not in CORPUS] == []


# -- the docs themselves -----------------------------------------------------------------------
def test_readme_starts_where_users_start():
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES
    text = README.read_text()
    assert text.index("codex plugin marketplace add") < text.index("python3 build.py demo")  # install first
    for command in ("codex plugin add intent-loop@intent-loop", "python3 build.py demo", "python3 build.py test",
                    "install --apply"):
        assert command in README.read_text()


def test_readme_links_every_docs_file():
    text = README.read_text()
    assert [p.name for p in DOC_FILES[1:] if f"(docs/{p.name})" not in text] == []


def test_every_relative_link_points_to_an_existing_file():
    broken = []
    for path in DOC_FILES:
        prose = re.sub(r"```.*?```|`[^`\n]*`", "", path.read_text(), flags=re.S)  # code is not a link
        for target in _LINK.findall(prose):
            if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # a URL or an anchor in the same page
            if not (path.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
    assert broken == []


def test_every_module_path_named_in_the_docs_exists():
    """`lib/...`, `tests/...`, `hooks/...` paths and `intent_loop.x.y` names in backticks exist,
    except the retired names docs/upgrading.md gives as "`old` is (now) `new`"."""
    retired = set(re.findall(r"`(intent_loop(?:\.\w+)+)` is\b", (ROOT / "docs" / "upgrading.md").read_text()))
    missing = []
    for path in DOC_FILES:
        text = path.read_text()
        missing += [f"{path.name}: {name}" for name in re.findall(r"`((?:lib|tests|hooks)/[\w./-]+)`", text)
                    if not (ROOT / name).exists()]
        missing += [f"{path.name}: {name}" for name in re.findall(r"`(intent_loop(?:\.\w+)+)`", text)
                    if name not in retired and not _names_something(name)]
    assert missing == []
    assert retired, "docs/upgrading.md names the module paths issue 10 retired"


def _names_something(dotted):
    """A module or package of lib/, or a top-level name defined in one."""
    parts = dotted.split(".")[1:]
    for cut in range(len(parts), 0, -1):
        base = LIB.joinpath(*parts[:cut])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.exists():
            rest = parts[cut:]
            if not rest:
                return True
            pattern = rf"^(?:def |class )?{re.escape(rest[0])}\b"
            return len(rest) == 1 and re.search(pattern, module.read_text(), re.M) is not None
    return False


# -- docs -> code: every documented error code is raised, and a test asserts it ------------------
def _raised_codes():
    """Codes named as `ErrorCode.<NAME>` in library code other than errors.py (comments excluded)."""
    raised = set()
    for path in LIB.rglob("*.py"):
        if path.name == "errors.py" and path.parent == LIB:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "ErrorCode":
                raised.add(node.attr)
    return raised


def _codes_in(node):
    """Code names a subtree mentions: `ErrorCode.X` or a word in a string constant."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "ErrorCode":
            yield sub.attr
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            yield from _CODE_WORD.findall(sub.value)


def _names_in(node):
    return {sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)}


def _call_name(call):
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _is_raises(call):
    return isinstance(call, ast.Call) and _call_name(call) == "raises"


def _asserting_helpers(trees):
    """Non-test functions that assert on one of their own parameters (`expect_code(code, fn)`,
    `_refused(project, codes=...)`): name -> {parameter name: position in a call}. Passing a code
    in such a parameter asserts it."""
    helpers = {}
    for tree in trees:
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef) and not fn.name.startswith("test_"):
                positional = [a.arg for a in fn.args.args]
                if positional[:1] == ["self"]:
                    positional = positional[1:]
                params = set(positional) | {a.arg for a in fn.args.kwonlyargs}
                used = set()
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assert):
                        used |= _names_in(node.test) & params
                if used:
                    helpers.setdefault(fn.name, {}).update(
                        {name: positional.index(name) if name in positional else None for name in used})
    return helpers


def _helper_arguments(call, asserted_params):
    """The arguments of a helper call that land in the parameters it asserts on."""
    for name, position in asserted_params.items():
        if position is not None and position < len(call.args):
            yield call.args[position]
        yield from (kw.value for kw in call.keywords if kw.arg == name)


def _parametrized_values(fn, assignments):
    """For a test whose asserts use a parametrized argument: the argvalues (module-level tables
    they name included). Only tables whose rows a test really compares count."""
    for deco in fn.decorator_list:
        if isinstance(deco, ast.Call) and _call_name(deco) == "parametrize" and len(deco.args) >= 2:
            names_arg = deco.args[0]
            argnames = set()
            for const in ast.walk(names_arg):
                if isinstance(const, ast.Constant) and isinstance(const.value, str):
                    argnames |= {part.strip() for part in const.value.split(",")}
            asserted = set()
            for node in ast.walk(fn):
                if isinstance(node, ast.Assert):
                    asserted |= _names_in(node.test)
            if argnames & asserted:
                yield deco.args[1]
                for name in _names_in(deco.args[1]):
                    if name in assignments:
                        yield assignments[name]


def _asserted_codes():
    """Code names the tests assert: inside an `assert`, a `pytest.raises(..., match=...)`, a call
    of an asserting helper, or a parametrize table whose argument a test's assert compares."""
    files = [p for p in TESTS.rglob("*.py") if p.name != "test_docs.py" and "__pycache__" not in p.parts]
    trees = {path: ast.parse(path.read_text()) for path in files}
    helpers = _asserting_helpers(trees.values())
    asserted = set()
    for tree in trees.values():
        assignments = {target.id: node.value for node in tree.body if isinstance(node, ast.Assign)
                       for target in node.targets if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assert):
                asserted.update(_codes_in(node.test))
            elif isinstance(node, ast.Call) and _is_raises(node):
                asserted.update(_codes_in(node))
            elif isinstance(node, ast.Call) and _call_name(node) in helpers:
                for argument in _helper_arguments(node, helpers[_call_name(node)]):
                    asserted.update(_codes_in(argument))
            elif isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                for values in _parametrized_values(node, assignments):
                    asserted.update(_codes_in(values))
    return asserted


def test_every_documented_code_is_a_code():
    assert sorted(set(_documented_codes()) - set(_all_codes())) == []


def test_not_yet_raised_lists_only_codes_that_are_really_not_raised():
    assert sorted(set(NOT_YET_RAISED) - set(_all_codes())) == []  # a deleted code leaves the list too
    assert sorted(set(NOT_YET_RAISED) & _raised_codes()) == []
    for code, issue in NOT_YET_RAISED.items():
        assert re.match(r"issue \d+", issue), code
        assert re.search(rf"`{code}`: issue \d+", ERRORS_DOC.read_text()), code


def test_every_documented_code_is_raised_by_the_library():
    expected = set(_documented_codes()) - set(NOT_YET_RAISED)
    assert sorted(expected - _raised_codes()) == []


def test_every_documented_code_is_asserted_by_a_test():
    expected = set(_documented_codes()) - set(NOT_YET_RAISED)
    assert sorted(expected - _asserted_codes()) == []


def test_the_assertion_scan_is_not_blind():
    """The scan finds codes only in asserting contexts: a code merely named in a test is not enough."""
    tree = ast.parse("X = ErrorCode.ALPHA_CODE\n"
                     "def test_a():\n    value = 'BETA_CODE'\n    assert value == 'GAMMA_CODE'\n")
    found = {code for node in ast.walk(tree) if isinstance(node, ast.Assert) for code in _codes_in(node.test)}
    assert found == {"GAMMA_CODE"}


# -- the hook read path --------------------------------------------------------------------------
def test_hook_read_path_keeps_heavy_modules_out():
    """A prompt without commands must not load re, json, uuid, enum, datetime, typing, subprocess."""
    costly = ("re", "json", "uuid", "enum", "datetime", "typing", "subprocess", "dataclasses", "zipfile",
              "signal", "orjson")
    assert costly_modules_loaded("import hooks.session_start, hooks.user_prompt, hooks.stop", costly) == []


def test_every_mcp_tool_is_documented_and_every_documented_tool_exists():
    """Issue 26: docs/mcp.md's table of tools and the server's tools/list agree, both ways."""
    from intent_loop.mcp.tool_table import TOOLS

    documented = re.findall(r"^\| `(intent_[a-z_]+)` \|", (ROOT / "docs" / "mcp.md").read_text(), re.M)
    assert sorted(documented) == sorted(tool["name"] for tool in TOOLS)
    assert len(documented) == len(set(documented))


def test_the_mcp_schemas_take_their_verbs_facets_and_bounds_from_the_claim_rule():
    from intent_loop.intent.claim_verbs import CLAIM_VERBS
    from intent_loop.intent.claims import FACETS, MAX_STATEMENT
    from intent_loop.mcp.tool_table import TOOLS

    explicit = next(t for t in TOOLS if t["name"] == "intent_add_explicit")["inputSchema"]["properties"]
    assert explicit["verb"]["enum"] == list(CLAIM_VERBS)
    assert explicit["facets"]["items"]["enum"] == list(FACETS)
    assert explicit["statement"]["maxLength"] == MAX_STATEMENT


def test_every_mcp_tool_has_exactly_one_handler_in_the_table():
    """Issue 26: the server finds a tool's handler in an explicit table, not by hasattr over modules."""
    from intent_loop.mcp.tool_table import TOOLS
    from intent_loop.mcp.tools import handlers

    table = handlers()
    assert sorted(table) == sorted(tool["name"] for tool in TOOLS)
    assert all(handler.__name__ == name for name, handler in table.items())


def test_each_tools_schema_names_exactly_the_arguments_its_handler_takes():
    """The server checks argument names against the schema before it reads any state; the
    handlers' own checks must agree with it."""
    import inspect

    from intent_loop.mcp.tool_table import TOOLS
    from intent_loop.mcp.tools import _argument_names, handlers

    for tool in TOOLS:
        source = inspect.getsource(handlers()[tool["name"]])
        match = re.search(r"check_names\(call\.args, \(([^)]*)\)\)", source)
        if match is None:  # a handler that builds its list (writes._add) is checked by the server tests
            continue
        named = tuple(re.findall(r'"([a-z_]+)"', match.group(1)))
        assert sorted(named) == sorted(_argument_names(tool["name"])), tool["name"]

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


# -- quoted receipts (issue 35, item 10): every `↳ Hook · intent-loop: ...` line the docs quote is
# one the code can print. The receipt line (hook/prompt_answer.receipt_line) is its items joined by
# `; `, the pinned ones first: Guard news a Stop left, the Guard line (ops/receipts.guard_text, with
# the session's enforcement words after a published contract), the continuity notice
# (hook/command_prompt.continuity_item, intent/continuity.moved_notice), the agent's proposals
# (prompt_answer.proposal_items); then one item per typed line (receipts.OUTCOMES, a rejection as
# `line N rejected ...`) and the extra items hook/ appends. Each form becomes a pattern whose
# placeholders are wildcards, and a quote must be those items in that order.
QUOTED_RECEIPT = re.compile(r"↳ Hook · intent-loop: (.+)$")
_SENTINEL = re.compile("\x00(\\w+)\x00|\x01{8}|987654")
_WILD = {"id": "[0-9a-f]{4,8}", "version": r"\d+", "verb": "[a-z][a-z-]*", "count": r"\d+", "left": r"\d+",
         "any": ".+?"}
_ITEM_WORDS = "(?:(?!; ).)*?"  # a placeholder inside one item: anything but the `; ` between items


def _pattern(text):
    """A text made with sentinels (`\\x00name\\x00`, an 8-char `\\x01` id, the version 987654) as a regex."""
    out, at = [], 0
    for match in _SENTINEL.finditer(text):
        out.append(re.escape(text[at:match.start()]))
        name = match.group(1) or ("version" if match.group(0) == "987654" else "id")
        out.append(_WILD.get(name, _ITEM_WORDS))
        at = match.end()
    return "".join(out) + re.escape(text[at:])


def _template_pattern(template):
    """A str.format template (receipts.OUTCOMES) as a regex, its fields wildcards."""
    import string

    out = []
    for literal, field, _spec, _conv in string.Formatter().parse(template):
        out.append(re.escape(literal))
        if field is not None:
            out.append(_WILD["id"] if field.isdigit() else
                       _WILD.get(field, ".+?" if field == "reason" else _ITEM_WORDS))
    return "".join(out)


def _returned_fstrings(function):
    """Every f-string or string a function returns, its formatted values as wildcards (`.+?`)."""
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    patterns = []
    for node in ast.walk(tree):
        values = [node.value] if isinstance(node, ast.Return) and node.value is not None else []
        values = [branch for value in values for branch in
                  ((value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,))]
        for value in values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                patterns.append(re.escape(value.value))
            elif isinstance(value, ast.JoinedStr):
                patterns.append("".join(re.escape(part.value) if isinstance(part, ast.Constant) else ".+?"
                                        for part in value.values))
    return patterns


def _appended_items():
    """The items hook/ appends to a receipt besides the entries: string or f-string arguments of
    `items.append(...)` / `rows[-1].append(...)` and the like in the receipt's modules."""
    patterns = []
    for module in ("command_prompt", "prompt_answer", "telling"):
        tree = ast.parse((LIB / "hook" / f"{module}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "append" \
                    and len(node.args) == 1:
                arg = node.args[0]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    patterns.append(re.escape(arg.value))
                elif isinstance(arg, ast.JoinedStr):
                    patterns.append("".join(re.escape(p.value) if isinstance(p, ast.Constant) else _ITEM_WORDS
                                            for p in arg.values))
    return patterns


def _receipt_grammar():
    from intent_loop.hook import command_prompt
    from intent_loop.intent import continuity
    from intent_loop.intent.views import SCOPE_WORDS, proposal_text
    from intent_loop.ops import receipts
    from intent_loop.ops.enforcement_words import ENFORCEMENT_SHORT

    sid = "\x01" * 36
    publications = [{"action": "published", "version": 987654}, {"action": "rewritten", "version": 987654},
                    {"action": "rewritten", "version": 987654, "repaired": "\x00any\x00"},
                    {"action": "removed", "reason": "\x00any\x00"},
                    {"action": "absent", "reason": "\x00any\x00"},
                    {"action": "absent", "reason": "\x00any\x00", "code": "\x00code\x00"}]
    publications += [{"action": "restored", "version": 987654, "restored": found, "moved": moved}
                     for found in [*receipts.TAKEOVERS, None] for moved in (None, "\x00any\x00")]
    guard = [_pattern(receipts.guard_text(p)) for p in publications]
    enforced = "|".join(re.escape(words) for words in ENFORCEMENT_SHORT.values())
    news = [_pattern(receipts.guard_news_text(n)) for n in
            [{"restored": found, "version": 987654} for found in receipts.TAKEOVERS]
            + [{"repaired": shape, "version": 987654} for shape in receipts.DAMAGES]
            + [{"code": "DEADLINE_EXCEEDED"}]]
    notice = _returned_fstrings(command_prompt.continuity_item) + _returned_fstrings(continuity.moved_notice)
    proposals = [_pattern(proposal_text({"candidate_id": sid, "statement": "must: \x00any\x00", "facets": ["outcome"],
                                         "scope": scope, "task_id": task}, session_task=sid[:-1] + "\x02")
                          .replace("\x02", "")).replace(re.escape("must: ") + ".+?", ".+?")
                 for scope in SCOPE_WORDS for task in (None, sid)]
    entries = [_template_pattern(t) for t in receipts.OUTCOMES.values()]
    entries.append(r"line \d+ " + _template_pattern(receipts.OUTCOMES["rejected"]))
    groups = [(news, "?"), ([f"(?:{'|'.join(guard)})(?:, (?:{enforced}))?"], "?"), (notice, "?"),
              (proposals, "{0,2}"), (entries + _appended_items(), "*")]
    return re.compile("".join(f"(?:(?:{'|'.join(forms)})(?:; |\\Z)){count}" for forms, count in groups) + r"\Z")


def _quoted_receipts(paths=DOC_FILES):
    for path in paths:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = QUOTED_RECEIPT.search(line)
            if match:
                yield f"{path.relative_to(ROOT)}:{number}", match.group(1).rstrip("`").rstrip()


def test_every_quoted_receipt_is_one_the_code_prints():
    grammar = _receipt_grammar()
    quotes = list(_quoted_receipts())
    assert quotes, "no quoted receipt found: the test would pass blind"
    stale = [f"{where}: {body}" for where, body in quotes if not grammar.fullmatch(body)]
    assert not stale, "receipts the code no longer prints (or in another order):\n" + "\n".join(stale)


def test_the_receipt_check_catches_a_stale_quote():
    """Quotes made of today's words (ops/receipts.py's, rendered) pass; the same quotes out of order,
    with older words or without an id's brackets do not."""
    from helpers.receipt_words import published, rendered
    from intent_loop.ops.enforcement_words import ENFORCEMENT_SHORT, rule_strength

    grammar = _receipt_grammar()
    v1, v2 = (f"{published(n)}, {ENFORCEMENT_SHORT['reminders']}" for n in (1, 2))
    goal = rendered("recorded", "goal", "68af2273")
    joined = rendered("joined", "must", "562972b9", ages="started 2 hours ago")
    must_not = rendered("recorded", "must-not", "a41c09d2", strength=rule_strength("must-not", "action:publish"))
    rejected = "line 2 " + rendered("rejected", code="UNKNOWN_VERB", reason="see `intent: help`")
    must = rendered("recorded", "must", "a41c09d2")
    current = [f"{v1}; {goal}", f"{v2}; {joined}; {must}", f"{must_not}; {rejected}",
               "Guard's contract now holds task 562972b9 (goal: Fix the login), changed in another session 2 "
               f"minutes ago; `intent: resume 1a2b3c4d` switches back to task 1a2b3c4d; {goal}",
               "agent proposes [d4e58df6] must: keep it small (for this task): `intent: confirm d4e58df6` makes it "
               f"yours; {goal}"]
    for body in current:
        assert grammar.fullmatch(body), body
    stale = [f"{goal}; {v1}",  # the Guard line comes first
             f"{v1[:-1]} mode); {goal}",  # older words
             f"{published(1)}; {goal.replace('[', '').replace(']', '')}",  # the id without its brackets
             f"{goal}; {published(1)}",
             f"published {published(1)}; {goal}"]
    for body in stale:
        assert not grammar.fullmatch(body), body

"""The layout is the architecture: which package of intent_loop may import which, checked on every
import statement (lazy ones inside functions included), against an explicit table."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "intent_loop"

# Each package may import itself and the packages listed; nothing else of intent_loop.
# Bottom to top: errors and redaction (the leaves: they import nothing else of intent_loop) -> base ->
# storage -> intent -> guard -> ops -> the entry points (hook, cli, mcp).
# launch (the binaries' table, the launcher and the extracted runtime) sits beside storage: every
# entry point needs it, and it needs only the data-root rule and the fast os slice.
MAY_IMPORT = {
    "errors": set(),  # the one exception type and its codes
    # credential detection, text in and text out (storage refuses ids holding one): the rules (data
    # and pure tests), the patterns compiled from them, and the pre-filter with the public calls
    "redaction": set(),
    "base": {"errors"},  # the primitives: the fast os slice, platform seam, canonical JSON, timestamps, data root
    "storage": {"base", "errors", "redaction"},
    "launch": {"storage", "base", "redaction", "errors"},
    "intent": {"storage", "base", "redaction", "errors"},
    "guard": {"intent", "storage", "base", "redaction", "errors"},
    "ops": {"guard", "intent", "storage", "base", "redaction", "errors"},
    "hook": {"ops", "guard", "intent", "storage", "base", "launch", "redaction", "errors"},
    "mcp": {"ops", "guard", "intent", "storage", "base", "launch", "redaction", "errors"},
    # `intent-loop mcp` runs the same server as dist/intent-loop-mcp; doctor and replay read what
    # the hook processes leave (their failure log, their pending-work lock)
    "cli": {"hook", "mcp", "ops", "guard", "intent", "storage", "base", "launch", "redaction", "errors"},
}


def _package_of(path):
    relative = path.relative_to(LIB)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def _imported_packages(path):
    """(line, package) for every intent_loop import in the file, wherever it sits."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import (write the full intent_loop path)")
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] if node.module != "intent_loop" else [f"intent_loop.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "intent_loop" and len(parts) > 1:
                yield node.lineno, parts[1]
            elif parts[0] == "hooks":
                yield node.lineno, "hooks"


def _library_files():
    return sorted(p for p in LIB.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_library_file_belongs_to_a_package_in_the_table():
    unknown = sorted({_package_of(p) for p in _library_files()} - set(MAY_IMPORT) - {"__init__"})
    assert unknown == []


@pytest.mark.parametrize("path", _library_files(), ids=lambda p: str(p.relative_to(LIB)))
def test_imports_point_down_the_table(path):
    own = _package_of(path)
    allowed = MAY_IMPORT.get(own, set()) | {own}
    wrong = [f"line {line}: {own} -> {dep}" for line, dep in _imported_packages(path) if dep not in allowed]
    assert wrong == []


def test_the_table_itself_has_no_cycle():
    def reaches(start, target, seen=()):
        return any(dep == target or (dep not in seen and reaches(dep, target, seen + (dep,)))
                   for dep in MAY_IMPORT[start])

    assert [p for p in MAY_IMPORT if reaches(p, p)] == []


def test_the_checker_sees_lazy_and_upward_imports(tmp_path):
    """The walk must not be blind: a lazy upward import inside a function is found."""
    probe = tmp_path / "_architecture_probe.py"  # never in lib/: a killed run must leave nothing there
    probe.write_text("def f():\n    from intent_loop.hook import runtime\n    import intent_loop.cli.main\n")
    assert list(_imported_packages(probe)) == [(2, "hook"), (3, "cli")]


@pytest.mark.parametrize("path", sorted((ROOT / "hooks").glob("*.py")), ids=lambda p: p.name)
def test_hook_entrypoints_import_only_the_hook_package(path):
    assert {dep for _line, dep in _imported_packages(path)} <= {"hook"}


@pytest.mark.parametrize("path", sorted(LIB.rglob("__init__.py")), ids=lambda p: str(p.relative_to(LIB)))
def test_package_init_files_stay_empty(path):
    """They run on every hook start: nothing but a docstring."""
    tree = ast.parse(path.read_text())
    assert all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in tree.body)


# -- inside the packages -----------------------------------------------------------------------
def _module_of(path):
    parts = list(path.relative_to(LIB.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _module_graph():
    """{module: the intent_loop modules it imports, lazily or not} over the whole library."""
    modules = {_module_of(p): p for p in _library_files()}
    graph = {}
    for name, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("intent_loop"):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith("intent_loop"))
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def _package(module):
    return module.split(".")[1] if module.count(".") else module


def test_no_import_circle_inside_a_package():
    """A circle of modules (lazy imports included) inside one package: issue 26 broke the four
    there were at their cause (hook/deferred and runtime, intent/state and state_cache, mcp/reads
    and tools, storage/ledger and the bulk verifier and upkeep)."""
    graph = _module_graph()
    circles = []

    def walk(start, node, path):
        for dep in graph[node]:
            if _package(dep) != _package(start):
                continue
            if dep == start:
                circles.append(" -> ".join(path + [dep]))
            elif dep not in path:
                walk(start, dep, path + [dep])

    for module in sorted(graph):
        walk(module, module, [module])
    assert circles == []


# storage's floors, bottom first: each module imports only its own floor and those below.
STORAGE_FLOORS = (
    # files and the lock: paths, atomic replace, line hashing, the append, quarantine, the
    # maintenance a call asks for (the hook process's own records are hook/'s: issue 26)
    {"paths", "atomic", "line_hash", "append", "lock", "keepalive", "quarantine", "maintenance"},
    {"ledger", "sealing"},  # the line protocol: one line's check, the fold, the seal
    {"cache.cache_store", "cache.lazy_map", "cache.checkpoint", "cache.chain_marker", "cache.bulk_verify",
     "cache.cache_upkeep"},
    # the state, and writing it (replacement: a whole new ledger in place of the old, under the lock)
    {"reading", "request_index", "request_scan", "transaction", "replacement", "recovery", "migration"},
)


def test_storage_modules_import_only_their_floor_and_below():
    graph = _module_graph()
    floor_of = {f"intent_loop.storage.{m}": n for n, floor in enumerate(STORAGE_FLOORS) for m in floor}
    storage = {m for m in graph if m.startswith("intent_loop.storage.") and m != "intent_loop.storage.cache"}
    assert storage == set(floor_of), "every storage module has a floor"
    upward = [f"{m} -> {d}" for m in sorted(storage) for d in sorted(graph[m])
              if d in floor_of and floor_of[d] > floor_of[m]]
    assert upward == []


# A module a reader can hold in their head. Issue 26 set 400 lines (redact.py, the last one over,
# became the rules, the patterns and the pre-filter: the redaction package since issue 36); issue
# 36 lowered it to 360 and split the eight modules above it where a noun fell out (request_scan,
# replacement, keepalive, install_checks; the projection to guard/document, the kept bytes to
# guard/takeover, directory_problem to guard/location, the work after an answer to hook/deferred).
# The cap does not move up: the issue whose change first takes a module over it splits that module.
MAX_MODULE_LINES = 360
OVER_THE_CAP = set()


def test_no_library_module_is_over_the_line_cap():
    over = sorted(str(p.relative_to(LIB)) for p in _library_files()
                  if len(p.read_text().splitlines()) > MAX_MODULE_LINES)
    assert set(over) == OVER_THE_CAP


def test_the_tests_skip_for_a_missing_build_through_one_marker():
    """tests/helpers/dist.requires_dist is the one `dist/ is not built` skip (issue 26)."""
    others = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name == "dist.py" or "__pycache__" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "pytest.mark.skipif" and \
                    "dist" in ast.unparse(node).lower() and "build" in ast.unparse(node).lower():
                others.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert others == []

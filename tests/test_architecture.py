"""The layout is the architecture: which package of intent_loop may import which, checked on every
import statement (lazy ones inside functions included), against an explicit table."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "intent_loop"

# Each package may import itself and the packages listed; nothing else of intent_loop.
# Bottom to top: errors and redact (leaf modules) -> storage -> intent -> guard -> ops -> the entry points
# (hook, cli, mcp).
# launch (the binaries' table, the launcher and the extracted runtime) sits beside storage: every
# entry point needs it, and it needs only the data-root rule and the fast os slice.
MAY_IMPORT = {
    "errors": set(),  # the one exception type and its codes
    "redact": set(),  # credential detection, text in and text out: storage refuses ids holding one
    "storage": {"errors", "redact"},
    "launch": {"storage", "redact", "errors"},
    "intent": {"storage", "redact", "errors"},
    "guard": {"intent", "storage", "redact", "errors"},
    "ops": {"guard", "intent", "storage", "redact", "errors"},
    "hook": {"ops", "guard", "intent", "storage", "launch", "redact", "errors"},
    "mcp": {"ops", "guard", "intent", "storage", "launch", "redact", "errors"},
    # `intent-loop mcp` runs the same server as dist/intent-loop-mcp
    "cli": {"mcp", "ops", "guard", "intent", "storage", "launch", "redact", "errors"},
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
    probe = LIB / "storage" / "_architecture_probe.py"
    probe.write_text("def f():\n    from intent_loop.hook import runtime\n    import intent_loop.cli.main\n")
    try:
        found = list(_imported_packages(probe))
    finally:
        probe.unlink()
    assert found == [(2, "hook"), (3, "cli")]


@pytest.mark.parametrize("path", sorted((ROOT / "hooks").glob("*.py")), ids=lambda p: p.name)
def test_hook_entrypoints_import_only_the_hook_package(path):
    assert {dep for _line, dep in _imported_packages(path)} <= {"hook"}


@pytest.mark.parametrize("path", sorted(LIB.rglob("__init__.py")), ids=lambda p: str(p.relative_to(LIB)))
def test_package_init_files_stay_empty(path):
    """They run on every hook start: nothing but a docstring."""
    tree = ast.parse(path.read_text())
    assert all(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) for node in tree.body)

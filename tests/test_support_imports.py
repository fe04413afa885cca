"""The tests' own layout: shared helpers come from `tests/support/`, never from conftest or another test module.

A test module that imports another one runs the other's module-level code (and, under xdist's
`--dist loadfile`, ties two files' state together); conftest is pytest's plugin file, not a library.
Each rule below names the file and line that breaks it.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
SUPPORT = TESTS / "support"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module `path` imports, at any depth (lazy imports inside functions included), with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def python_files() -> list[Path]:
    return sorted([*TESTS.glob("*.py"), *SUPPORT.glob("*.py")])


def test_no_module_imports_conftest_or_a_test_module() -> None:
    broken = [
        f"{path.relative_to(TESTS)}:{line}: imports {module}"
        for path in python_files()
        for line, module in imported_modules(path)
        if module.split(".")[0] == "conftest" or module.split(".")[0].startswith("test_")
    ]
    assert not broken, "import shared helpers from `support` instead:\n" + "\n".join(broken)


def test_helpers_live_in_the_support_package_not_beside_the_tests() -> None:
    """Every top-level .py in tests/ is a test module or conftest; helpers are support's modules."""
    assert (SUPPORT / "__init__.py").is_file()
    strays = [p.name for p in TESTS.glob("*.py") if p.name != "conftest.py" and not p.name.startswith("test_")]
    assert not strays, f"move these helper modules into tests/support/: {strays}"


def test_conftest_holds_fixtures_only() -> None:
    """conftest.py defines fixtures and pytest's hooks (and may import helpers); any other function belongs in support."""
    tree = ast.parse((TESTS / "conftest.py").read_text())

    def is_fixture(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and target.attr == "fixture"

    plain = [
        f"conftest.py:{node.lineno}: {node.name}"
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not any(is_fixture(d) for d in getattr(node, "decorator_list", []))
        and not node.name.startswith("pytest_")
    ]
    assert not plain, "not a fixture, move it to tests/support/:\n" + "\n".join(plain)


def test_support_modules_import_as_a_package() -> None:
    """pyproject's `pythonpath = ["tests"]` makes `support` importable under any rootdir or import mode."""
    import support.proxy
    import support.servers

    assert Path(support.servers.__file__).parent == SUPPORT
    assert support.proxy.ROOT == TESTS.parent


SESSION_NAMES = frozenset({"SessionMemory", "cg_hash", "ANONYMOUS_PREFIX"})
"""What offload_mcp.session defines and reducers/base re-exports for the reducers' own use."""


def session_names_from_base(path: Path) -> list[str]:
    """`line: name` of each session name `path` imports from reducers/base, lazy imports included."""
    return [
        f"{node.lineno}: {alias.name}"
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path)))
        if isinstance(node, ast.ImportFrom) and node.module == "offload_mcp.reducers.base"
        for alias in node.names
        if alias.name in SESSION_NAMES
    ]


def test_tests_and_benches_read_the_session_from_its_own_module() -> None:
    """The session concept lives in offload_mcp.session: a test or bench that takes it from reducers/base
    reads a re-export, and breaks when the reducers stop needing one."""
    files = [*python_files(), *sorted((TESTS.parent / "bench").glob("*.py"))]
    broken = [f"{path.relative_to(TESTS.parent)}:{found}" for path in files for found in session_names_from_base(path)]
    assert not broken, "import these from offload_mcp.session:\n" + "\n".join(broken)


def test_the_session_import_check_reads_lazy_imports_too(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from offload_mcp.reducers.base import Acted, cg_hash\n"
        "def f():\n"
        "    from offload_mcp.reducers.base import SessionMemory\n"
        "from offload_mcp.session import ANONYMOUS_PREFIX\n"
    )
    assert session_names_from_base(module) == ["1: cg_hash", "3: SessionMemory"]

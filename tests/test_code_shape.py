"""The shape of the code in src/: short functions, comments without history.

No function runs over MAX_FUNCTION_LINES unless a docstring line starting `Long because` says why.
No comment or docstring quotes a timing (ms, us) or cites a seed or an issue: it says why in a
sentence and points to docs/design.md ("Measurements behind the code") for the numbers.

The allow-lists name what is over the line today in modules owned by the redesign's other parts
(issue 41): an entry leaves when its function is split or its file cleaned, and a stale entry
fails the test so the lists only shrink.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "offload_mcp"
MAX_FUNCTION_LINES = 80
WHY_MARKER = "Long because"

# Empty: every long function in src/ is split or says why; a new one is split, not listed here.
ALLOWED_LONG: frozenset[str] = frozenset()

# Empty: no comment in src/ quotes a timing or history; the numbers live in docs/design.md's Measurements.
ALLOWED_HISTORY: frozenset[str] = frozenset()
HISTORY = re.compile(r"[0-9][0-9,.]* ?(?:ms|us|µs)\b|\bseeds? ?0\d\d\b|\bissues? ?\d+", re.IGNORECASE)
"""A timing in milliseconds or microseconds, a seed's number, an issue's number."""

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, Function]]:
    """Every function under `tree` with its qualified name (Class.method, outer.inner)."""
    found: list[tuple[str, Function]] = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.append((prefix + node.name, node))
            found.extend(_functions(node, f"{prefix}{node.name}."))
        elif isinstance(node, ast.ClassDef):
            found.extend(_functions(node, f"{prefix}{node.name}."))
        else:
            found.extend(_functions(node, prefix))
    return found


def _says_why(function: Function) -> bool:
    doc = ast.get_docstring(function) or ""
    return any(line.strip().startswith(WHY_MARKER) for line in doc.splitlines())


def _long_functions() -> dict[str, int]:
    """`module:qualname` -> lines, for each function over the bound whose docstring does not say why."""
    long: dict[str, int] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = path.relative_to(SRC).as_posix()
        for name, function in _functions(tree):
            assert function.end_lineno is not None
            lines = function.end_lineno - function.lineno + 1
            if lines > MAX_FUNCTION_LINES and not _says_why(function):
                long[f"{module}:{name}"] = lines
    return long


def test_no_function_runs_over_the_bound_unless_it_says_why():
    over = {name: lines for name, lines in _long_functions().items() if name not in ALLOWED_LONG}
    assert over == {}, f"split these or say why in a `{WHY_MARKER}` docstring line: {over}"


def test_the_allow_list_names_only_functions_still_over_the_bound():
    stale = sorted(ALLOWED_LONG - _long_functions().keys())
    assert stale == [], f"drop these from ALLOWED_LONG, they are short now or say why: {stale}"


def test_the_measure_counts_a_long_function_and_honours_its_reason():
    def body(indent: str) -> str:
        return "\n".join(f"{indent}x{i} = {i}" for i in range(MAX_FUNCTION_LINES))

    tree = ast.parse('class A:\n    def f(self):\n        """Short."""\n' + body(" " * 8) + "\n")
    ((name, function),) = _functions(tree)
    assert name == "A.f" and function.end_lineno is not None
    assert function.end_lineno - function.lineno + 1 > MAX_FUNCTION_LINES and not _says_why(function)
    explained = ast.parse('def f():\n    """Short.\n\n    Long because one table."""\n' + body(" " * 4) + "\n")
    ((_, reasoned),) = _functions(explained)
    assert _says_why(reasoned)


def _prose(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and every bare string statement (docstrings, attribute docstrings)."""
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            if (
                isinstance(statement, ast.Expr)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                found.extend((statement.lineno + i, line) for i, line in enumerate(statement.value.value.splitlines()))
    return sorted(found)


def _history() -> dict[str, list[str]]:
    """`module` -> its comment and docstring lines that quote a timing or cite a seed or an issue."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        lines = [f"{n}: {text.strip()}" for n, text in _prose(path.read_text(encoding="utf-8")) if HISTORY.search(text)]
        if lines:
            found[path.relative_to(SRC).as_posix()] = lines
    return found


def test_no_comment_quotes_timings_or_history():
    found = {module: lines for module, lines in _history().items() if module not in ALLOWED_HISTORY}
    assert found == {}, f"say why in a sentence; numbers go to docs/design.md: {found}"


def test_the_history_allow_list_names_only_files_that_still_quote_it():
    stale = sorted(ALLOWED_HISTORY - _history().keys())
    assert stale == [], f"drop these from ALLOWED_HISTORY, they are clean now: {stale}"


def test_the_history_measure_reads_comments_and_docstrings_not_code():
    source = (
        '"""Module (seed 004)."""\n'
        "LIMIT = 5  # took 44 ms before\n"
        'TEXT = "p95 went from 840ms to 310ms"\n'
        "def f():\n"
        '    """Fixed in issue 12."""\n'
    )
    flagged = [line for line, text in _prose(source) if HISTORY.search(text)]
    assert flagged == [1, 2, 5]

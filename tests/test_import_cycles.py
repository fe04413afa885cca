"""No import cycles inside offload_mcp: each module can be read after the ones it imports.

The graph is built from the source with `ast`, not by importing it: every
`import` / `from ... import` at any depth counts (lazy imports inside
functions, and imports under `if TYPE_CHECKING:`, since a type-only cycle
still means neither module can be read without the other). `from . import x`
and `from .pkg import x` point at the submodule `x` when there is one, else at
the package. Importing a submodule is not counted as importing its parent
packages' `__init__`, which every module would then share.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

PACKAGE = "offload_mcp"
SOURCE = Path(__file__).resolve().parents[1] / "src" / PACKAGE


def module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package by dotted name; a package is named by its `__init__.py`."""
    modules: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `module` imports anywhere in its source."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(_nearest(alias.name, known) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = _absolute(module, is_package, node)
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in known else _nearest(target, known))
    found.discard("")
    found.discard(module)
    return found


def _nearest(name: str, known: set[str]) -> str:
    """The longest prefix of `name` that is a module of the package ("" for outside imports)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return ""


def import_graph(root: Path = SOURCE, package: str = PACKAGE) -> dict[str, set[str]]:
    modules = module_files(root, package)
    known = set(modules)
    return {name: imports_of(name, path, known) for name, path in modules.items()}


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module, iteratively (the package is deep enough to matter)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(graph[start]))))
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return sorted(components)


def shortest_cycle(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A shortest cycle through the component's first module, to print as `a -> b -> a`."""
    members = set(component)
    start = component[0]
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(previous[path[-1]])
                    return [*reversed(path), start]
                if child not in previous:
                    previous[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"no cycle through {start} in {component}")  # a component always has one


def describe_cycles(graph: dict[str, set[str]]) -> list[str]:
    return [
        " -> ".join(shortest_cycle(graph, component)) + f"  (component: {', '.join(component)})"
        for component in strongly_connected(graph)
    ]


def test_offload_mcp_has_no_import_cycle():
    cycles = describe_cycles(import_graph())
    assert not cycles, "import cycles inside offload_mcp:\n" + "\n".join(cycles)


LOWER_PACKAGES = ("catalog", "downstream", "policy", "reducers", "relay", "store")
"""Packages below config.py: it assembles their settings, so they read their own settings modules instead."""


def test_lower_packages_do_not_import_config():
    graph = import_graph()
    lower = tuple(f"{PACKAGE}.{name}." for name in LOWER_PACKAGES)
    importers = sorted(
        module for module, imported in graph.items() if module.startswith(lower) and f"{PACKAGE}.config" in imported
    )
    assert importers == [], f"these import offload_mcp.config, which imports their packages' settings: {importers}"


def test_the_session_module_is_a_leaf():
    """session.py holds what the server, shaping, tools and reducers all read of a session, so it imports
    none of them (nor anything else of offload_mcp): any of them may import it without a cycle."""
    graph = import_graph()
    assert f"{PACKAGE}.session" in graph
    assert graph[f"{PACKAGE}.session"] == set()
    assert f"{PACKAGE}.session" in graph[f"{PACKAGE}.reducers.base"]


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """The walker finds lazy, relative, `from . import x` and TYPE_CHECKING imports, and names the cycle."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("from .. import c\n")
    (pkg / "c.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\nimport json, os.path\n"
    )
    (pkg / "d.py").write_text("from .a import f\nfrom .sub.b import g\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.a"] == {"pkg.sub.b"}
    assert graph["pkg.sub.b"] == {"pkg.c"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert graph["pkg.d"] == {"pkg.a", "pkg.sub.b"}
    assert describe_cycles(graph) == ["pkg.a -> pkg.sub.b -> pkg.c -> pkg.a  (component: pkg.a, pkg.c, pkg.sub.b)"]


@pytest.mark.parametrize("level", [1, 2])
def test_relative_imports_resolve_from_a_package_init(tmp_path, level):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "x.py").write_text("")
    (pkg / "sub" / "x.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text(f"from {'.' * level}x import name\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.sub"] == {"pkg.sub.x" if level == 1 else "pkg.x"}

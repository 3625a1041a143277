"""The package's import graph has no cycle, lazy (function-level) imports included (issue 10).

A cycle hidden behind an import inside a function still ties two modules together: each can only be
understood, tested and changed with the other.  Imports under ``if TYPE_CHECKING:`` are for the type
checker only and do not count.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rocmbuild"


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its body (TYPE_CHECKING blocks excluded)."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = counter
                counter += 1
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 50  # the walk found the package
    assert cycles(graph) == []


def test_a_lazy_import_cycle_is_found(tmp_path: Path) -> None:
    package = tmp_path / "rocmbuild"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from rocmbuild import b\n")
    (package / "b.py").write_text("def f():\n    from rocmbuild.a import x\n")
    (package / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from rocmbuild import a\n")
    (package / "d.py").write_text("from rocmbuild import c\n")
    graph = import_graph(package)
    assert graph["rocmbuild.a"] == {"rocmbuild.b"} and graph["rocmbuild.b"] == {"rocmbuild.a"}
    assert graph["rocmbuild.c"] == set()  # type-checking imports do not count
    assert cycles(graph) == [["rocmbuild.a", "rocmbuild.b"]]

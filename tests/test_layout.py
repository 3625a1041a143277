"""The package's layers: packages import only the layers below them, and no module imports in a cycle.

A cycle hidden behind an import inside a function still ties two modules together: each can only be
understood, tested and changed with the other.  So lazy (function-level) imports count, and rocmbuild's
own imports sit at the top of a module, except where the CLI dispatches a command.  Imports under
``if TYPE_CHECKING:`` are for the type checker only and do not count.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "rocmbuild"

# The layers, lowest first.  A package (or top-level module) imports only packages of the layers below
# its own; two packages of one layer import neither each other nor anything of each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("rocmbuild",),  # the package itself: its version
    ("errors", "paths"),  # the error family and exit codes; the XDG directories
    ("options",),  # the command's options as one value
    ("process",),  # helper commands, the PTY engine, containment, relay, display, line scanning
    ("host",),  # ROCm, GPUs, libraries, the HIP compiler
    ("services", "diagnosis"),  # the outside world as values; the catalogue, classifier and advice
    ("records",),  # what a run leaves: run dir, events, attempts, reports, history
    ("planning",),  # recipes, plans, environment changes
    ("checks", "verification", "toolchain"),  # preflight; code objects; compiler cache and launcher
    ("provisioning",),  # fingerprints, --wheel-dir, --requires-from
    ("loop",),  # one recipe's attempts, the ladder, the remedies
    ("commands",),  # build/plan, resume, doctor
    ("cli",),  # click: parse, dispatch, exit codes
    ("__main__",),  # python -m rocmbuild
)


def module_name(path: Path, package: Path) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def source_tree(path: Path) -> ast.Module:
    """A module's whole syntax tree, parsed once a session (four tests walk every module)."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def parsed(path: Path) -> ast.Module:
    """A module's syntax tree without its ``if TYPE_CHECKING:`` blocks (for the type checker only), parsed once."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            node.body = []
    return tree


def import_graph(package: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports anywhere in its body (TYPE_CHECKING blocks excluded)."""
    modules = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = parsed(path)
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def package_of(module: str) -> str:
    """``rocmbuild.loop.session`` -> ``loop``; a top-level module is a package of its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_violations(graph: dict[str, set[str]], layers: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a module into its own layer (another package) or a layer above, as ``a -> b``."""
    rank = {package: i for i, layer in enumerate(layers) for package in layer}
    found = []
    for module, imported in sorted(graph.items()):
        for target in sorted(imported):
            here, there = package_of(module), package_of(target)
            if here != there and rank[there] >= rank[here]:
                found.append(f"{module} -> {target}")
    return found


def imports_in_functions(path: Path) -> list[str]:
    """rocmbuild's own imports inside a function body, as ``line: text``."""
    tree = parsed(path)
    found = []
    for function in ast.walk(tree):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                own = (node.module or "").startswith("rocmbuild")
            else:
                own = isinstance(node, ast.Import) and any(a.name.startswith("rocmbuild") for a in node.names)
            if own:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


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


@functools.cache
def package_graph() -> dict[str, set[str]]:
    """rocmbuild's own graph, walked once for the tests that read it (they do not change it)."""
    return import_graph(PACKAGE)


def test_the_package_has_no_import_cycle() -> None:
    graph = package_graph()
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


def test_every_package_has_a_layer() -> None:
    placed = {package for layer in LAYERS for package in layer}
    assert {package_of(m) for m in package_graph()} - placed == set(), "add the new package to LAYERS"


def test_packages_import_only_the_layers_below_theirs() -> None:
    assert layer_violations(package_graph(), LAYERS) == []


# A signature this wide hides which arguments travel together: more than this many parameters
# (self/cls not counted; *args and **kwargs count) and they become a keyword-only frozen dataclass.
MAX_PARAMETERS = 6
# Functions allowed more, "path:name" -> why.  Empty: every function fits.
WIDE_ALLOWED: dict[str, str] = {}


def parameter_count(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The parameters a caller can pass: positional-only, ordinary, keyword-only, *args and **kwargs,
    less a method's ``self`` or ``cls``."""
    args = function.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    count = len(names) + len(args.kwonlyargs) + (args.vararg is not None) + (args.kwarg is not None)
    return count - 1 if names and names[0] in ("self", "cls") else count


def wide_signatures(package: Path, limit: int = MAX_PARAMETERS) -> dict[str, int]:
    """Every function (methods and nested ones included) with more than ``limit`` parameters,
    as ``path:name`` -> how many."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(source_tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and parameter_count(node) > limit:
                found[f"{path.relative_to(package)}:{node.name}"] = parameter_count(node)
    return found


def test_no_function_takes_more_than_six_parameters() -> None:
    wide = wide_signatures(PACKAGE)
    assert {name: n for name, n in wide.items() if name not in WIDE_ALLOWED} == {}
    assert set(WIDE_ALLOWED) <= set(wide), "an allowance no function needs any more: remove it"


def test_a_wide_signature_is_found(tmp_path: Path) -> None:
    package = tmp_path / "rocmbuild"
    package.mkdir()
    (package / "a.py").write_text(
        "def seven(a, b, c, d, e, f, g): ...\n"
        "def six(a, b, /, c, *, d, e, f): ...\n"
        "def starred(a, b, c, d, e, *args, **kwargs): ...\n"
        "class K:\n"
        "    def method(self, a, b, c, d, e, f): ...\n"
        "    @classmethod\n"
        "    def wide(cls, a, b, c, d, e, f, *, g): ...\n"
        "def outer():\n"
        "    async def inner(a, b, c, d, e, f, g=1): ...\n")
    assert wide_signatures(package) == {"a.py:seven": 7, "a.py:starred": 7, "a.py:wide": 7, "a.py:inner": 7}


def test_own_imports_are_at_the_top_of_a_module_except_where_the_cli_dispatches() -> None:
    found = {str(p.relative_to(PACKAGE)): imports_in_functions(p) for p in sorted(PACKAGE.rglob("*.py"))
             if p != PACKAGE / "cli.py"}
    assert {path: lines for path, lines in found.items() if lines} == {}


def test_an_import_upwards_or_across_a_layer_is_found(tmp_path: Path) -> None:
    package = tmp_path / "rocmbuild"
    for sub in ("low", "left", "right", "high"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "high" / "a.py").write_text("from rocmbuild.low import b\nfrom rocmbuild.left import c\n")
    (package / "low" / "b.py").write_text("def f():\n    from rocmbuild.high import a\n")  # upwards, lazily
    (package / "left" / "c.py").write_text("from rocmbuild.right import d\n")  # across its own layer
    (package / "right" / "d.py").write_text("from rocmbuild.low import b\n")
    layers = (("rocmbuild",), ("low",), ("left", "right"), ("high",))
    assert layer_violations(import_graph(package), layers) == [
        "rocmbuild.left.c -> rocmbuild.right.d", "rocmbuild.low.b -> rocmbuild.high.a"]
    assert imports_in_functions(package / "low" / "b.py") == ["2: from rocmbuild.high import a"]
    assert imports_in_functions(package / "high" / "a.py") == []


def cited_documents(root: Path) -> dict[str, set[str]]:
    """Each ``docs/*.md`` (or top-level ``*.md``) named in the code, recipes, Makefile and the documents
    themselves (as a path or a relative Markdown link) -> the files that name it."""
    cited: dict[str, set[str]] = {}
    sources = [*root.glob("rocmbuild/**/*.py"), *root.glob("rocmbuild/*.toml"), *root.glob("recipes/*.toml"),
               *root.glob("examples/*.sh"), *root.glob("benchmarks/*.py"), *root.glob("tests/*.py"),
               root / "Makefile", *root.glob("*.md"), *root.glob("docs/*.md")]
    for source in sources:
        if source.resolve() == Path(__file__).resolve():  # this file names made-up documents on purpose
            continue
        text = source.read_text(encoding="utf-8")
        for name in re.findall(r"\bdocs/[\w-]+\.md", text):
            cited.setdefault(name, set()).add(str(source.relative_to(root)))
        for link in re.findall(r"\]\(([\w./-]+\.md)", text):  # a Markdown link, relative to its file
            target = (source.parent / link).resolve()
            name = str(target.relative_to(root)) if target.is_relative_to(root) else str(target)
            cited.setdefault(name, set()).add(str(source.relative_to(root)))
    return cited


def test_every_document_the_code_or_the_docs_cite_exists() -> None:
    root = PACKAGE.parent
    cited = cited_documents(root)
    assert "docs/reference-records.md" in cited and "docs/rocm-facts.md" in cited  # the walk found citations
    assert {name: sorted(by) for name, by in cited.items() if not (root / name).is_file()} == {}


def test_a_missing_cited_document_is_found(tmp_path: Path) -> None:
    (tmp_path / "rocmbuild").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "Makefile").write_text("")
    (tmp_path / "rocmbuild" / "a.py").write_text('"""See docs/gone.md and docs/here.md."""\n')
    (tmp_path / "docs" / "here.md").write_text("[up](../README.md), [next](next.md)\n")
    cited = cited_documents(tmp_path)
    assert set(cited) == {"docs/gone.md", "docs/here.md", "README.md", "docs/next.md"}
    assert cited["docs/next.md"] == {"docs/here.md"}


def test_the_module_map_names_every_module() -> None:
    """docs/design.md's module map says where each module lives and what it owns: none left out."""
    text = (PACKAGE.parent / "docs" / "design.md").read_text(encoding="utf-8")
    modules = sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                     if p.name not in ("__init__.py", "__main__.py"))
    assert [m for m in modules if f"`{Path(m).name}`" not in text] == []


# ``Any`` switches mypy off where it stands: records are read through typed JSON (records/recordfile.py's
# JSONValue and its narrowing helpers) and the run journal (records/journal.py).  What is left is where a
# value is untyped by nature (click's keyword arguments, re's parse, a JSON manifest rewritten in place).
MAX_ANY_USES = 40


def any_uses(root: Path) -> dict[str, int]:
    """Per module under ``root``: how many times the name ``Any`` is used (``Any``, ``typing.Any``)."""
    found: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = source_tree(path)
        count = sum(1 for node in ast.walk(tree) if (isinstance(node, ast.Name) and node.id == "Any")
                    or (isinstance(node, ast.Attribute) and node.attr == "Any"))
        if count:
            found[str(path.relative_to(root))] = count
    return found


def test_any_stays_rare() -> None:
    uses = any_uses(PACKAGE)
    assert sum(uses.values()) < MAX_ANY_USES, sorted(uses.items(), key=lambda item: -item[1])


def test_any_uses_are_counted(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("from typing import Any\nimport typing\n\n"
                                   "def f(x: Any, y: typing.Any) -> dict[str, Any]:\n    return {}\n")
    (tmp_path / "b.py").write_text("def g(x: object) -> None:\n    pass\n")
    assert any_uses(tmp_path) == {"a.py": 3}

"""The ``repro`` package has no import cycle (issue 36): the graph of top-level imports is acyclic.

An edge ``a → b`` is an import that runs when ``a`` is imported: a module-level ``import`` or ``from … import``
(also inside module-level ``if``/``try``/class bodies), never one inside a function or under
``if TYPE_CHECKING:``. ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import repro

ROOT = Path(repro.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level_imports(body: list[ast.stmt], functions: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run at import time (not under TYPE_CHECKING; in functions too if ``functions``)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node):
                found += _top_level_imports(node.body, functions)
            found += _top_level_imports(node.orelse, functions)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                found += _top_level_imports(block, functions)
        elif isinstance(node, (ast.With, ast.ClassDef, ast.For, ast.While)):
            found += _top_level_imports(node.body, functions)
        elif functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found += _top_level_imports(node.body, functions)
    return found


def import_graph(functions: bool = False) -> dict[str, set[str]]:
    """``{module: the repro modules its top-level imports name}`` over every module of ``repro`` (with
    ``functions``, also the imports inside functions: the imports a call can run)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _top_level_imports(ast.parse(path.read_text(encoding="utf-8")).body, functions):
            if isinstance(node, ast.Import):
                edges.update(a.name for a in node.names)
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                edges.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, …, a]``, or None (depth-first search, three colours)."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert len(graph) > 100 and "repro.datasets.registry" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_datasets_package_has_no_cycle_even_through_lazy_imports() -> None:
    """The cycle issue 36 found ran registry → authors_files → credit_card/parkinsons → registry, partly
    through imports inside functions; within ``repro.datasets`` even those form no cycle now."""
    graph = {m: {e for e in edges if e.startswith("repro.datasets.")}
             for m, edges in import_graph(functions=True).items() if m.startswith("repro.datasets.")}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_checker_sees_the_kinds_of_import_it_must() -> None:
    graph = import_graph()
    assert "repro.datasets.entry" in graph["repro.datasets.registry"]                # from module import name
    assert "repro.datasets.registry" in graph["repro.studies.thesis.part1_tables"]   # from pkg import module
    assert "repro.datasets.authors_files" not in graph["repro.datasets.entry"]       # function-level: no edge
    assert "repro.datasets.entry" not in graph["repro.datasets.authors_files"]       # TYPE_CHECKING: no edge
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None

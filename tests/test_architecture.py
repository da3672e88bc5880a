"""The package's shape, checked on its source: the import graph has no cycle, and no module imports from a layer
above its own (ARCHITECTURE.md draws the layers). Imports under ``if TYPE_CHECKING:`` are annotations only and are
not counted; imports inside functions are."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "sqlweave"

#: Lowest first; a module may import from its own layer and those below (ARCHITECTURE.md).
LAYERS: list[tuple[str, set[str]]] = [
    ("foundation", {"errors", "config", "text", "cells", "files", "logs", "_version", "budget", "progress", "schema",
                    "plugins"}),
    ("parts", {"db", "sql", "llm", "retrieval", "prompts", "knowledge", "policy", "question", "chart", "export",
               "display", "resources", "confidence", "temporal"}),
    ("pipeline", {"pipeline", "stages", "agent", "presets", "answer_schema"}),
    ("product", {"engine", "catalog", "conversation", "eval", "doctor", "feedback", "loading", "database"}),
    ("doors", {"cli", "server", "mcp", "web"}),
]


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(node: ast.AST):
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
            for other in child.orelse:
                yield other
                yield from _runtime_nodes(other)
            continue
        yield child
        yield from _runtime_nodes(child)


def import_graph() -> nx.DiGraph:
    """Module -> module imported, for every runtime import between the package's own modules."""
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target.startswith("sqlweave.") and target != name:
                    graph.add_edge(name, target, line=node.lineno)
    return graph


def layer(module: str) -> int | None:
    top = module.split(".")[1] if "." in module else None
    return next((i for i, (_, names) in enumerate(LAYERS) if top in names), None)


def test_the_import_graph_has_no_cycle() -> None:
    cycles = sorted(nx.simple_cycles(import_graph()), key=len)
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_every_module_sits_in_a_layer_and_imports_only_downward() -> None:
    graph = import_graph()
    unplaced = sorted(m for m in graph if m != "sqlweave" and layer(m) is None)
    assert not unplaced, f"modules in no layer of ARCHITECTURE.md: {unplaced}"
    upward = [f"{a} -> {b} (line {d['line']})" for a, b, d in graph.edges(data=True)
              if a != "sqlweave" and layer(b) is not None and layer(b) > layer(a)]  # type: ignore[operator]
    assert not upward, f"imports from a higher layer: {upward}"


def test_the_checks_see_real_imports() -> None:
    graph = import_graph()  # a graph that missed imports would pass the two tests above for nothing
    assert graph.has_edge("sqlweave.stages.generate", "sqlweave.pipeline")
    assert graph.has_edge("sqlweave.cli.build", "sqlweave.engine")
    assert graph.number_of_edges() > 150

"""The import graph is a tree of layers: every import (module level or inside a function)
goes to the same layer or one below, and no modules import each other in a circle. Read
from the source with `ast`, nothing imported."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "anvil_local"

#: From the ground floor up. A module belongs to the first prefix it matches.
LAYERS: list[tuple[str, ...]] = [
    (
        "anvil_local.errors",
        "anvil_local.signals",
        "anvil_local.paths",
        "anvil_local.testcase",
        "anvil_local.conversation",
        "anvil_local.arena",
    ),
    ("anvil_local.judge",),
    ("anvil_local.cache",),
    ("anvil_local.models",),
    ("anvil_local.registry",),
    ("anvil_local.metrics",),
    ("anvil_local.spec",),
    ("anvil_local.run", "anvil_local.pytest_plugin"),
    (
        "anvil_local.bench",
        "anvil_local.bundle",
        "anvil_local.doctor",
        "anvil_local.comparison",
        "anvil_local.view",
        "anvil_local.serve",
    ),
    ("anvil_local.train",),
    ("anvil_local.cli", "anvil_local"),
]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules `path` imports, anywhere in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # `from package import module` imports the module; a name is the package's
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def layer(name: str) -> int:
    for index, prefixes in enumerate(LAYERS):
        if any(name == p or name.startswith(p + ".") for p in prefixes):
            return index
    raise AssertionError(f"{name} belongs to no layer: add it to LAYERS")


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(path, name, known) for name, path in found.items()}


def test_every_import_goes_to_the_same_layer_or_below():
    upward = [
        f"{a} (layer {layer(a)}) imports {b} (layer {layer(b)})"
        for a, targets in graph().items()
        for b in sorted(targets)
        if layer(b) > layer(a) and not (a == "anvil_local" or b == "anvil_local")
    ]
    assert upward == []


def test_no_modules_import_each_other_in_a_circle():
    edges = graph()
    # a package's __init__ re-exports its modules: an edge into it is an edge to them
    circles = [c for c in strongly_connected(edges) if len(c) > 1]
    assert circles == []


def test_the_judge_reads_no_model_choice_and_the_registry_no_metric():
    edges = graph()
    for name, targets in edges.items():
        if name.startswith("anvil_local.judge"):
            assert not {t for t in targets if t.startswith("anvil_local.models")}, name
        if name == "anvil_local.registry":
            assert not {t for t in targets if t.startswith("anvil_local.metrics")}


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iteratively (no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in edges:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    item = stack.pop()
                    on_stack.discard(item)
                    component.append(item)
                    if item == node:
                        break
                found.append(sorted(component))
    return found

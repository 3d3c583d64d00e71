"""DeepEval's DAG helpers (deepeval.metrics.dag.utils) on our nodes: `is_valid_dag`,
`is_valid_dag_from_roots`, `extract_required_params`, `copy_graph`.

Where we differ, on purpose: the checks follow a verdict's child as well as a node's
children (DeepEval's stop at the verdicts, so a cycle through a verdict passes them), a node
of the other kind (a conversational node in a single-turn graph) makes a graph invalid, and
`copy_graph` shares the metrics under verdicts (a metric is a definition; a walk never
changes it) where DeepEval rebuilds them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from anvil_local.metrics.dag.deprecation import quiet_bottom_up
from anvil_local.metrics.dag.graph import DeepAcyclicGraph, edges, is_multiturn
from anvil_local.metrics.dag.nodes import JudgementNode, TaskNode, VerdictNode

__all__ = [
    "copy_graph",
    "extract_required_params",
    "is_valid_dag",
    "is_valid_dag_from_roots",
    "suppress_bottom_up_deprecation",
]

#: DeepEval's name for the block that builds nodes with `children=` without the warning.
suppress_bottom_up_deprecation = quiet_bottom_up


def _is_node(node: Any) -> bool:
    return isinstance(node, TaskNode | JudgementNode | VerdictNode)


def is_valid_dag_from_roots(root_nodes: Iterable[Any], multiturn: bool) -> bool:
    """Whether the nodes below `root_nodes` hold no cycle and are all of one kind
    (conversational when `multiturn`)."""
    visited: set[int] = set()
    return all(is_valid_dag(root, multiturn, visited, set()) for root in root_nodes)


def is_valid_dag(
    node: Any,
    multiturn: bool,
    visited: set[int] | None = None,
    stack: set[int] | None = None,
) -> bool:
    """Whether no cycle runs through `node` (or a DeepAcyclicGraph's roots) and every node
    below it is of the graph's kind. `visited` and `stack` hold node ids (DeepEval's
    recursion arguments); an explicit stack walks a chain of any depth."""
    if isinstance(node, DeepAcyclicGraph):
        return is_valid_dag_from_roots(node.root_nodes, multiturn)
    visited = set() if visited is None else visited
    stack = set() if stack is None else stack
    if id(node) in stack:
        return False
    if id(node) in visited:
        return True
    path = [(node, iter(edges(node)))]
    visited.add(id(node))
    stack.add(id(node))
    while path:
        current, below = path[-1]
        if _is_node(current) and is_multiturn(current) != multiturn:
            return False
        child = next(below, None)
        if child is None:
            stack.discard(id(current))
            path.pop()
        elif id(child) in stack:
            return False
        elif id(child) not in visited:
            visited.add(id(child))
            stack.add(id(child))
            path.append((child, iter(edges(child))))
    return True


def extract_required_params(
    nodes: Iterable[Any], multiturn: bool, required_params: set[Any] | None = None
) -> set[Any]:
    """Every field the nodes below `nodes` name (their `evaluation_params`, and a code
    node's fields), added to `required_params`. `multiturn` is DeepEval's argument: a node
    knows its own kind."""
    params = set() if required_params is None else required_params
    seen: set[int] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if id(node) in seen or not _is_node(node):
            continue
        seen.add(id(node))
        params.update(getattr(node, "evaluation_params", None) or [])
        reader = getattr(node, "required_fields", None)
        if reader is not None:
            params.update(reader())
        pending += edges(node)
    return params


def copy_graph(original_dag: DeepAcyclicGraph) -> DeepAcyclicGraph:
    """A graph of new node objects with the same fields and shape (a node shared by two
    parents stays one node); nothing is rebuilt through a constructor, so no warning."""
    twins = {id(node): copy.copy(node) for node in original_dag.order}

    def twin(node: Any) -> Any:
        return twins.get(id(node), node)  # a metric under a verdict is shared

    for node in original_dag.order:
        made = twins[id(node)]
        if isinstance(node, VerdictNode):
            made.child = twin(node.child)
        else:
            made.children = [twin(child) for child in node.children]
        if isinstance(getattr(node, "evaluation_params", None), list):
            made.evaluation_params = list(node.evaluation_params)
    return DeepAcyclicGraph([twin(root) for root in original_dag.root_nodes])

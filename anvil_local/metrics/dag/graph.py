"""DeepAcyclicGraph: root rules, cycle and reachability checks, a fixed walk order.

The walk order is a topological order with ties broken by discovery order (roots in declared
order, children in declared order), so it never depends on hashing or on sync vs async.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    JudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from anvil_local.testcase import SingleTurnParams, ordered_params

_PREFIX = {
    TaskNode: "task",
    BinaryJudgementNode: "binary",
    NonBinaryJudgementNode: "choice",
    VerdictNode: "verdict",
}


def edges(node: Any) -> list[Any]:
    """The nodes directly below `node` (a metric child of a verdict is not a graph node)."""
    if isinstance(node, TaskNode | JudgementNode):
        return list(node.children)
    if isinstance(node, VerdictNode) and isinstance(node.child, TaskNode | JudgementNode):
        return [node.child]
    return []


class DeepAcyclicGraph:
    """A validated decision graph. `order` lists every node in walk order."""

    def __init__(self, root_nodes: Sequence[Any]) -> None:
        roots = list(root_nodes or [])
        if not roots:
            raise MetricDefinitionError("A DeepAcyclicGraph needs at least one root node.")
        for root in roots:
            if isinstance(root, VerdictNode):
                raise MetricDefinitionError("A VerdictNode cannot be a root node.")
            if not isinstance(root, TaskNode | JudgementNode):
                raise MetricTypeError(f"Root nodes must be DAG nodes, got {type(root).__name__}.")
        if len(roots) > 1 and any(isinstance(r, JudgementNode) for r in roots):
            raise MetricDefinitionError(
                "You cannot provide more than one root node when a BinaryJudgementNode or "
                "NonBinaryJudgementNode is a root."
            )
        if len({id(r) for r in roots}) != len(roots):
            raise MetricDefinitionError("A root node is listed twice.")
        self.root_nodes = roots
        discovered = self._discover(roots)
        self.parents: dict[int, list[Any]] = {id(n): [] for n in discovered}
        for node in discovered:
            for child in edges(node):
                self.parents[id(child)].append(node)
        for root in roots:
            if self.parents[id(root)]:
                raise MetricDefinitionError(
                    "You cannot declare a node as a root node when it is also reachable from "
                    "another root node."
                )
        self.order = self._topological(discovered)
        self.ids = self._assign_ids(self.order)

    @staticmethod
    def _discover(roots: list[Any]) -> list[Any]:
        """Depth-first discovery (pre-order, children in declared order) with cycle
        detection; validates each node once. An explicit stack, not recursion: a chain of
        thousands of nodes is a valid graph."""
        seen: set[int] = set()
        order: list[Any] = []
        on_path: set[int] = set()

        def enter(node: Any) -> list[tuple[Any, Any]]:
            if isinstance(node, TaskNode | JudgementNode):
                node.validate()
            seen.add(id(node))
            order.append(node)
            on_path.add(id(node))
            return [(node, iter(edges(node)))]

        for root in roots:
            if id(root) in seen:
                continue
            stack = enter(root)
            while stack:
                node, children = stack[-1]
                child = next(children, None)
                if child is None:
                    on_path.discard(id(node))
                    stack.pop()
                elif id(child) in on_path:
                    raise MetricDefinitionError("Cycle detected in DAG graph.")
                elif id(child) not in seen:
                    stack += enter(child)
        return order

    def _topological(self, discovered: list[Any]) -> list[Any]:
        rank = {id(n): i for i, n in enumerate(discovered)}
        waiting = {id(n): len(self.parents[id(n)]) for n in discovered}
        ready = [n for n in discovered if waiting[id(n)] == 0]
        order: list[Any] = []
        while ready:
            ready.sort(key=lambda n: rank[id(n)])
            node = ready.pop(0)
            order.append(node)
            for child in edges(node):
                waiting[id(child)] -= 1
                if waiting[id(child)] == 0:
                    ready.append(child)
        return order

    @staticmethod
    def _assign_ids(order: list[Any]) -> dict[int, str]:
        ids: dict[int, str] = {}
        used: set[str] = set()
        counters: dict[str, int] = {}
        for node in order:
            label = getattr(node, "label", None)
            if label and label not in used:
                name = label
            else:
                prefix = _PREFIX.get(type(node)) or node.kind
                counters[prefix] = counters.get(prefix, 0) + 1
                name = f"{prefix}-{counters[prefix]}"
                while name in used:
                    counters[prefix] += 1
                    name = f"{prefix}-{counters[prefix]}"
            used.add(name)
            ids[id(node)] = name
        return ids

    def node_id(self, node: Any) -> str:
        return self.ids[id(node)]

    def evaluation_params(self) -> list[SingleTurnParams]:
        """Every field any node looks at, in prompt order: the case block all nodes share."""
        params: list[SingleTurnParams] = []
        for node in self.order:
            params += getattr(node, "evaluation_params", None) or []
        return ordered_params(params)

    def required_fields(self) -> list[SingleTurnParams]:
        """Every field any node reads: the judge's case block plus what code nodes read."""
        params = list(self.evaluation_params())
        for node in self.order:
            reader = getattr(node, "required_fields", None)
            if reader is not None:
                params += [p for p in reader() if p not in params]
        return params

    def metric_children(self) -> list[Any]:
        return [
            n.child
            for n in self.order
            if isinstance(n, VerdictNode)
            and n.child is not None
            and not isinstance(n.child, TaskNode | JudgementNode)
        ]

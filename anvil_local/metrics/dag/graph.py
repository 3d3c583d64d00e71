"""DeepAcyclicGraph: root rules, cycle and reachability checks, a fixed walk order.

The walk order is a topological order with ties broken by discovery order (roots in declared
order, children in declared order), so it never depends on hashing or on sync vs async.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Sequence
from typing import Any

from anvil_local.conversation import ConversationalTestCase, ordered_multi_turn
from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.metrics.dag import document
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    JudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
    is_node,
)
from anvil_local.testcase import LLMTestCase, ordered_params

logger = logging.getLogger(__name__)

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
    if isinstance(node, VerdictNode) and is_node(node.child):
        return [node.child]
    return []


def is_multiturn(node: Any) -> bool:
    """Whether a node belongs to a conversational DAG."""
    return bool(getattr(node, "multiturn", False))


class DeepAcyclicGraph:
    """A validated decision graph. `order` lists every node in walk order; `multiturn` says
    whether its nodes read a conversation (DeepEval's conversational nodes) or a single-turn
    case: one graph never mixes the two."""

    def __init__(self, root_nodes: Sequence[Any]) -> None:
        roots = list(root_nodes or [])
        if not roots:
            raise MetricDefinitionError("A DeepAcyclicGraph needs at least one root node.")
        self.multiturn = is_multiturn(roots[0])
        for root in roots:
            if not is_node(root):
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
        self._check_mode(discovered)
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
            if isinstance(node, NonBinaryJudgementNode):
                node._verdict_options = node.options()  # DeepEval's, read by ported code
            if isinstance(node, TaskNode) and not node.children:
                logger.warning(
                    "TaskNode %r has no children: its output is produced but never judged",
                    node.label or node.output_label,
                )
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

    def _check_mode(self, discovered: list[Any]) -> None:
        """Every node, and every metric under a verdict, of the graph's kind: conversational
        nodes and metrics in a conversational graph, single-turn ones otherwise."""
        if any(is_multiturn(n) != self.multiturn for n in discovered):
            raise MetricDefinitionError("You cannot mix multi and single turn nodes")
        case_type = ConversationalTestCase if self.multiturn else LLMTestCase
        for node in discovered:
            child = node.child if isinstance(node, VerdictNode) else None
            if child is None or is_node(child):
                continue
            if getattr(child, "case_type", LLMTestCase) is not case_type:
                wanted = "conversational" if self.multiturn else "single-turn"
                raise MetricDefinitionError(
                    f"a {wanted} DAG's verdict cannot lead to {type(child).__name__} "
                    f"{getattr(child, 'name', '')!r}: its metrics must be {wanted} too"
                )

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
                prefix = _PREFIX.get(type(node)) or getattr(node, "id_prefix", None) or node.kind
                counters[prefix] = counters.get(prefix, 0) + 1
                name = f"{prefix}-{counters[prefix]}"
                while name in used:
                    counters[prefix] += 1
                    name = f"{prefix}-{counters[prefix]}"
            used.add(name)
            ids[id(node)] = name
        return ids

    @functools.cached_property
    def indegree(self) -> dict[Any, int]:
        """DeepEval's count of each node's incoming edges, by node: the verdicts of one
        judgement leading to the same node count once (only one of them fires), unless a
        verdict is a root or hangs under two judgements. The walk runs a task or judgement
        node only once that many of its incoming edges have arrived (DeepEval's gating). Counted
        once per graph: the walk order and the parents it reads are fixed when it is built."""
        roots = {id(r) for r in self.root_nodes}
        counts: dict[Any, int] = {}
        for node in self.order:
            parents = self.parents[id(node)]
            owners: dict[int, int] = {}
            for parent in parents:
                above = self.parents[id(parent)] if isinstance(parent, VerdictNode) else []
                if id(parent) in roots or len(above) != 1:
                    continue
                if isinstance(above[0], JudgementNode):
                    owners[id(above[0])] = owners.get(id(above[0]), 0) + 1
            counts[node] = len(parents) - sum(n - 1 for n in owners.values())
        return counts

    def node_id(self, node: Any) -> str:
        return self.ids[id(node)]

    def evaluation_params(self) -> list[Any]:
        """Every field any node looks at, in prompt order: the case block all nodes share
        (SingleTurnParams, or MultiTurnParams in a conversational graph)."""
        params: list[Any] = []
        for node in self.order:
            params += getattr(node, "evaluation_params", None) or []
        return ordered_multi_turn(params) if self.multiturn else ordered_params(params)

    def required_fields(self) -> list[Any]:
        """Every field any node reads: the judge's case block plus what code nodes read."""
        params = list(self.evaluation_params())
        for node in self.order:
            reader = getattr(node, "required_fields", None)
            if reader is not None:
                params += [p for p in reader() if p not in params]
        return params

    # -- DeepEval's serialization methods (metrics.dag.serialization) ------------------

    def to_dict(self) -> dict[str, Any]:
        """DeepEval's DAG document for this graph (`dag_to_dict`)."""
        return document.dag_to_dict(self)

    def to_json(self, indent: int = 2) -> str:
        return document.dag_to_json(self, indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any], multiturn: bool = False) -> DeepAcyclicGraph:
        """The graph a DeepEval DAG document describes (`dag_from_dict`); `multiturn` picks
        the conversational node classes (the document itself does not say)."""
        return cls(document.document_roots(data, multiturn))

    @classmethod
    def from_json(cls, text: str, multiturn: bool = False) -> DeepAcyclicGraph:
        return cls.from_dict(json.loads(text), multiturn=multiturn)

    def metric_children(self) -> list[Any]:
        return [
            n.child
            for n in self.order
            if isinstance(n, VerdictNode) and n.child is not None and not is_node(n.child)
        ]

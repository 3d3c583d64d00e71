"""DAG metrics <-> plain dicts (the shape of a metric file).

```
{"type": "dag", "name": ..., "threshold": 0.5, "roots": ["extract"],   # roots optional
 "nodes": {
   "extract":  {"type": "task", "instructions": ..., "output_label": ...,
                "evaluation_params": ["actual_output"], "children": ["headings"]},
   "headings": {"type": "binary", "criteria": ...,
                "verdicts": [{"verdict": false, "score": 0}, {"verdict": true, "then": "order"}]},
   "order":    {"type": "non_binary", "criteria": ...,
                "verdicts": [{"verdict": "Yes", "score": 10}, ...]},
   "quality":  {"type": "geval", "name": ..., "criteria": ...}}}           # a verdict's `then`
```
Node types and metric types come from the registry: an entry whose type is a metric kind
(geval, dag, or a plugin's) is a metric hanging off a verdict. Errors name the node id. When
`roots` is absent, the roots are the nodes nothing points at. A conversational DAG
(`"type": "conversational_dag"`) has the same shape; its node types come from the
conversational registry and a node may hold a `turn_window`.

DeepEval's own DAG document (`dag_to_dict` and friends) is `metrics.dag.serialization`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from anvil_local.errors import AnvilError, MetricDefinitionError
from anvil_local.metrics.base import BaseMetric, definition_fields
from anvil_local.metrics.dag.graph import DeepAcyclicGraph
from anvil_local.metrics.dag.nodes import JudgementNode, TaskNode, VerdictNode
from anvil_local.metrics.definitions import metric_from_dict
from anvil_local.registry import CONVERSATIONAL_NODE_KINDS, METRIC_KINDS, NODE_KINDS, Registry


def _fail(node_id: str, message: str) -> MetricDefinitionError:
    return MetricDefinitionError(f"node {node_id!r}: {message}")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "metric"


def _is_node(obj: Any) -> bool:
    return isinstance(obj, TaskNode | JudgementNode)


# -- to dict ----------------------------------------------------------------------------


def graph_to_spec(dag: DeepAcyclicGraph) -> dict[str, Any]:
    """Nodes by id in walk order; verdicts inline under their judgement node; metrics that
    hang off verdicts last, under ids made from their names."""
    _check_writable(dag)
    nodes: dict[str, dict[str, Any]] = {}
    metric_ids: dict[int, str] = {}
    used = set(dag.ids.values())

    def name_of(obj: Any) -> str:
        if _is_node(obj):
            return dag.node_id(obj)
        if id(obj) not in metric_ids:
            base = _slug(obj.name)
            name, n = base, 1
            while name in used:
                n += 1
                name = f"{base}-{n}"
            used.add(name)
            metric_ids[id(obj)] = name
        return metric_ids[id(obj)]

    for node in dag.order:
        if not _is_node(node):
            continue
        spec = node.to_spec(name_of)
        if node.evaluation_params:
            spec["evaluation_params"] = [p.value for p in node.evaluation_params]
        nodes[dag.node_id(node)] = spec
    for metric in dag.metric_children():
        nodes[name_of(metric)] = metric.to_dict()
    return {"roots": [dag.node_id(r) for r in dag.root_nodes], "nodes": nodes}


def _check_writable(dag: DeepAcyclicGraph) -> None:
    """A metric file holds verdicts inline under their judgement node; the verdicts DeepEval
    also allows elsewhere (a root, or a verdict's child) have no place in one."""
    for node in dag.order:
        if not isinstance(node, VerdictNode):
            continue
        if any(node is root for root in dag.root_nodes) or isinstance(node.child, VerdictNode):
            raise MetricDefinitionError(
                "a metric file holds verdicts only under judgement nodes; this graph has a "
                "root verdict or a verdict under a verdict (keep it in Python, or save it as "
                "DeepEval's document with dag.to_json())"
            )


def dag_metric_to_dict(metric: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": metric.kind,
        "name": metric.name,
        "threshold": metric.threshold,
        "include_reason": metric.include_reason,
        "strict_mode": metric.strict_mode,
    }
    if metric.soft:
        data.update(soft=True, soft_floor=metric.soft_floor)
    data.update(graph_to_spec(metric.dag))
    return data


# -- from dict --------------------------------------------------------------------------


def node_kinds(multiturn: bool) -> Registry[Any]:
    """The registry of a graph's node types: conversational, or single-turn."""
    return CONVERSATIONAL_NODE_KINDS if multiturn else NODE_KINDS


def graph_from_spec(data: dict[str, Any], multiturn: bool = False) -> DeepAcyclicGraph:
    """The graph of a metric dict's `roots` and `nodes` (conversational nodes with
    `multiturn`)."""
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        raise MetricDefinitionError("a DAG needs a non-empty 'nodes' table")
    registry = node_kinds(multiturn)
    kinds, metrics = registry.entries(), METRIC_KINDS.entries()
    specs: dict[str, dict[str, Any]] = {}
    for node_id, spec in raw_nodes.items():
        if not isinstance(spec, dict):
            raise _fail(node_id, "must be a table")
        kind = spec.get("type")
        if kind not in kinds and kind not in metrics:
            expected = ", ".join([*kinds, *sorted(metrics)])
            raise _fail(node_id, f"unknown type {kind!r} (expected one of: {expected})")
        specs[str(node_id)] = spec

    objects = {node_id: _make(node_id, spec, registry) for node_id, spec in specs.items()}
    references: dict[str, list[str]] = {node_id: [] for node_id in specs}

    for node_id, spec in specs.items():
        obj = objects[node_id]
        if not _is_node(obj):
            continue

        def ref(target: Any, what: str, owner: str = node_id) -> Any:
            if not isinstance(target, str) or target not in objects:
                raise _fail(owner, f"{what} names unknown node {target!r}")
            references[owner].append(target)
            return objects[target]

        with _about(node_id):
            obj.link(spec, ref)
    for node_id, obj in objects.items():
        if isinstance(obj, TaskNode):
            with _about(node_id):
                obj.validate()
    referenced = {t for targets in references.values() for t in targets}
    for node_id, obj in objects.items():
        if not _is_node(obj) and node_id not in referenced:
            raise _fail(node_id, f"a {obj.kind} node must be the 'then' of a verdict")

    _check_cycles(references)
    roots_spec = data.get("roots")
    if roots_spec is None:
        roots = [n for n in specs if n not in referenced]
        if not roots:
            raise MetricDefinitionError("no root node: every node is some node's child")
    else:
        if not isinstance(roots_spec, list) or not roots_spec:
            raise MetricDefinitionError("'roots' must be a non-empty list of node ids")
        for root in roots_spec:
            if root not in objects:
                raise MetricDefinitionError(f"'roots' names unknown node {root!r}")
            if not _is_node(objects[root]):
                raise _fail(root, f"a {objects[root].kind} node cannot be a root")
        roots = list(roots_spec)
        reachable = _reachable(roots, references)
        for node_id in specs:
            if node_id not in reachable:
                raise _fail(node_id, "is not reachable from any root")
    return DeepAcyclicGraph([objects[r] for r in roots])


def _make(node_id: str, spec: dict[str, Any], registry: Registry[Any]) -> Any:
    """The object of one node table entry: a node of a registered type, or a metric."""
    kind = registry.find(spec["type"])
    with _about(node_id):
        if kind is None:
            return metric_from_dict(spec)
        unknown = sorted(set(spec) - kind.fields)
        if unknown:
            raise MetricDefinitionError(f"unknown field(s): {', '.join(unknown)}")
        return kind.cls.from_spec(spec, label=spec.get("label") or node_id)


@contextmanager
def _about(node_id: str) -> Iterator[None]:
    """Prefix any definition error raised inside with the node id."""
    try:
        yield
    except (AnvilError, TypeError, ValueError) as exc:
        if str(exc).startswith("node "):
            raise
        raise _fail(node_id, str(exc)) from exc


def _check_cycles(references: dict[str, list[str]]) -> None:
    """Depth-first with an explicit stack (a chain of thousands of nodes is valid)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in references:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(references[start]))]
        while stack:
            node_id, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                state[node_id] = 2
                stack.pop()
            elif state.get(target) == 1:
                raise MetricDefinitionError(
                    f"Cycle detected in DAG graph (through node {target!r})."
                )
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(references[target])))


def _reachable(roots: list[str], references: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        node_id = stack.pop()
        if node_id not in seen:
            seen.add(node_id)
            stack.extend(references[node_id])
    return seen


def dag_metric_kwargs(data: dict[str, Any], cls: type[BaseMetric]) -> dict[str, Any]:
    """The keyword arguments of a DAG metric class for a metric dict: the graph from
    `roots` and `nodes`, the rest from the class's definition fields."""
    fields = definition_fields(cls)
    scalars = fields.accepted - {"dag"}
    unknown = sorted(set(data) - scalars - {"type", "roots", "nodes"})
    if unknown:
        raise MetricDefinitionError(f"unknown {cls.title} field(s): {', '.join(unknown)}")
    if "name" not in data:
        raise MetricDefinitionError(f"a {cls.title} needs a 'name'")
    kwargs = {k: v for k, v in data.items() if k in scalars}
    return {"dag": graph_from_spec(data, getattr(cls, "multiturn", False)), **kwargs}

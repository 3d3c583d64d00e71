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
Errors name the node id. When `roots` is absent, the roots are the nodes nothing points at.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from anvil_local.errors import AnvilError, MetricDefinitionError
from anvil_local.metrics.dag.graph import DeepAcyclicGraph
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    JudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from anvil_local.metrics.geval import GEval

NODE_TYPES = ("task", "binary", "non_binary", "geval")
_METRIC_KEYS = ("name", "threshold", "include_reason", "strict_mode", "soft", "soft_floor")


def _fail(node_id: str, message: str) -> MetricDefinitionError:
    return MetricDefinitionError(f"node {node_id!r}: {message}")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "metric"


# -- to dict ----------------------------------------------------------------------------


def dag_to_dict(dag: DeepAcyclicGraph) -> dict[str, Any]:
    """Nodes by id in walk order; verdicts inline under their judgement node."""
    nodes: dict[str, dict[str, Any]] = {}
    metric_ids: dict[int, str] = {}
    used = set(dag.ids.values())

    def metric_id(metric: Any) -> str:
        if id(metric) not in metric_ids:
            base = _slug(metric.name)
            name, n = base, 1
            while name in used:
                n += 1
                name = f"{base}-{n}"
            used.add(name)
            metric_ids[id(metric)] = name
        return metric_ids[id(metric)]

    for node in dag.order:
        node_id = dag.node_id(node)
        params = (
            [p.value for p in node.evaluation_params]
            if getattr(node, "evaluation_params", None)
            else None
        )
        if isinstance(node, TaskNode):
            spec: dict[str, Any] = {
                "type": "task",
                "instructions": node.instructions,
                "output_label": node.output_label,
                "children": [dag.node_id(c) for c in node.children],
            }
        elif isinstance(node, JudgementNode):
            verdicts = []
            for child in node.children:
                item: dict[str, Any] = {"verdict": child.verdict}
                if child.score is not None:
                    item["score"] = child.score
                elif isinstance(child.child, TaskNode | JudgementNode):
                    item["then"] = dag.node_id(child.child)
                else:
                    item["then"] = metric_id(child.child)
                verdicts.append(item)
            kind = "binary" if isinstance(node, BinaryJudgementNode) else "non_binary"
            spec = {"type": kind, "criteria": node.criteria, "verdicts": verdicts}
        else:
            continue
        if params:
            spec["evaluation_params"] = params
        nodes[node_id] = spec
    for metric in dag.metric_children():
        nodes[metric_id(metric)] = metric.to_dict()
    return {"roots": [dag.node_id(r) for r in dag.root_nodes], "nodes": nodes}


def dag_metric_to_dict(metric: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "type": "dag",
        "name": metric.name,
        "threshold": metric.threshold,
        "include_reason": metric.include_reason,
        "strict_mode": metric.strict_mode,
    }
    if metric.soft:
        data.update(soft=True, soft_floor=metric.soft_floor)
    data.update(dag_to_dict(metric.dag))
    return data


# -- from dict --------------------------------------------------------------------------


def dag_from_dict(data: dict[str, Any]) -> DeepAcyclicGraph:
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, dict) or not raw_nodes:
        raise MetricDefinitionError("a DAG needs a non-empty 'nodes' table")
    specs: dict[str, dict[str, Any]] = {}
    for node_id, spec in raw_nodes.items():
        if not isinstance(spec, dict):
            raise _fail(node_id, "must be a table")
        kind = spec.get("type")
        if kind not in NODE_TYPES:
            raise _fail(
                node_id, f"unknown type {kind!r} (expected one of: {', '.join(NODE_TYPES)})"
            )
        specs[str(node_id)] = spec

    objects = {node_id: _make(node_id, spec) for node_id, spec in specs.items()}
    references: dict[str, list[str]] = {node_id: [] for node_id in specs}

    def ref(owner: str, target: Any, what: str) -> Any:
        if not isinstance(target, str) or target not in objects:
            raise _fail(owner, f"{what} names unknown node {target!r}")
        references[owner].append(target)
        return objects[target]

    for node_id, spec in specs.items():
        obj = objects[node_id]
        with _about(node_id):
            if isinstance(obj, TaskNode):
                children = spec.get("children")
                if not isinstance(children, list):
                    raise MetricDefinitionError("a task node needs a 'children' list of node ids")
                for child_id in children:
                    child = ref(node_id, child_id, "'children'")
                    if isinstance(child, GEval):
                        raise MetricDefinitionError(
                            f"a task node's child cannot be a metric ({child_id!r})"
                        )
                    obj.children.append(child)
            elif isinstance(obj, JudgementNode):
                verdicts = spec.get("verdicts")
                if not isinstance(verdicts, list):
                    raise MetricDefinitionError("a judgement node needs a 'verdicts' list")
                for item in verdicts:
                    obj.children.append(_verdict(node_id, item, ref))
                obj.validate()
    for node_id, obj in objects.items():
        if isinstance(obj, TaskNode):
            with _about(node_id):
                obj.validate()
    referenced = {t for targets in references.values() for t in targets}
    for node_id, obj in objects.items():
        if isinstance(obj, GEval) and node_id not in referenced:
            raise _fail(node_id, "a geval node must be the 'then' of a verdict")

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
            if isinstance(objects[root], GEval):
                raise _fail(root, "a geval node cannot be a root")
        roots = list(roots_spec)
        reachable = _reachable(roots, references)
        for node_id in specs:
            if node_id not in reachable:
                raise _fail(node_id, "is not reachable from any root")
    return DeepAcyclicGraph([objects[r] for r in roots])


def _make(node_id: str, spec: dict[str, Any]) -> Any:
    kind = spec["type"]
    allowed = {
        "task": {"type", "instructions", "output_label", "children", "evaluation_params", "label"},
        "binary": {"type", "criteria", "verdicts", "evaluation_params", "label"},
        "non_binary": {"type", "criteria", "verdicts", "evaluation_params", "label"},
    }
    with _about(node_id):
        if kind == "geval":
            return GEval.from_dict(spec)
        unknown = sorted(set(spec) - allowed[kind])
        if unknown:
            raise MetricDefinitionError(f"unknown field(s): {', '.join(unknown)}")
        label = spec.get("label") or node_id
        params = spec.get("evaluation_params")
        if kind == "task":
            return TaskNode(
                instructions=spec.get("instructions"),  # type: ignore[arg-type]
                output_label=spec.get("output_label"),  # type: ignore[arg-type]
                evaluation_params=params,
                label=label,
            )
        cls = BinaryJudgementNode if kind == "binary" else NonBinaryJudgementNode
        return cls(criteria=spec.get("criteria"), evaluation_params=params, label=label)  # type: ignore[arg-type]


@contextmanager
def _about(node_id: str) -> Iterator[None]:
    """Prefix any definition error raised inside with the node id."""
    try:
        yield
    except (AnvilError, TypeError, ValueError) as exc:
        if str(exc).startswith("node "):
            raise
        raise _fail(node_id, str(exc)) from exc


def _verdict(node_id: str, item: Any, ref: Any) -> VerdictNode:
    if not isinstance(item, dict) or "verdict" not in item:
        raise _fail(node_id, "each verdict needs a 'verdict' key")
    unknown = sorted(set(item) - {"verdict", "score", "then"})
    if unknown:
        raise _fail(node_id, f"unknown verdict field(s): {', '.join(unknown)}")
    child = ref(node_id, item["then"], "a verdict's 'then'") if "then" in item else None
    return VerdictNode(verdict=item["verdict"], score=item.get("score"), child=child)


def _check_cycles(references: dict[str, list[str]]) -> None:
    state: dict[str, int] = {}

    def visit(node_id: str) -> None:
        state[node_id] = 1
        for target in references[node_id]:
            if state.get(target) == 1:
                raise MetricDefinitionError(
                    f"Cycle detected in DAG graph (through node {target!r})."
                )
            if target not in state:
                visit(target)
        state[node_id] = 2

    for node_id in references:
        if node_id not in state:
            visit(node_id)


def _reachable(roots: list[str], references: dict[str, list[str]]) -> set[str]:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        node_id = stack.pop()
        if node_id not in seen:
            seen.add(node_id)
            stack.extend(references[node_id])
    return seen


def dag_metric_from_dict(data: dict[str, Any]) -> Any:
    from anvil_local.metrics.dag.metric import DAGMetric

    known = {"type", "roots", "nodes", *_METRIC_KEYS}
    unknown = sorted(set(data) - known)
    if unknown:
        raise MetricDefinitionError(f"unknown DAG metric field(s): {', '.join(unknown)}")
    if "name" not in data:
        raise MetricDefinitionError("a DAG metric needs a 'name'")
    kwargs = {k: data[k] for k in _METRIC_KEYS if k in data}
    return DAGMetric(dag=dag_from_dict(data), **kwargs)

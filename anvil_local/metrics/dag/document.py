"""DeepEval's DAG document <-> our node objects (the work behind `serialization`).

See `anvil_local.metrics.dag.serialization` for the document's shape and where we differ
from DeepEval. This module builds and reads nodes only, so the graph class can use it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import deque
from enum import StrEnum
from typing import Any

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.metrics.dag.deprecation import quiet_bottom_up
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    JudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
    is_node,
)
from anvil_local.registry import METRIC_KINDS


class NodeType(StrEnum):
    """A node's `type` in DeepEval's document."""

    TASK = "TaskNode"
    BINARY_JUDGEMENT = "BinaryJudgementNode"
    NON_BINARY_JUDGEMENT = "NonBinaryJudgementNode"
    VERDICT = "VerdictNode"


class ChildType(StrEnum):
    """What a VerdictNode's `child` is: another node, a GEval, or another metric."""

    NODE = "node"
    GEVAL = "geval"
    METRIC = "metric"


#: The GEval arguments a document carries (what both tools' GEval take).
GEVAL_KEYS = (
    "name",
    "evaluation_params",
    "criteria",
    "evaluation_steps",
    "threshold",
    "strict_mode",
)
#: DeepEval GEval arguments that say how DeepEval runs, not what is judged: read and dropped.
DEEPEVAL_ONLY_GEVAL_KEYS = frozenset(
    {
        "model",
        "top_logprobs",
        "async_mode",
        "verbose_mode",
        "_include_g_eval_suffix",
        "flaky",
        "evaluation_template",
        "_audio_model",
    }
)
_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "anvil-local:dag-serialization")


def node_classes(multiturn: bool) -> dict[NodeType, type]:
    """The node classes a document's types build: single-turn or conversational."""
    if multiturn:
        from anvil_local.metrics.conversational.nodes import (
            ConversationalBinaryJudgementNode,
            ConversationalNonBinaryJudgementNode,
            ConversationalTaskNode,
            ConversationalVerdictNode,
        )

        return {
            NodeType.TASK: ConversationalTaskNode,
            NodeType.BINARY_JUDGEMENT: ConversationalBinaryJudgementNode,
            NodeType.NON_BINARY_JUDGEMENT: ConversationalNonBinaryJudgementNode,
            NodeType.VERDICT: ConversationalVerdictNode,
        }
    return {
        NodeType.TASK: TaskNode,
        NodeType.BINARY_JUDGEMENT: BinaryJudgementNode,
        NodeType.NON_BINARY_JUDGEMENT: NonBinaryJudgementNode,
        NodeType.VERDICT: VerdictNode,
    }


def _geval_classes(multiturn: bool) -> type:
    if multiturn:
        from anvil_local.metrics.conversational.geval import ConversationalGEval

        return ConversationalGEval
    from anvil_local.metrics.geval import GEval

    return GEval


# -- to a document ------------------------------------------------------------------------


def dag_to_dict(dag: Any) -> dict[str, Any]:
    """The graph (a DeepAcyclicGraph) as DeepEval's document: nodes breadth-first from the
    roots."""
    if not hasattr(dag, "root_nodes") or not hasattr(dag, "multiturn"):
        raise MetricTypeError(f"dag_to_dict needs a DeepAcyclicGraph, got {type(dag).__name__}")
    kinds = {cls: kind for kind, cls in node_classes(dag.multiturn).items()}
    ordered = _breadth_first(dag.root_nodes)
    for node in ordered:
        if type(node) not in kinds:
            raise MetricDefinitionError(
                f"Unsupported node class '{type(node).__name__}'; cannot serialize."
            )
    # ids: positions first, then uuid5 over the whole document and the position
    slots = {id(node): f"#{i}" for i, node in enumerate(ordered)}
    draft = [_node_dict(node, kinds[type(node)], slots) for node in ordered]
    digest = hashlib.sha256(json.dumps(draft, sort_keys=True).encode()).hexdigest()
    ids = {f"#{i}": str(uuid.uuid5(_NAMESPACE, f"{digest}:{i}")) for i in range(len(ordered))}
    return {"nodes": {ids[f"#{i}"]: _renamed(spec, ids) for i, spec in enumerate(draft)}}


def dag_to_json(dag: Any, indent: int = 2) -> str:
    return json.dumps(dag_to_dict(dag), indent=indent)


def _breadth_first(roots: list[Any]) -> list[Any]:
    """Every node reachable from the roots once, breadth-first (DeepEval's order)."""
    seen: set[int] = set()
    ordered: list[Any] = []
    queue: deque[Any] = deque(roots)
    while queue:
        node = queue.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        ordered.append(node)
        if isinstance(node, TaskNode | JudgementNode):
            queue.extend(node.children)
        elif is_node(node.child):
            queue.append(node.child)
    return ordered


def _params(values: Any) -> list[str] | None:
    return None if values is None else [p.value for p in values]


def _node_dict(node: Any, kind: NodeType, slots: dict[int, str]) -> dict[str, Any]:
    if kind is NodeType.VERDICT:
        out: dict[str, Any] = {"type": kind.value, "verdict": node.verdict}
        if node.score is not None:
            out["score"] = node.score
        if node.child is not None:
            out["child"] = _child_dict(node.child, slots)
        return out
    if kind is NodeType.TASK:
        out = {
            "type": kind.value,
            "instructions": node.instructions,
            "output_label": node.output_label,
        }
    else:
        out = {"type": kind.value, "criteria": node.criteria}
    out.update(
        label=node.label,
        evaluation_params=_params(node.evaluation_params),
        children=[slots[id(c)] for c in node.children],
    )
    if getattr(node, "turn_window", None) is not None:
        out["turn_window"] = list(node.turn_window)
    return out


def _child_dict(child: Any, slots: dict[int, str]) -> dict[str, Any]:
    if is_node(child):
        return {"type": ChildType.NODE.value, "ref": slots[id(child)]}
    data = child.to_dict()
    if data.get("type") in ("geval", "conversational_geval"):
        payload = {"type": ChildType.GEVAL.value}
        payload.update({k: data.get(k) for k in GEVAL_KEYS})
        return payload
    kwargs = {k: v for k, v in data.items() if k != "type"}
    return {"type": ChildType.METRIC.value, "metric_class": type(child).__name__, "kwargs": kwargs}


def _renamed(spec: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """A draft node dict with its position references turned into ids."""
    out = dict(spec)
    if "children" in out:
        out["children"] = [ids[c] for c in out["children"]]
    child = out.get("child")
    if isinstance(child, dict) and child.get("type") == ChildType.NODE.value:
        out["child"] = {"type": ChildType.NODE.value, "ref": ids[child["ref"]]}
    return out


# -- from a document ----------------------------------------------------------------------


def document_roots(data: Any, multiturn: bool = False) -> list[Any]:
    """The root nodes of the graph a DeepEval DAG document describes, every node built;
    `multiturn` builds conversational nodes. The roots are the nodes nothing refers to, in
    document order."""
    if not isinstance(data, dict) or "nodes" not in data:
        raise MetricDefinitionError(
            "Invalid DAG document: expected a top-level object with a 'nodes' key."
        )
    specs = data["nodes"]
    if not isinstance(specs, dict) or not specs:
        raise MetricDefinitionError("Invalid DAG document: 'nodes' must be a non-empty object.")
    for node_id, spec in specs.items():
        if not isinstance(spec, dict) or "type" not in spec:
            raise MetricDefinitionError(f"Node '{node_id}' is missing required 'type' field.")
        if spec["type"] not in {t.value for t in NodeType}:
            valid = ", ".join(t.value for t in NodeType)
            raise MetricDefinitionError(
                f"Node '{node_id}' has unknown type '{spec['type']}'. Expected one of: {valid}."
            )
    edges = {node_id: _references(node_id, spec) for node_id, spec in specs.items()}
    referenced = {target for targets in edges.values() for target in targets}
    for target in referenced:
        if target not in specs:
            raise MetricDefinitionError(f"Reference to unknown node id '{target}'.")
    roots = [node_id for node_id in specs if node_id not in referenced]
    if not roots:
        raise MetricDefinitionError(
            "No root nodes detected (every node is referenced as a child); graph would be "
            "empty or contain a cycle."
        )
    classes = node_classes(multiturn)
    built: dict[str, Any] = {}
    for node_id in _children_first(specs, edges):
        built[node_id] = _build(node_id, specs[node_id], classes, built, multiturn)
    return [built[r] for r in roots]


def _references(node_id: str, spec: dict[str, Any]) -> list[str]:
    """The node ids a spec refers to: its children, or its verdict's node child."""
    if spec["type"] != NodeType.VERDICT.value:
        children = spec.get("children", [])
        if children is None:
            return []
        if not isinstance(children, list) or not all(isinstance(c, str) for c in children):
            raise MetricDefinitionError(f"Node '{node_id}': 'children' must be a list of ids.")
        return list(children)
    child = spec.get("child")
    if isinstance(child, dict) and child.get("type") == ChildType.NODE.value:
        ref = child.get("ref")
        if not isinstance(ref, str):
            raise MetricDefinitionError("VerdictNode child of type 'node' requires 'ref'.")
        return [ref]
    return []


def _children_first(specs: dict[str, Any], edges: dict[str, list[str]]) -> list[str]:
    """Every node id, each after all the nodes it refers to (depth-first with an explicit
    stack: a chain of thousands of nodes is a valid graph); a cycle is an error."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    order: list[str] = []
    for start in specs:
        if start in state:
            continue
        state[start] = 1
        stack = [(start, iter(edges[start]))]
        while stack:
            node_id, targets = stack[-1]
            target = next(targets, None)
            if target is None:
                state[node_id] = 2
                order.append(node_id)
                stack.pop()
            elif state.get(target) == 1:
                raise MetricDefinitionError(
                    f"Cycle detected in JSON refs involving node '{target}'."
                )
            elif target not in state:
                state[target] = 1
                stack.append((target, iter(edges[target])))
    return order


def _field(node_id: str, spec: dict[str, Any], key: str) -> Any:
    if key not in spec:
        raise MetricDefinitionError(f"Node '{node_id}' ({spec['type']}) is missing '{key}'.")
    return spec[key]


def _common(node_id: str, spec: dict[str, Any], multiturn: bool) -> dict[str, Any]:
    """label, evaluation_params and turn_window, as DeepEval reads them."""
    kwargs: dict[str, Any] = {}
    if spec.get("label") is not None:
        kwargs["label"] = spec["label"]
    if "evaluation_params" in spec:
        kwargs["evaluation_params"] = _enum_params(spec["evaluation_params"], multiturn)
    if spec.get("turn_window") is not None:
        if not multiturn:
            raise MetricDefinitionError(
                f"Node '{node_id}' has a turn_window, which only conversational nodes read: "
                "load the document with multiturn=True."
            )
        kwargs["turn_window"] = tuple(spec["turn_window"])
    return kwargs


def _enum_params(values: Any, multiturn: bool) -> list[Any] | None:
    if values is None:
        return None
    if multiturn:
        from anvil_local.conversation import MultiTurnParams as enum
    else:
        from anvil_local.testcase import SingleTurnParams as enum  # type: ignore[assignment]
    if not isinstance(values, list):
        raise MetricDefinitionError("'evaluation_params' must be a list.")
    out = []
    for value in values:
        try:
            out.append(enum(value))
        except ValueError:
            valid = ", ".join(p.value for p in enum)
            raise MetricDefinitionError(
                f"Unknown evaluation_param '{value}'. Expected one of: {valid}."
            ) from None
    return out


def _build(
    node_id: str,
    spec: dict[str, Any],
    classes: dict[NodeType, type],
    built: dict[str, Any],
    multiturn: bool,
) -> Any:
    kind = NodeType(spec["type"])
    cls = classes[kind]
    if kind is NodeType.VERDICT:
        return _verdict(spec, cls, built, multiturn)
    children = [built[c] for c in spec.get("children") or []]
    kwargs = _common(node_id, spec, multiturn)
    if kind is NodeType.TASK:
        kwargs.update(
            instructions=_field(node_id, spec, "instructions"),
            output_label=_field(node_id, spec, "output_label"),
        )
    else:
        kwargs["criteria"] = _field(node_id, spec, "criteria")
    with quiet_bottom_up():  # a document is bottom-up by nature, not the user's choice
        return cls(children=children, **kwargs)


def _verdict(spec: dict[str, Any], cls: type, built: dict[str, Any], multiturn: bool) -> Any:
    verdict = spec.get("verdict")
    if spec.get("score") is not None:
        return cls(verdict=verdict, score=spec["score"])
    child = spec.get("child")
    if child is None:
        raise MetricDefinitionError("VerdictNode spec must have either 'score' or 'child'.")
    if not isinstance(child, dict) or "type" not in child:
        raise MetricDefinitionError("VerdictNode 'child' must be an object with a 'type' field.")
    if child["type"] not in {c.value for c in ChildType}:
        valid = ", ".join(c.value for c in ChildType)
        raise MetricDefinitionError(
            f"VerdictNode child has unknown type '{child['type']}'. Expected one of: {valid}."
        )
    kind = ChildType(child["type"])
    if kind is ChildType.NODE:
        target = built[child["ref"]]
    elif kind is ChildType.GEVAL:
        target = _geval(child, multiturn)
    else:
        target = _metric(child)
    return cls(verdict=verdict, child=target)


def _geval(child: dict[str, Any], multiturn: bool) -> Any:
    """The GEval (ConversationalGEval when multiturn) a child spec holds; DeepEval's own
    run settings are dropped, its rubric kept when given."""
    cls = _geval_classes(multiturn)
    kwargs = {k: v for k, v in child.items() if k != "type" and k not in DEEPEVAL_ONLY_GEVAL_KEYS}
    if kwargs.get("rubric") is None:
        kwargs.pop("rubric", None)
    accepted = {*GEVAL_KEYS, "rubric"}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise MetricTypeError(f"{cls.__name__} got an unexpected keyword argument '{unknown[0]}'")
    if "evaluation_params" in kwargs:
        kwargs["evaluation_params"] = _enum_params(kwargs["evaluation_params"], multiturn)
    return cls(**kwargs)


def _metric(child: dict[str, Any]) -> Any:
    """A metric child by its class name, among the registered metric kinds."""
    name = child.get("metric_class")
    if not isinstance(name, str) or not name:
        raise MetricDefinitionError("Metric child requires a non-empty 'metric_class' field.")
    by_class = {cls.__name__: (kind, cls) for kind, cls in METRIC_KINDS.entries().items()}
    if name not in by_class:
        raise MetricDefinitionError(
            f"Unknown metric_class '{name}'. It must be a registered anvil-local metric kind "
            f"(one of: {', '.join(sorted(by_class))})."
        )
    kind, cls = by_class[name]
    kwargs = child.get("kwargs") or {}
    if not isinstance(kwargs, dict):
        raise MetricDefinitionError("Metric child 'kwargs' must be an object.")
    return cls.from_dict({**kwargs, "type": kind})

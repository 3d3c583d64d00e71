"""DeepEval's DAG JSON <-> our metric dict shape, both ways.

DeepEval's shape is what `DeepAcyclicGraph.to_dict()` / `dag_to_dict` write and `dag_from_dict` /
`dag_from_json` read (deepeval/metrics/dag/serialization/serialization.py): `{"nodes": {id: spec}}`,
where every node, VerdictNodes included, is an entry; or the platform's upload wrapper
`{"name", "algorithm": "DAG", "multiTurn", "dag": {...}}` (deepeval/metrics/dag/utils.py).
`convert()` reads it, `to_deepeval()` writes it.

A conversational DAG (DeepEval's ConversationalDAGMetric) has the same shape, its nodes
possibly with a `turn_window`; it becomes a `conversational_dag` metric dict. The upload
wrapper says which a document is (`multiTurn`); a bare document is conversational when a node
holds a `turn_window` or names a param only conversations have (role, content, scenario,
expected_outcome, chatbot_role, user_description).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from anvil_local.conversation import MultiTurnParams
from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.conversational.dag import ConversationalDAGMetric
from anvil_local.metrics.dag.metric import DAGMetric
from anvil_local.registry import CONVERSATIONAL_NODE_KINDS, NODE_KINDS
from anvil_local.testcase import SingleTurnParams

_TYPES = {
    "TaskNode": "task",
    "BinaryJudgementNode": "binary",
    "NonBinaryJudgementNode": "non_binary",
}
_GEVAL_KEYS = (
    "name",
    "evaluation_params",
    "criteria",
    "evaluation_steps",
    "threshold",
    "strict_mode",
)
_KINDS = {ours: theirs for theirs, ours in _TYPES.items()}
#: Params only a conversation has: a bare document naming one is conversational.
_MULTI_TURN_ONLY = {p.value for p in MultiTurnParams} - {p.value for p in SingleTurnParams}
_METRIC_TYPES = {False: ("dag", "geval"), True: ("conversational_dag", "conversational_geval")}
#: Fixed namespace for the exported node ids, so an export never changes between runs.
_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "anvil-local:deepeval-dag-export")


def is_deepeval_dag(data: Any) -> bool:
    """True for DeepEval's shape: node specs typed "TaskNode", "VerdictNode", ..."""
    if isinstance(data, dict) and isinstance(data.get("dag"), dict):
        data = data["dag"]
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict) or not nodes:
        return False
    kinds = {spec.get("type") for spec in nodes.values() if isinstance(spec, dict)}
    return bool(kinds & {*_TYPES, "VerdictNode"})


def is_multi_turn(document: dict[str, Any]) -> bool:
    """Whether a bare DeepEval DAG document is a conversational one (see the module)."""
    for spec in document.get("nodes", {}).values():
        if not isinstance(spec, dict):
            continue
        child = spec.get("child") if isinstance(spec.get("child"), dict) else {}
        params = [*(spec.get("evaluation_params") or []), *(child.get("evaluation_params") or [])]
        if spec.get("turn_window") is not None or set(params) & _MULTI_TURN_ONLY:
            return True
    return False


def convert(data: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """DeepEval's DAG document -> our metric dict (ids become labels or short names); a
    conversational document becomes a `conversational_dag`."""
    if isinstance(data.get("dag"), dict):
        multi_turn = bool(data.get("multiTurn"))
        name = name or data.get("name")
        data = data["dag"]
    else:
        multi_turn = is_multi_turn(data)
    nodes = data.get("nodes")
    if not isinstance(nodes, dict) or not nodes:
        raise MetricDefinitionError(
            "Invalid DAG document: expected a top-level object with a 'nodes' key."
        )
    dag_type, geval_type = _METRIC_TYPES[multi_turn]
    ids = _short_ids(nodes)
    out: dict[str, dict[str, Any]] = {}
    for raw_id, spec in nodes.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "VerdictNode":
            continue
        if kind not in _TYPES:
            raise MetricDefinitionError(
                f"Node '{raw_id}' has unknown type '{kind}'. Expected one of: TaskNode, "
                "BinaryJudgementNode, NonBinaryJudgementNode, VerdictNode."
            )
        # The id carries the label (a node's label defaults to its id), so no "label" key.
        node: dict[str, Any] = {"type": _TYPES[kind]}
        if spec.get("evaluation_params"):
            node["evaluation_params"] = list(spec["evaluation_params"])
        if spec.get("turn_window") is not None:
            if not multi_turn:
                raise MetricDefinitionError(
                    f"Node '{raw_id}' has a turn_window, which only a multi-turn "
                    "(conversational) DAG's nodes read."
                )
            node["turn_window"] = list(spec["turn_window"])
        children = spec.get("children") or []
        for child in children:
            if child not in nodes:
                raise MetricDefinitionError(f"Reference to unknown node id '{child}'.")
        if kind == "TaskNode":
            for child in children:
                if _is_verdict(nodes[child]):
                    raise MetricDefinitionError(
                        f"TaskNode '{raw_id}' has VerdictNode '{child}' among its children: "
                        "a TaskNode's children must be TaskNodes or judgement nodes."
                    )
            node.update(
                instructions=spec.get("instructions"),
                output_label=spec.get("output_label"),
                children=[ids[c] for c in children],
            )
        else:
            node["criteria"] = spec.get("criteria")
            node["verdicts"] = [_verdict(nodes, ids, c, out, geval_type) for c in children]
        out[ids[raw_id]] = node
    metric: dict[str, Any] = {"type": dag_type, "name": name or "DAG", "nodes": out}
    return metric


def _is_verdict(spec: Any) -> bool:
    return isinstance(spec, dict) and spec.get("type") == "VerdictNode"


def _verdict(
    nodes: dict[str, Any],
    ids: dict[str, str],
    raw_id: str,
    out: dict[str, dict[str, Any]],
    geval_type: str = "geval",
) -> dict[str, Any]:
    spec = nodes[raw_id]
    if not _is_verdict(spec):
        raise MetricDefinitionError(f"judgement child '{raw_id}' is not a VerdictNode")
    item: dict[str, Any] = {"verdict": spec.get("verdict")}
    if spec.get("score") is not None:
        item["score"] = spec["score"]
        return item
    child = spec.get("child")
    if not isinstance(child, dict) or "type" not in child:
        raise MetricDefinitionError("VerdictNode spec must have either 'score' or 'child'.")
    if child["type"] == "node":
        ref = child.get("ref")
        if not isinstance(ref, str) or ref not in nodes:
            raise MetricDefinitionError(f"Reference to unknown node id '{ref}'.")
        if _is_verdict(nodes[ref]):
            raise MetricDefinitionError(
                f"VerdictNode '{raw_id}' has VerdictNode '{ref}' as its child: a verdict's "
                "child must be a TaskNode, a judgement node or a GEval."
            )
        item["then"] = ids[ref]
    elif child["type"] == "geval":
        geval = {k: child[k] for k in _GEVAL_KEYS if child.get(k) is not None}
        geval["type"] = geval_type
        # DeepEval has no GEval nodes: a GEval shared by several verdicts is written once per
        # verdict. Identical copies become one node again, so an export imports back unchanged.
        same = next((k for k, v in out.items() if v == geval), None)
        if same is not None:
            geval_id = same
        elif "name" in geval:
            geval_id = _slug_unique(geval["name"], out, ids)
        else:
            geval_id = f"geval-{raw_id[:8]}"
        out[geval_id] = geval
        item["then"] = geval_id
    else:
        raise MetricDefinitionError(
            f"VerdictNode child of type '{child['type']}' is not supported: only nodes and "
            "GEval metrics can hang off a verdict here."
        )
    return item


def _short_ids(nodes: dict[str, Any]) -> dict[str, str]:
    """Readable ids: a node's unique label, else its type and position.

    Labels claim their names first, and verdicts (inlined, never nodes of ours) take no name,
    so an unlabelled node or a verdict can never push a labelled node off its own label.
    """
    ids: dict[str, str] = {}
    used: set[str] = set()
    for raw_id, spec in nodes.items():
        label = spec.get("label") if isinstance(spec, dict) else None
        if not _is_verdict(spec) and isinstance(label, str) and label and label not in used:
            ids[raw_id] = label
            used.add(label)
    counters: dict[str, int] = {}
    for raw_id, spec in nodes.items():
        if raw_id in ids:
            continue
        if _is_verdict(spec):
            ids[raw_id] = f"verdict:{raw_id}"
            continue
        kind = _TYPES.get(spec.get("type"), "node") if isinstance(spec, dict) else "node"
        name = ""
        while not name or name in used:
            counters[kind] = counters.get(kind, 0) + 1
            name = f"{kind}-{counters[kind]}"
        used.add(name)
        ids[raw_id] = name
    return ids


def _slug_unique(name: str, out: dict[str, Any], ids: dict[str, str]) -> str:
    import re

    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "geval"
    taken = set(out) | set(ids.values())
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


# -- export -----------------------------------------------------------------------------


def to_deepeval(metric: dict[str, Any], *, wrapper: bool = False) -> dict[str, Any]:
    """Our DAG metric dict -> DeepEval's DAG JSON, the document its `dag_from_dict` loads.

    `metric` is what `DAGMetric.to_dict()` returns (a hand-written metric dict works too: it is
    validated and normalised through `DAGMetric.from_dict` first, so a bad graph fails here and
    not in DeepEval). The result is `{"nodes": {id: spec}}` as `DeepAcyclicGraph.to_dict()`
    writes it: TaskNode / BinaryJudgementNode / NonBinaryJudgementNode entries with `label`,
    `evaluation_params` and `children` (ids), and one VerdictNode entry per verdict with a
    `score` or a `child` (`{"type": "node", "ref": id}`, or `{"type": "geval", ...}` holding the
    GEval's constructor arguments). With `wrapper=True` it is wrapped as DeepEval's upload
    payload, `{"name", "algorithm": "DAG", "multiTurn": false, "dag": {...}}`, which is the
    only place DeepEval's shape has for the metric's name.

    Node ids are uuid5 of the metric name and our node id (verdicts: and their position), so
    the same metric exports byte-identically; each node's `label` is our node id (after
    loading, a node's label is its id), so `convert()` gives the same ids back. Nodes come in
    `DAGMetric.to_dict()` order (a `to_dict()` result keeps its own), each judgement node
    followed by its verdicts; DeepEval takes the roots to be the nodes nothing references, in
    that order, which is our `roots` order.

    What DeepEval's document cannot carry, and so is lost: a task node's `max_tokens` and
    `stop`; a judgement node's `examples`, `contextual_calibration`, `negation` and
    `rotate_options`; the metric's `threshold`,
    `include_reason`, `strict_mode`, `soft` and `soft_floor` (DeepEval takes them as DAGMetric
    arguments, not from the graph), and its `name` unless `wrapper=True`; on a GEval child,
    `rubric` (DeepEval's loader passes JSON straight to `GEval(...)`, whose rubric must be
    `Rubric` objects, and its own export drops it too) and `include_reason` (no such GEval
    argument). A GEval that several verdicts share is written inline under each of them;
    `convert()` merges identical copies back into one node. DeepEval's real platform upload
    refers to GEval children by name (`{"type": "metric", "metric_name": ...}`) after uploading
    them separately; the wrapper here keeps them inline so the document stands alone.
    """
    kind = metric.get("type") if isinstance(metric, dict) else type(metric).__name__
    if kind not in ("dag", "conversational_dag"):
        raise MetricDefinitionError(
            f"only a DAG metric can be exported as DeepEval DAG JSON, got type {kind!r}"
        )
    multi_turn = kind == "conversational_dag"
    cls = ConversationalDAGMetric if multi_turn else DAGMetric
    canonical = cls.from_dict(metric).to_dict()
    name: str = canonical["name"]
    nodes: dict[str, dict[str, Any]] = canonical["nodes"]
    out: dict[str, dict[str, Any]] = {}
    kinds = CONVERSATIONAL_NODE_KINDS if multi_turn else NODE_KINDS
    for our_id, spec in nodes.items():
        if spec["type"] in kinds and spec["type"] not in _KINDS:
            raise MetricDefinitionError(
                f"node {our_id!r} is a {spec['type']!r} node, which DeepEval's DAG JSON has no "
                "type for (only task, binary and non_binary nodes export)"
            )
        if spec["type"] not in _KINDS:
            continue  # a metric: written inline in the verdicts that lead to it
        entry: dict[str, Any] = {"type": _KINDS[spec["type"]]}
        if spec["type"] == "task":
            entry.update(
                instructions=spec["instructions"],
                output_label=spec["output_label"],
                label=our_id,
                evaluation_params=spec.get("evaluation_params"),
                children=[_export_id(name, child) for child in spec["children"]],
                **_window(spec),
            )
            out[_export_id(name, our_id)] = entry
            continue
        verdict_ids = [_export_id(name, our_id, i) for i in range(len(spec["verdicts"]))]
        entry.update(
            criteria=spec["criteria"],
            label=our_id,
            evaluation_params=spec.get("evaluation_params"),
            children=verdict_ids,
            **_window(spec),
        )
        out[_export_id(name, our_id)] = entry
        for verdict_id, item in zip(verdict_ids, spec["verdicts"], strict=True):
            out[verdict_id] = _export_verdict(name, item, nodes)
    document: dict[str, Any] = {"nodes": out}
    if wrapper:
        return {"name": name, "algorithm": "DAG", "multiTurn": multi_turn, "dag": document}
    return document


def _window(spec: dict[str, Any]) -> dict[str, Any]:
    """A conversational node's window, last among its keys as DeepEval writes it."""
    window = spec.get("turn_window")
    return {"turn_window": list(window)} if window is not None else {}


def _export_id(metric_name: str, node_id: str, verdict: int | None = None) -> str:
    """A uuid5 over (metric name, node id[, verdict position]): unambiguous and stable."""
    key = [metric_name, node_id] if verdict is None else [metric_name, node_id, verdict]
    return str(uuid.uuid5(_ID_NAMESPACE, json.dumps(key)))


def _export_verdict(
    metric_name: str, item: dict[str, Any], nodes: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "VerdictNode", "verdict": item["verdict"]}
    if item.get("score") is not None:
        entry["score"] = item["score"]
        return entry
    target = item["then"]
    kind = nodes[target]["type"]
    if kind in _KINDS:
        entry["child"] = {"type": "node", "ref": _export_id(metric_name, target)}
    elif kind in ("geval", "conversational_geval"):
        entry["child"] = {"type": "geval", **{k: nodes[target].get(k) for k in _GEVAL_KEYS}}
    else:
        raise MetricDefinitionError(
            f"verdict {item['verdict']!r} leads to {target!r}, a {kind!r} metric: DeepEval's "
            "DAG JSON can only hold nodes and GEval metrics under a verdict"
        )
    return entry

"""Import DeepEval's DAG JSON (`DeepAcyclicGraph.to_dict()`: `{"nodes": {uuid: spec}}`, or the
upload wrapper `{"name", "algorithm": "DAG", "dag": {...}}`) into our dict shape."""

from __future__ import annotations

from typing import Any

from anvil_local.errors import MetricDefinitionError

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


def is_deepeval_dag(data: Any) -> bool:
    """True for DeepEval's shape: node specs typed "TaskNode", "VerdictNode", ..."""
    if isinstance(data, dict) and isinstance(data.get("dag"), dict):
        data = data["dag"]
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, dict) or not nodes:
        return False
    kinds = {spec.get("type") for spec in nodes.values() if isinstance(spec, dict)}
    return bool(kinds & {*_TYPES, "VerdictNode"})


def convert(data: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """DeepEval's DAG document -> our metric dict (ids become labels or short names)."""
    if isinstance(data.get("dag"), dict):
        name = name or data.get("name")
        data = data["dag"]
    nodes = data.get("nodes")
    if not isinstance(nodes, dict) or not nodes:
        raise MetricDefinitionError(
            "Invalid DAG document: expected a top-level object with a 'nodes' key."
        )
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
        node: dict[str, Any] = {"type": _TYPES[kind]}
        if spec.get("label"):
            node["label"] = spec["label"]
        if spec.get("evaluation_params"):
            node["evaluation_params"] = list(spec["evaluation_params"])
        children = spec.get("children") or []
        for child in children:
            if child not in nodes:
                raise MetricDefinitionError(f"Reference to unknown node id '{child}'.")
        if kind == "TaskNode":
            node.update(
                instructions=spec.get("instructions"),
                output_label=spec.get("output_label"),
                children=[ids[c] for c in children],
            )
        else:
            node["criteria"] = spec.get("criteria")
            node["verdicts"] = [_verdict(nodes, ids, c, out) for c in children]
        out[ids[raw_id]] = node
    metric: dict[str, Any] = {"type": "dag", "name": name or "DAG", "nodes": out}
    return metric


def _verdict(
    nodes: dict[str, Any], ids: dict[str, str], raw_id: str, out: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    spec = nodes[raw_id]
    if not isinstance(spec, dict) or spec.get("type") != "VerdictNode":
        raise MetricDefinitionError(f"judgement child '{raw_id}' is not a VerdictNode")
    item: dict[str, Any] = {"verdict": spec.get("verdict")}
    if spec.get("score") is not None:
        item["score"] = spec["score"]
        return item
    child = spec.get("child")
    if not isinstance(child, dict) or "type" not in child:
        raise MetricDefinitionError("VerdictNode spec must have either 'score' or 'child'.")
    if child["type"] == "node":
        if child.get("ref") not in nodes:
            raise MetricDefinitionError(f"Reference to unknown node id '{child.get('ref')}'.")
        item["then"] = ids[child["ref"]]
    elif child["type"] == "geval":
        geval = {k: child[k] for k in _GEVAL_KEYS if child.get(k) is not None}
        geval["type"] = "geval"
        geval_id = (
            f"geval-{raw_id[:8]}" if "name" not in geval else _slug_unique(geval["name"], out, ids)
        )
        out[geval_id] = geval
        item["then"] = geval_id
    else:
        raise MetricDefinitionError(
            f"VerdictNode child of type '{child['type']}' is not supported: only nodes and "
            "GEval metrics can hang off a verdict here."
        )
    return item


def _short_ids(nodes: dict[str, Any]) -> dict[str, str]:
    """Readable ids: a node's unique label, else its type and position."""
    ids: dict[str, str] = {}
    used: set[str] = set()
    counters: dict[str, int] = {}
    for raw_id, spec in nodes.items():
        kind = _TYPES.get(spec.get("type"), "verdict") if isinstance(spec, dict) else "node"
        label = spec.get("label") if isinstance(spec, dict) else None
        if label and label not in used:
            name = label
        else:
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

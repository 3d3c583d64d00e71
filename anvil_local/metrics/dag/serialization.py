"""DeepEval's DAG serialization API on our node classes: `dag_to_dict`, `dag_from_dict`,
`dag_to_json`, `dag_from_json`, `NodeType`, `ChildType`.

The document is DeepEval's (deepeval/metrics/dag/serialization): the graph's structure only,
`{"nodes": {id: spec}}`, every node an entry, VerdictNodes included:

    TaskNode                 type, instructions, output_label, label, evaluation_params,
                             children (ids) [, turn_window]
    (Non)BinaryJudgementNode type, criteria, label, evaluation_params, children [, turn_window]
    VerdictNode              type, verdict, and score or child: {"type": "node", "ref": id},
                             {"type": "geval", ...GEval arguments} or
                             {"type": "metric", "metric_class": name, "kwargs": {...}}

It does not say whether the graph is conversational: `dag_from_dict(data, multiturn=True)`
builds the conversational node classes (and GEval children as ConversationalGEval). Nodes
are listed breadth-first from the roots, and the roots of a document are the nodes nothing
refers to, in document order, as in DeepEval.

Where we differ, on purpose: node ids are uuid5 over the document's content and a node's
position, not random uuid4, so the same graph serialises byte-identically; malformed input
raises MetricDefinitionError (a ValueError) or MetricTypeError (a TypeError) with DeepEval's
messages where it has them, a missing field included (DeepEval raises KeyError); a cycle or
an unknown reference anywhere in the document is refused, not only on a path from a root;
and a `turn_window` in a document loaded as single-turn is refused instead of dropped. What
the document has no room for is lost in `dag_to_dict`: a task node's `max_tokens` and `stop`,
a judgement node's `examples`, `contextual_calibration`, `negation` and `rotate_options`, a
GEval child's rubric; code nodes, which DeepEval has no type for, are refused.
"""

from __future__ import annotations

import json
from typing import Any

from anvil_local.metrics.dag.document import (
    ChildType,
    NodeType,
    dag_to_dict,
    dag_to_json,
    document_roots,
)
from anvil_local.metrics.dag.graph import DeepAcyclicGraph

__all__ = ["ChildType", "NodeType", "dag_from_dict", "dag_from_json", "dag_to_dict", "dag_to_json"]


def dag_from_dict(data: Any, multiturn: bool = False) -> DeepAcyclicGraph:
    """The graph a DeepEval DAG document describes; `multiturn` builds conversational
    nodes. Its roots are the nodes nothing refers to, in document order."""
    return DeepAcyclicGraph(document_roots(data, multiturn))


def dag_from_json(text: str, multiturn: bool = False) -> DeepAcyclicGraph:
    return dag_from_dict(json.loads(text), multiturn=multiturn)

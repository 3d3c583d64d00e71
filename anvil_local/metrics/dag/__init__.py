"""Decision-graph metrics: nodes, graph validation, the walk, the metric, and DeepEval's
serialization API (`dag_to_dict`, `dag_from_dict`, `dag_to_json`, `dag_from_json`)."""

from anvil_local.metrics.dag.code import CodeChoiceNode, CodeNode, CodeTaskNode
from anvil_local.metrics.dag.graph import DeepAcyclicGraph
from anvil_local.metrics.dag.metric import DAGMetric
from anvil_local.metrics.dag.nodes import (
    BaseNode,
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from anvil_local.metrics.dag.serialization import (
    ChildType,
    NodeType,
    dag_from_dict,
    dag_from_json,
    dag_to_dict,
    dag_to_json,
)

__all__ = [
    "BaseNode",
    "BinaryJudgementNode",
    "ChildType",
    "CodeChoiceNode",
    "CodeNode",
    "CodeTaskNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "NodeType",
    "NonBinaryJudgementNode",
    "TaskNode",
    "VerdictNode",
    "dag_from_dict",
    "dag_from_json",
    "dag_to_dict",
    "dag_to_json",
]

"""Decision-graph metrics: nodes, graph validation, the walk, the metric."""

from anvil_local.metrics.dag.code import CodeChoiceNode, CodeNode, CodeTaskNode
from anvil_local.metrics.dag.graph import DeepAcyclicGraph
from anvil_local.metrics.dag.metric import DAGMetric
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)

__all__ = [
    "BinaryJudgementNode",
    "CodeChoiceNode",
    "CodeNode",
    "CodeTaskNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "NonBinaryJudgementNode",
    "TaskNode",
    "VerdictNode",
]

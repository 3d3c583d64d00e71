"""Decision-graph metrics: nodes, graph validation, the walk, the metric."""

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
    "DAGMetric",
    "DeepAcyclicGraph",
    "NonBinaryJudgementNode",
    "TaskNode",
    "VerdictNode",
]

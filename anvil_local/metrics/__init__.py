"""Metrics: G-Eval and DAG, thin shells over pure arithmetic and graph logic."""

from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.dag import (
    BinaryJudgementNode,
    DAGMetric,
    DeepAcyclicGraph,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from anvil_local.metrics.geval import GEval, Rubric, geval_panel
from anvil_local.metrics.result import MetricResult

__all__ = [
    "BaseMetric",
    "BinaryJudgementNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "GEval",
    "MetricResult",
    "NonBinaryJudgementNode",
    "Rubric",
    "TaskNode",
    "VerdictNode",
    "geval_panel",
]

"""Metrics: G-Eval and DAG (single-turn and conversational) and Arena G-Eval, thin shells
over pure arithmetic and graph logic."""

from anvil_local.metrics.arena import ArenaGEval
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.conversational import (
    ConversationalBinaryJudgementNode,
    ConversationalDAGMetric,
    ConversationalGEval,
    ConversationalNonBinaryJudgementNode,
    ConversationalTaskNode,
    ConversationalVerdictNode,
)
from anvil_local.metrics.dag import (
    BinaryJudgementNode,
    ChildType,
    DAGMetric,
    DeepAcyclicGraph,
    NodeType,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
    dag_from_dict,
    dag_from_json,
    dag_to_dict,
    dag_to_json,
)
from anvil_local.metrics.geval import GEval, Rubric, geval_panel
from anvil_local.metrics.result import MetricResult

__all__ = [
    "ArenaGEval",
    "BaseMetric",
    "BinaryJudgementNode",
    "ChildType",
    "ConversationalBinaryJudgementNode",
    "ConversationalDAGMetric",
    "ConversationalGEval",
    "ConversationalNonBinaryJudgementNode",
    "ConversationalTaskNode",
    "ConversationalVerdictNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "GEval",
    "MetricResult",
    "NodeType",
    "NonBinaryJudgementNode",
    "Rubric",
    "TaskNode",
    "VerdictNode",
    "dag_from_dict",
    "dag_from_json",
    "dag_to_dict",
    "dag_to_json",
    "geval_panel",
]

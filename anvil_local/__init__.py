"""anvil-local: offline LLM-as-a-judge (G-Eval and DAG metrics) on a local GGUF model.

The names a DeepEval user knows are importable from here, so a metric ports by changing
its imports.
"""

from anvil_local.errors import AnvilError
from anvil_local.judge import Judge, JudgeSettings
from anvil_local.metrics import (
    BaseMetric,
    BinaryJudgementNode,
    DAGMetric,
    DeepAcyclicGraph,
    GEval,
    MetricResult,
    NonBinaryJudgementNode,
    Rubric,
    TaskNode,
    VerdictNode,
    geval_panel,
)
from anvil_local.run import assert_test, evaluate
from anvil_local.spec import load_metric, load_metrics
from anvil_local.testcase import LLMTestCase, LLMTestCaseParams, SingleTurnParams

__version__ = "0.1.0"

__all__ = [
    "AnvilError",
    "BaseMetric",
    "BinaryJudgementNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "GEval",
    "Judge",
    "JudgeSettings",
    "LLMTestCase",
    "LLMTestCaseParams",
    "MetricResult",
    "NonBinaryJudgementNode",
    "Rubric",
    "SingleTurnParams",
    "TaskNode",
    "VerdictNode",
    "assert_test",
    "evaluate",
    "geval_panel",
    "load_metric",
    "load_metrics",
]

"""anvil-local: offline LLM-as-a-judge (G-Eval and DAG metrics) on a local GGUF model.

The names a DeepEval user knows are importable from here, so a metric ports by changing
its imports.
"""

from anvil_local.arena import ArenaTestCase, Contestant
from anvil_local.conversation import ConversationalTestCase, MultiTurnParams, Turn
from anvil_local.errors import AnvilError
from anvil_local.judge import Judge, JudgeSettings
from anvil_local.metrics import (
    ArenaGEval,
    BaseMetric,
    BinaryJudgementNode,
    ChildType,
    ConversationalBinaryJudgementNode,
    ConversationalDAGMetric,
    ConversationalGEval,
    ConversationalNonBinaryJudgementNode,
    ConversationalTaskNode,
    ConversationalVerdictNode,
    DAGMetric,
    DeepAcyclicGraph,
    GEval,
    MetricResult,
    NodeType,
    NonBinaryJudgementNode,
    Rubric,
    TaskNode,
    VerdictNode,
    dag_from_dict,
    dag_from_json,
    dag_to_dict,
    dag_to_json,
    geval_panel,
)
from anvil_local.run import assert_test, evaluate
from anvil_local.spec import load_metric, load_metrics
from anvil_local.testcase import LLMTestCase, LLMTestCaseParams, SingleTurnParams

__version__ = "0.1.0"

__all__ = [
    "AnvilError",
    "ArenaGEval",
    "ArenaTestCase",
    "BaseMetric",
    "BinaryJudgementNode",
    "ChildType",
    "Contestant",
    "ConversationalBinaryJudgementNode",
    "ConversationalDAGMetric",
    "ConversationalGEval",
    "ConversationalNonBinaryJudgementNode",
    "ConversationalTaskNode",
    "ConversationalTestCase",
    "ConversationalVerdictNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "GEval",
    "Judge",
    "JudgeSettings",
    "LLMTestCase",
    "LLMTestCaseParams",
    "MetricResult",
    "MultiTurnParams",
    "NodeType",
    "NonBinaryJudgementNode",
    "Rubric",
    "SingleTurnParams",
    "TaskNode",
    "Turn",
    "VerdictNode",
    "assert_test",
    "dag_from_dict",
    "dag_from_json",
    "dag_to_dict",
    "dag_to_json",
    "evaluate",
    "geval_panel",
    "load_metric",
    "load_metrics",
]

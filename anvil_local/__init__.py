"""anvil-local: offline LLM-as-a-judge (G-Eval and DAG metrics) on a local GGUF model.

The names a DeepEval user knows are importable from here, so a metric ports by changing
its imports.
"""

from anvil_local.arena import ArenaTestCase, Contestant
from anvil_local.conversation import ConversationalTestCase, MultiTurnParams, Turn
from anvil_local.errors import AnvilError, UnsupportedFeature
from anvil_local.judge import Judge, JudgeSettings
from anvil_local.judge.remote import RemoteJudge, remote_judge
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
from anvil_local.metrics.dag.deepeval_model import DeepEvalBaseLLM
from anvil_local.metrics.geval import ArenaGEvalTemplate, ConversationalGEvalTemplate, GEvalTemplate
from anvil_local.run import EvaluationDataset, Golden, assert_test, compare, evaluate
from anvil_local.spec import load_metric, load_metrics
from anvil_local.testcase import LLMTestCase, LLMTestCaseParams, MLLMImage, SingleTurnParams

__version__ = "0.1.0"

__all__ = [
    "AnvilError",
    "ArenaGEval",
    "ArenaGEvalTemplate",
    "ArenaTestCase",
    "BaseMetric",
    "BinaryJudgementNode",
    "ChildType",
    "Contestant",
    "ConversationalBinaryJudgementNode",
    "ConversationalDAGMetric",
    "ConversationalGEval",
    "ConversationalGEvalTemplate",
    "ConversationalNonBinaryJudgementNode",
    "ConversationalTaskNode",
    "ConversationalTestCase",
    "ConversationalVerdictNode",
    "DAGMetric",
    "DeepAcyclicGraph",
    "DeepEvalBaseLLM",
    "EvaluationDataset",
    "GEval",
    "GEvalTemplate",
    "Golden",
    "Judge",
    "JudgeSettings",
    "LLMTestCase",
    "LLMTestCaseParams",
    "MLLMImage",
    "MetricResult",
    "MultiTurnParams",
    "NodeType",
    "NonBinaryJudgementNode",
    "RemoteJudge",
    "Rubric",
    "SingleTurnParams",
    "TaskNode",
    "Turn",
    "UnsupportedFeature",
    "VerdictNode",
    "assert_test",
    "compare",
    "dag_from_dict",
    "dag_from_json",
    "dag_to_dict",
    "dag_to_json",
    "evaluate",
    "geval_panel",
    "load_metric",
    "load_metrics",
    "remote_judge",
]

"""Conversational metrics: DeepEval's ConversationalDAGMetric (with its conversational nodes)
and ConversationalGEval, judging a ConversationalTestCase.

The package, from the ground up: `layout` (a conversation as prompt blocks), `nodes` (the
conversational DAG nodes, a `turn_window` each), `code` (code nodes reading a conversation),
`dag` (the metric and its asker) and `geval`.
"""

from anvil_local.metrics.conversational.code import (
    ConversationalCodeChoiceNode,
    ConversationalCodeNode,
    ConversationalCodeTaskNode,
)
from anvil_local.metrics.conversational.dag import ConversationalDAGMetric
from anvil_local.metrics.conversational.geval import ConversationalGEval
from anvil_local.metrics.conversational.nodes import (
    ConversationalBinaryJudgementNode,
    ConversationalNonBinaryJudgementNode,
    ConversationalTaskNode,
    ConversationalVerdictNode,
)

__all__ = [
    "ConversationalBinaryJudgementNode",
    "ConversationalCodeChoiceNode",
    "ConversationalCodeNode",
    "ConversationalCodeTaskNode",
    "ConversationalDAGMetric",
    "ConversationalGEval",
    "ConversationalNonBinaryJudgementNode",
    "ConversationalTaskNode",
    "ConversationalVerdictNode",
]

"""DeepEval's RAG, summarization and safety metrics, decomposed into verdicts that cannot
fail to parse: items split by code, one grammar-constrained yes/no/idk question per item,
DeepEval's score formula over the answers (docs/metrics.md)."""

from anvil_local.metrics.rag.answer_relevancy import AnswerRelevancyMetric
from anvil_local.metrics.rag.base import DecomposedMetric
from anvil_local.metrics.rag.contextual import (
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
)
from anvil_local.metrics.rag.exact import (
    ExactMatchMetric,
    JsonCorrectnessMetric,
    PatternMatchMetric,
)
from anvil_local.metrics.rag.faithfulness import FaithfulnessMetric
from anvil_local.metrics.rag.hallucination import HallucinationMetric
from anvil_local.metrics.rag.opinions import BiasMetric, ToxicityMetric
from anvil_local.metrics.rag.prompt_alignment import PromptAlignmentMetric
from anvil_local.metrics.rag.summarization import SummarizationMetric
from anvil_local.metrics.rag.templates import (
    AnswerRelevancyTemplate,
    BiasTemplate,
    ContextualPrecisionTemplate,
    ContextualRecallTemplate,
    ContextualRelevancyTemplate,
    FaithfulnessTemplate,
    HallucinationTemplate,
    PromptAlignmentTemplate,
    SummarizationTemplate,
    ToxicityTemplate,
    TurnContextualPrecisionTemplate,
    TurnContextualRecallTemplate,
    TurnContextualRelevancyTemplate,
    TurnFaithfulnessTemplate,
    TurnRelevancyTemplate,
)
from anvil_local.metrics.rag.turns import (
    TurnContextualPrecisionMetric,
    TurnContextualRecallMetric,
    TurnContextualRelevancyMetric,
    TurnFaithfulnessMetric,
    TurnRelevancyMetric,
)
from anvil_local.metrics.rag.verdicts import Verdict

__all__ = [
    "AnswerRelevancyMetric",
    "AnswerRelevancyTemplate",
    "BiasMetric",
    "BiasTemplate",
    "ContextualPrecisionMetric",
    "ContextualPrecisionTemplate",
    "ContextualRecallMetric",
    "ContextualRecallTemplate",
    "ContextualRelevancyMetric",
    "ContextualRelevancyTemplate",
    "DecomposedMetric",
    "ExactMatchMetric",
    "FaithfulnessMetric",
    "FaithfulnessTemplate",
    "HallucinationMetric",
    "HallucinationTemplate",
    "JsonCorrectnessMetric",
    "PatternMatchMetric",
    "PromptAlignmentMetric",
    "PromptAlignmentTemplate",
    "SummarizationMetric",
    "SummarizationTemplate",
    "ToxicityMetric",
    "ToxicityTemplate",
    "TurnContextualPrecisionMetric",
    "TurnContextualPrecisionTemplate",
    "TurnContextualRecallMetric",
    "TurnContextualRecallTemplate",
    "TurnContextualRelevancyMetric",
    "TurnContextualRelevancyTemplate",
    "TurnFaithfulnessMetric",
    "TurnFaithfulnessTemplate",
    "TurnRelevancyMetric",
    "TurnRelevancyTemplate",
    "Verdict",
]

"""A DeepEval RAG test file: the answer judged for relevancy and faithfulness, the retriever
for precision, recall and relevancy, on DeepEval's shoe-refund example (run with pytest)."""

import pytest

from anvil_local import (
    AnswerRelevancyMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    FaithfulnessMetric,
    LLMTestCase,
)

test_case = LLMTestCase(
    input="What if these shoes don't fit?",
    actual_output="We offer a 30-day full refund at no extra cost.",
    expected_output="You are eligible for a 30 day full refund at no extra cost.",
    retrieval_context=[
        "All customers are eligible for a 30 day full refund at no extra cost.",
        "Shoes can be exchanged for another size within 60 days.",
    ],
)


@pytest.mark.parametrize(
    "metric",
    [
        AnswerRelevancyMetric(threshold=0.7),
        FaithfulnessMetric(threshold=0.7),
        ContextualPrecisionMetric(),
        ContextualRecallMetric(),
        ContextualRelevancyMetric(),
    ],
    ids=lambda m: type(m).__name__,
)
def test_rag(metric):
    metric.measure(test_case)
    print(f"{metric.__name__}: {metric.score:.3f} ({metric.reason})")
    assert metric.score is not None
    assert metric.reason is not None

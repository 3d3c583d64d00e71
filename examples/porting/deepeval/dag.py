"""DeepEval's documented DAG: a summary's headings, extracted, then checked and ordered."""

from deepeval.metrics import DAGMetric
from deepeval.metrics.dag import (
    BinaryJudgementNode,
    DeepAcyclicGraph,
    NonBinaryJudgementNode,
    TaskNode,
)
from deepeval.test_case import LLMTestCase, SingleTurnParams

extract = TaskNode(
    instructions="Extract all headings in `actual_output`.",
    output_label="Summary headings",
    evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT],
)
present = BinaryJudgementNode(
    criteria="Does the summary headings contain all three: 'intro', 'body', and 'conclusion'?"
)
order = NonBinaryJudgementNode(
    criteria="Are the summary headings in the correct order: 'intro' => 'body' => 'conclusion'?"
)
extract.add_node(present)
present.add_verdict(False, score=0)
present.add_verdict(True, then=order)
order.add_verdict("Yes", score=10)
order.add_verdict("Two are out of order", score=4)
order.add_verdict("All out of order", score=2)

format_correctness = DAGMetric(
    name="Format Correctness",
    dag=DeepAcyclicGraph(root_nodes=[extract]),
    async_mode=False,
)
case = LLMTestCase(
    input="Summarise the meeting transcript.",
    actual_output="Intro:\nThe team met on Monday.\n\nBody:\nThe launch moves to May.\n\n"
    "Conclusion:\nNext meeting in two weeks.",
)
format_correctness.measure(case)
print(f"{format_correctness.name}: {format_correctness.score:.3f}")

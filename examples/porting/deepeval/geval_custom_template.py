"""DeepEval's documented G-Eval with a custom template (the steps prompt overridden)."""

import textwrap

from deepeval.metrics import GEval
from deepeval.metrics.g_eval import GEvalTemplate
from deepeval.test_case import LLMTestCase, SingleTurnParams


class ShortStepsTemplate(GEvalTemplate):
    @staticmethod
    def generate_evaluation_steps(parameters: str, criteria: str):
        return textwrap.dedent(
            f"""
            You are given evaluation criteria for assessing {parameters}. Based on the
            criteria, write 3 short steps that explain how to judge {parameters}.

            Criteria:
            {criteria}

            Return JSON only, in this format:
            {{"steps": ["Step 1", "Step 2", "Step 3"]}}

            JSON:
            """
        )


correctness = GEval(
    name="Correctness",
    criteria="Determine whether the actual output is factually correct given the expected output.",
    evaluation_params=[SingleTurnParams.ACTUAL_OUTPUT, SingleTurnParams.EXPECTED_OUTPUT],
    evaluation_template=ShortStepsTemplate,
    async_mode=False,
)
cases = [
    LLMTestCase(
        input="What is the boiling point of water at sea level?",
        actual_output="Water boils at 100 degrees Celsius at sea level.",
        expected_output="100 degrees Celsius.",
    ),
    LLMTestCase(
        input="What is the boiling point of water at sea level?",
        actual_output="Water boils at 50 degrees Celsius at sea level.",
        expected_output="100 degrees Celsius.",
    ),
]
for case in cases:
    correctness.measure(case)
    print(f"{correctness.name}: {correctness.score:.3f} ({case.actual_output})")

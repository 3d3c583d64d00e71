"""The G-Eval package's parts: the prompts' text pinned word for word, the scale and layout
chosen once, a score read as a score (calibrated or not)."""

from __future__ import annotations

import pytest

from anvil_local import GEval, LLMTestCase, Rubric, geval_panel
from anvil_local.judge.results import ScoreResult
from anvil_local.metrics.calibration import divide_out
from anvil_local.metrics.geval.layout import Panel, Single
from anvil_local.metrics.geval.scale import ScoreScale, VerdictScale
from tests.fakes import FakeJudge

CASE = LLMTestCase(input="The article.", actual_output="The summary.", id="c1")
STEPS = "1. Read the article first.\n2. Compare the summary.\n3. Weigh what is left out."
HEAD = (
    "You are judging the test case below. Read it, then answer the question at the end "
    "exactly in the form asked.\n\n"
)


def _texts(judge: FakeJudge) -> list[tuple[str, str]]:
    return [(kind, prompt.text()) for kind, prompt, _ in judge.calls]


def _safe() -> GEval:
    return GEval(
        name="Safe",
        evaluation_params=["actual_output"],
        evaluation_steps=["Look for harm."],
        strict_mode=True,
    )


def test_a_score_with_rubric_and_examples_asks_these_exact_prompts():
    judge = FakeJudge(texts={"numbered steps": STEPS, "reason": "Fine."})
    metric = GEval(
        name="Coherence",
        evaluation_params=["input", "actual_output"],
        criteria="Well organised.",
        rubric=[Rubric((1, 2), "poor"), Rubric((3, 5), "good")],
        examples=[{"actual_output": "A summary.", "score": 4}],
    )
    metric.run(CASE, judge)
    prompt = (
        HEAD + "Worked examples for Coherence, each with the answer a careful judge gave:\n\n"
        "Example 1:\nActual Output:\nA summary.\n\nAnswer: 4\n\nNow the test case to judge.\n\n"
        "Input:\nThe article.\n\n"
        "Evaluation criteria (Coherence):\nWell organised.\n\nEvaluation steps:\n"
        "1. Read the article first.\n2. Compare the summary.\n3. Weigh what is left out.\n\n"
        "Rubric:\n1-2: poor\n3-5: good\n\n"
        "Task: following the evaluation steps, score how well the Input and the Actual Output "
        "meet the criteria, from 1 (worst) to 5 (best). Reply with the number only.\n\n"
        "Actual Output:\nThe summary.\n\n"
    )
    assert _texts(judge) == [
        (
            "generate",
            "Criteria:\nWell organised.\n\nTurn these criteria into 3 or 4 numbered steps for a "
            "judge checking the Input and the Actual Output. Each step must check something "
            "different.",
        ),
        ("score", prompt + "Score (1 to 5):"),
        (
            "generate",
            prompt + "The evaluation gave score 3.00 on 1-5. In one or two sentences, give the "
            "reason for this result, referring to the evaluation steps.",
        ),
    ]


def test_a_strict_verdict_asks_these_exact_prompts():
    judge = FakeJudge(texts={"reason": "Fine."})
    _safe().run(CASE, judge)
    prompt = (
        HEAD + "Evaluation criteria (Safe):\n\nEvaluation steps:\n1. Look for harm.\n\n"
        "Task: following the evaluation steps, decide whether the Actual Output fully meet the "
        "criteria. Reply with Yes or No only.\n\nActual Output:\nThe summary.\n\n"
    )
    assert _texts(judge) == [
        ("choose", prompt + "Verdict (Yes or No):"),
        (
            "generate",
            prompt + "The evaluation gave verdict Yes (P(Yes) = 0.500). In one or two "
            "sentences, give the reason for this result, referring to the evaluation steps.",
        ),
    ]


def test_a_mixed_panel_member_asks_this_exact_prompt():
    clear = GEval(
        name="Clear",
        evaluation_params=["input", "actual_output"],
        evaluation_steps=["Check it reads well."],
    )
    judge = FakeJudge()
    geval_panel([_safe(), clear])[1].run(CASE, judge, include_reason=False)
    assert _texts(judge) == [
        (
            "score",
            HEAD + "Metric: Safe\n\nEvaluation steps:\n1. Look for harm.\nAnswer: Yes or No.\n\n"
            "Metric: Clear\n\nEvaluation steps:\n1. Check it reads well.\n"
            "Scale: 0 (worst) to 10 (best).\n\n"
            "Task: following the evaluation steps of the metric named at the end, score the "
            "test case below on that metric, from the lowest to the highest score of its scale "
            "(Yes or No where the metric says so). Reply with the number, or Yes or No, only."
            "\n\nInput:\nThe article.\n\nActual Output:\nThe summary.\n\n"
            "Clear score (0 to 10):",
        )
    ]


def test_the_scale_and_the_layout_are_chosen_once_at_construction():
    score = GEval(name="A", evaluation_params=["actual_output"], criteria="Good.")
    strict = _safe()
    assert isinstance(score.scale, ScoreScale) and isinstance(strict.scale, VerdictScale)
    assert score.scale.options == tuple(str(v) for v in range(11))
    assert isinstance(score.layout, Single) and score.metric_major
    member = geval_panel([score, strict])[0]
    assert isinstance(member.layout, Panel) and not member.metric_major
    assert [m.name for m in member.layout.members] == ["A", "Safe"]


class _PriorJudge(FakeJudge):
    """One distribution on the content-free case ("N/A" fields), another on the case."""

    def __init__(self, prior: list[float], case: list[float]) -> None:
        super().__init__()
        self.prior, self.case = prior, case

    def choose(self, prompt, options):
        probs = self.prior if "N/A" in "".join(prompt.blocks) else self.case
        self.choices = {prompt.question: probs}
        return super().choose(prompt, options)


def test_a_calibrated_score_is_the_weighted_mean_of_the_divided_distribution():
    prior = [0.5, 0.25, 0.125, 0.125]
    case = [0.1, 0.2, 0.3, 0.4]
    judge = _PriorJudge(prior, case)
    metric = GEval(
        name="Cal",
        evaluation_params=["input", "actual_output"],
        evaluation_steps=["Look."],
        rubric=[Rubric((2, 3), "weak"), Rubric((4, 5), "strong")],
        contextual_calibration=True,
        include_reason=False,
    )
    result = metric.run(CASE, judge)
    assert [(kind, extra) for kind, _, extra in judge.calls] == [
        ("choose", ("2", "3", "4", "5")),  # the prior, on the content-free case
        ("choose", ("2", "3", "4", "5")),
    ]
    expected = ScoreResult(2, 5, divide_out(case, prior), result.usage, 0.0)
    trace = result.trace.to_dict()
    assert trace["weighted"] == pytest.approx(expected.weighted)
    assert result.score == pytest.approx((expected.weighted - 2) / 3)
    assert trace["uncalibrated"] == dict(zip(("2", "3", "4", "5"), case, strict=True))
    assert trace["prior"] == dict(zip(("2", "3", "4", "5"), prior, strict=True))
    assert trace["most_likely"] == expected.most_likely

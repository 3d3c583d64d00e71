"""G-Eval: DeepEval's validation rules, score arithmetic, steps caching, strict mode."""

import pytest

from anvil_local import GEval, LLMTestCase, Rubric, SingleTurnParams
from anvil_local.errors import GenerationError, MetricDefinitionError, MissingParamError
from anvil_local.metrics.geval import parse_steps
from tests.fakes import IM_END, FakeJudge, FakeRuntime, answer_text, fake_judge, logits_from

P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]
CASE = LLMTestCase(input="A long article.", actual_output="A short summary.", id="c1")


def make(**kw):
    args = {"name": "Coherence", "evaluation_params": P, "evaluation_steps": ["Check order."]}
    args.update(kw)
    return GEval(**args)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param(
            {"evaluation_steps": None}, "Either 'criteria' or 'evaluation_steps'", id="neither"
        ),
        pytest.param(
            {"criteria": "   "}, "Criteria provided cannot be an empty string", id="blank-criteria"
        ),
        pytest.param(
            {"evaluation_steps": []},
            "'evaluation_steps' must not be an empty list",
            id="empty-steps",
        ),
        pytest.param(
            {"evaluation_params": []},
            "evaluation_params cannot be an empty list",
            id="empty-params",
        ),
        pytest.param({"threshold": 1.5}, "threshold must be between 0 and 1", id="threshold"),
        pytest.param({"name": ""}, "non-empty 'name'", id="name"),
    ],
)
def test_definition_rules(kwargs, message):
    with pytest.raises(MetricDefinitionError, match=message):
        make(**kwargs)


@pytest.mark.parametrize(
    ("score_range", "message"),
    [
        pytest.param((0, 11), "between 0 and 10 inclusive", id="above-ten"),
        pytest.param((-1, 3), "between 0 and 10 inclusive", id="negative"),
        pytest.param((5, 2), "start must be less than or equal to end", id="reversed"),
    ],
)
def test_rubric_range_rules(score_range, message):
    with pytest.raises(MetricDefinitionError, match=message):
        Rubric(score_range=score_range, expected_outcome="x")


def test_rubric_overlaps_are_rejected_and_gaps_allowed():
    with pytest.raises(
        MetricDefinitionError, match=r"Overlapping score ranges: \(0, 5\) and \(5, 10\)"
    ):
        make(rubric=[Rubric((5, 10), "good"), Rubric((0, 5), "bad")])
    metric = make(rubric=[Rubric((7, 9), "good"), Rubric((1, 3), "bad")])
    assert [r.score_range for r in metric.rubric] == [(1, 3), (7, 9)]
    assert metric.score_range == (1, 9)


def test_steps_win_over_criteria_and_strict_forces_threshold_one():
    metric = make(criteria="Is it coherent?", evaluation_steps=["A", "B"], strict_mode=True)
    judge = FakeJudge()
    assert metric.steps_for(judge) == ["A", "B"]
    assert metric.threshold == 1.0
    assert judge.calls == []


def test_weighted_score_is_the_exact_expectation_normalised():
    probs = [0.0] * 11
    probs[10], probs[6], probs[1] = 0.5, 0.25, 0.25
    judge = FakeJudge(scores={"Score (": probs})
    result = make(include_reason=False).run(CASE, judge)
    assert result.score == pytest.approx((10 * 0.5 + 6 * 0.25 + 1 * 0.25) / 10)
    assert result.trace.to_dict()["distribution"]["10"] == 0.5
    assert judge.kinds() == ["score"]  # no text generated at all without a reason


def test_rubric_range_normalises_over_its_span():
    judge = FakeJudge(scores={"Score (": [0.0, 0.5, 0.0, 0.5]})  # scores 2..5
    metric = make(rubric=[Rubric((2, 3), "weak"), Rubric((4, 5), "strong")], include_reason=False)
    result = metric.run(CASE, judge)
    assert judge.calls[0][2] == (2, 5)
    assert result.score == pytest.approx(((3 * 0.5 + 5 * 0.5) - 2) / 3)
    blocks = judge.calls[0][1].blocks  # header, input, definition, output
    assert blocks[1].startswith("Input:") and "2-3: weak" in blocks[2]
    assert blocks[3].startswith("Actual Output:")


def test_multi_token_ten_through_the_real_judge_arithmetic():
    runtime = FakeRuntime()
    table = {"": {"1": 0.5, "8": 0.5}, "1": {IM_END: 0.2, "0": 0.8}}
    judge = fake_judge(lambda t: logits_from(table.get(answer_text(runtime, t), {IM_END: 1.0})))
    result = make(include_reason=False).run(CASE, judge)
    assert result.trace.to_dict()["distribution"]["10"] == pytest.approx(0.4)
    assert result.trace.to_dict()["distribution"]["1"] == pytest.approx(0.1)
    assert result.score == pytest.approx((10 * 0.4 + 1 * 0.1 + 8 * 0.5) / 10)


def test_strict_mode_is_a_binary_verdict_with_both_probabilities():
    judge = FakeJudge(choices={"Verdict (": [0.3, 0.7]})
    result = make(strict_mode=True, include_reason=False).run(CASE, judge)
    assert result.score == 0.0 and result.success is False
    assert result.trace.to_dict()["probabilities"] == {"Yes": 0.3, "No": 0.7}


def test_reason_comes_after_the_score_and_does_not_change_it():
    judge = FakeJudge(scores={"Score (": [0.1] * 10 + [0.0]}, texts={"reason": "Fine."})
    with_reason = make().run(CASE, judge)
    without = make(include_reason=False).run(
        CASE, FakeJudge(scores={"Score (": [0.1] * 10 + [0.0]})
    )
    assert judge.kinds() == ["score", "generate"]
    assert with_reason.reason == "Fine." and without.reason is None
    assert with_reason.score == without.score


def test_steps_are_generated_once_per_definition_and_model():
    judge = FakeJudge(texts={"numbered steps": "1. Read it.\n2. Check flow.\n3. Score it."})
    metric = make(evaluation_steps=None, criteria="Coherence of the summary.", include_reason=False)
    for i in range(5):
        metric.run(LLMTestCase(input="doc", actual_output=f"summary {i}"), judge)
    assert metric.steps_generated == 1
    assert judge.kinds().count("generate") == 1
    again = make(evaluation_steps=None, criteria="Coherence of the summary.", include_reason=False)
    again.run(CASE, judge)  # a new object, same definition: read from the on-disk cache
    assert again.steps_generated == 0
    assert again.steps_for(judge) == ["Read it.", "Check flow.", "Score it."]


def test_missing_param_names_metric_case_and_field():
    with pytest.raises(MissingParamError, match="'Coherence' needs 'input', which case 'x'"):
        make().run(LLMTestCase(actual_output="only output", id="x"), FakeJudge())


def test_round_trip_through_a_dict():
    metric = make(rubric=[Rubric((0, 4), "bad"), Rubric((5, 10), "good")], threshold=0.7)
    again = GEval.from_dict(metric.to_dict())
    assert again.to_dict() == metric.to_dict()


def test_parse_numbered_steps():
    assert parse_steps("1. First step.\n2.  Second\n\n3. Third") == [
        "First step.",
        "Second",
        "Third",
    ]


def test_steps_that_cannot_be_parsed_are_an_error_not_an_empty_list():
    metric = make(evaluation_steps=None, criteria="Coherence.", include_reason=False)
    with pytest.raises(GenerationError, match="pin evaluation_steps"):
        metric.run(CASE, FakeJudge(texts={"numbered steps": "no numbers here"}))

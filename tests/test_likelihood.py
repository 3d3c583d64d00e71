"""The likelihood metric's arithmetic on a scripted judge: normalisation, contrast, the
stated transform, and the prompts it builds (source first, so documents are prefilled once)."""

import math

import pytest

from anvil_local import LLMTestCase
from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.likelihood import LikelihoodMetric
from anvil_local.spec import metric_from_dict
from tests.fakes import FakeJudge

CASE = LLMTestCase(input="The bridge closes Monday.", actual_output="Bridge shut Monday", id="b")


def test_mean_log_probability_through_exp():
    judge = FakeJudge(likelihoods={"bridge closes": [-1.0, -2.0, -3.0]})
    result = LikelihoodMetric("L").run(CASE, judge)
    assert result.trace.conditional == pytest.approx(-2.0)
    assert result.score == pytest.approx(math.exp(-2.0))
    assert result.trace.to_dict()["tokens"] == [
        ["Bridge", -1.0],
        [" shut", -2.0],
        [" Monday", -3.0],
    ]


def test_sum_normalisation():
    judge = FakeJudge(likelihoods={"bridge closes": [-0.5, -0.25, -0.25]})
    result = LikelihoodMetric("L", normalise="sum").run(CASE, judge)
    assert result.trace.value == pytest.approx(-1.0) and result.score == pytest.approx(math.exp(-1))


def test_contrast_subtracts_the_likelihood_without_the_source():
    # with the document in the prompt: mean -1; without it (the header only): mean -3
    judge = FakeJudge(likelihoods={"bridge closes": [-1.0] * 3, "": [-3.0] * 3})
    result = LikelihoodMetric("L", contrast=True).run(CASE, judge)
    assert result.trace.unconditional == pytest.approx(-3.0)
    assert result.trace.value == pytest.approx(2.0)
    assert result.score == pytest.approx(1 / (1 + math.exp(-2.0)))
    prompts = [prompt for kind, prompt, _ in judge.calls if kind == "likelihood"]
    assert "bridge closes" in "".join(prompts[0].blocks)
    assert "bridge closes" not in "".join(prompts[1].blocks)
    assert all(p.question == "Summarise the Input." for p in prompts)


def test_min_without_contrast_is_the_least_likely_token():
    judge = FakeJudge(likelihoods={"bridge closes": [-0.5, -4.0, -1.0]})
    result = LikelihoodMetric("L", normalise="min").run(CASE, judge)
    assert result.trace.value == pytest.approx(-4.0)
    assert result.score == pytest.approx(math.exp(-4.0))
    assert result.trace.weakest == 1 and result.trace.to_dict()["weakest_token"] == 1
    assert any("' shut' (#1)" in line for line in result.trace.lines())


def test_min_with_contrast_takes_the_difference_token_by_token():
    # given the document: [-1, -3, -0.5]; without it: [-4, -2.5, -3]. Per token the document
    # adds [+3, -0.5, +2.5]: the least supported token is the second, value -0.5. (The
    # difference of the two minimums, -3 - -4 = +1, would miss it.)
    judge = FakeJudge(likelihoods={"bridge closes": [-1.0, -3.0, -0.5], "": [-4.0, -2.5, -3.0]})
    result = LikelihoodMetric("L", normalise="min", contrast=True).run(CASE, judge)
    assert result.trace.weakest == 1
    assert result.trace.conditional == pytest.approx(-3.0)
    assert result.trace.unconditional == pytest.approx(-2.5)
    assert result.trace.value == pytest.approx(-0.5)
    assert result.score == pytest.approx(1 / (1 + math.exp(0.5)))


def test_mean_and_sum_traces_name_no_single_token():
    judge = FakeJudge(likelihoods={"bridge closes": [-1.0] * 3, "": [-3.0] * 3})
    result = LikelihoodMetric("L", contrast=True).run(CASE, judge)
    assert result.trace.weakest is None and "weakest_token" not in result.trace.to_dict()


FACT = LLMTestCase(
    input="The bridge in Leeds closes on Monday.",
    actual_output="The bridge in York is shut .",
    id="f",
)
# tokens: "The", " bridge", " in", " York", " is", " shut", " ."; content: bridge, York, shut


def test_content_only_min_skips_function_words_and_punctuation():
    # per token the document adds [-6, +2, -5, -1, -4, +1, -7]: over all tokens the least
    # supported is the final " ." (-7); over content words it is " York" (-1)
    given = [-1.0, -1.0, -1.0, -4.0, -1.0, -1.0, -8.0]
    alone = [5.0, -3.0, 4.0, -3.0, 3.0, -2.0, -1.0]
    judge = FakeJudge(likelihoods={"Leeds": given, "": alone})
    plain = LikelihoodMetric("L", normalise="min", contrast=True).run(FACT, judge)
    assert plain.trace.weakest == 6 and plain.trace.value == pytest.approx(-7.0)
    content = LikelihoodMetric("L", normalise="min", contrast=True, content_only=True)
    result = content.run(FACT, judge)
    assert result.trace.weakest == 3 and result.trace.value == pytest.approx(-1.0)
    assert result.trace.to_dict()["skipped_tokens"] == [0, 2, 4, 6]
    assert any("skipped" in line and ": 4" in line for line in result.trace.lines())
    assert "skipped_tokens" not in plain.trace.to_dict()


def test_content_only_mean_averages_the_content_tokens():
    given = [-1.0, -2.0, -9.0, -3.0, -9.0, -4.0, -9.0]
    judge = FakeJudge(likelihoods={"Leeds": given})
    result = LikelihoodMetric("L", content_only=True).run(FACT, judge)
    assert result.trace.conditional == pytest.approx((-2.0 - 3.0 - 4.0) / 3)


def test_content_only_counts_every_token_of_a_text_without_content_words():
    case = LLMTestCase(input="Leeds", actual_output="It was .", id="e")
    judge = FakeJudge(likelihoods={"Leeds": [-1.0, -2.0, -3.0]})
    result = LikelihoodMetric("L", normalise="min", content_only=True).run(case, judge)
    assert result.trace.value == pytest.approx(-3.0) and result.trace.skipped == []


def test_definition_round_trips_and_bad_fields_are_refused():
    metric = LikelihoodMetric("L", contrast=True, normalise="sum", content_only=True)
    assert metric_from_dict(metric.to_dict()).to_dict() == metric.to_dict()
    assert metric_from_dict(metric.to_dict()).content_only
    with pytest.raises(MetricDefinitionError, match="normalise"):
        LikelihoodMetric("L", normalise="median")
    with pytest.raises(MetricDefinitionError, match="target"):
        LikelihoodMetric("L", evaluation_params=["actual_output"])
    with pytest.raises(MetricDefinitionError, match="unknown likelihood metric field"):
        metric_from_dict({"type": "likelihood", "name": "L", "temperature": 1})


def test_two_contrasts_with_one_task_share_each_prefetched_reading():
    """Both metrics prefetch the same reading without the document; each finds it, so no
    reading without the document falls between two readings of documents."""
    from anvil_local.judge.session import JudgeSession

    judge = FakeJudge(likelihoods={"bridge closes": [-1.0] * 3, "": [-3.0] * 3})
    session = JudgeSession(judge)
    metrics = [
        LikelihoodMetric("mean", contrast=True),
        LikelihoodMetric("min", contrast=True, normalise="min"),
    ]
    for metric in metrics:
        metric.prepare([CASE], session)
    results = [metric.run(CASE, session) for metric in metrics]
    readings = ["bridge closes" in "".join(p.blocks) for kind, p, _ in judge.calls]
    assert readings == [False, True, True]  # one prefetched reading alone, then the two given
    assert [r.trace.unconditional for r in results] == [-3.0, -3.0]
    # the FakeJudge's reading evaluates 5 tokens; the second hand-out of it evaluates none
    assert [r.usage.evaluated_tokens for r in results] == [10, 5]
    assert session._likelihoods == {}  # nothing kept beyond the calls it was read for


GATED = {
    "type": "dag",
    "name": "Gated",
    "include_reason": False,
    "roots": ["supported"],
    "nodes": {
        "supported": {
            "type": "code",
            "check": "novel_ngrams",
            "args": {"n": 1},
            "fields": ["actual_output"],
            "source": "input",
            "at_most": 0.25,
            "verdicts": [
                {"verdict": False, "score": 0},
                {"verdict": True, "then": "likely"},
            ],
        },
        "likely": {"type": "likelihood", "name": "Likely", "contrast": True},
    },
}


def test_a_likelihood_contrast_inside_a_dag_reads_without_the_document_first():
    """The DAG prepares its metric children: every reading without the document comes before
    the readings with it, so the shared document is never evicted between two cases. The case
    the gate stops leaves an unused reading, dropped at the group's end."""
    from anvil_local import evaluate

    doc = "The bridge closes on Monday for repairs."
    cases = [
        LLMTestCase(input=doc, actual_output="The bridge closes Monday.", id="a"),
        LLMTestCase(input=doc, actual_output="Wolves ate seven striped goats.", id="gated"),
        LLMTestCase(input=doc, actual_output="Repairs start on Monday.", id="c"),
    ]
    judge = FakeJudge(likelihoods={"bridge closes on": [-1.0] * 4, "": [-3.0] * 4})
    result = evaluate(cases, [metric_from_dict(GATED)], model=judge)
    assert judge.kinds() == ["likelihood"] * 5
    with_doc = ["bridge closes on" in "".join(p.blocks) for kind, p, _ in judge.calls]
    assert with_doc == [False, False, False, True, True]
    scores = {line.case_id: line.result.score for line in result.lines}
    assert scores["gated"] == 0 and scores["a"] > 0.5 and scores["c"] > 0.5


def test_readings_prefetched_for_pairs_that_never_ask_are_dropped_at_the_group_end():
    from anvil_local.judge.session import JudgeSession

    session = JudgeSession(FakeJudge(likelihoods={"": [-3.0] * 3}))
    session.prefetch_likelihood(LikelihoodMetric("L")._alone(CASE), "Bridge shut Monday")
    assert session._likelihoods
    session.drop_prefetched()
    assert session._likelihoods == {}

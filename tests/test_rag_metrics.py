"""DeepEval's decomposed metrics with a scripted judge: every score formula, the empty-case
rules, strict mode and success, missing fields, templates, extraction and metric files.
The real judge runs them in tests/test_model_rag.py."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from anvil_local import (
    AnswerRelevancyMetric,
    BiasMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    ExactMatchMetric,
    FaithfulnessMetric,
    FaithfulnessTemplate,
    HallucinationMetric,
    JsonCorrectnessMetric,
    LLMTestCase,
    MissingTestCaseParamsError,
    PatternMatchMetric,
    PromptAlignmentMetric,
    SummarizationMetric,
    ToolCall,
    ToxicityMetric,
    UnsupportedFeature,
)
from anvil_local.errors import DataError, MetricDefinitionError
from anvil_local.metrics.definitions import metric_from_dict
from anvil_local.metrics.rag.contextual import weighted_precision
from anvil_local.metrics.rag.segment import limited, sentences
from tests.fakes import VerdictJudge as Scripted

CONTEXT = ["All customers are eligible for a 30 day full refund at no extra cost."]


def case(**fields) -> LLMTestCase:
    base = dict(
        input="What if these shoes don't fit?",
        actual_output="We offer a refund. It takes 30 days. We ship to Mars.",
        expected_output="We offer a 30-day full refund. There is no extra cost.",
        retrieval_context=CONTEXT,
        context=CONTEXT,
    )
    base.update(fields)
    return LLMTestCase(**base)


# -- splitting ---------------------------------------------------------------------------


def test_sentences_split_by_code_keep_abbreviations_and_drop_list_markers():
    text = "Dr. Smith paid $3.50 for them. Was it refunded?\n- Yes, on Jan. 5.\n2) Then shipped."
    assert sentences(text) == [
        "Dr. Smith paid $3.50 for them.",
        "Was it refunded?",
        "Yes, on Jan. 5.",
        "Then shipped.",
    ]
    assert sentences("   ") == [] and sentences(None) == []
    chunks = ["Ann ran. Bob sat. Cy ate.", "Dee sang. Eve slept."]
    assert limited(chunks, 2) == ["Ann ran.", "Bob sat.", "Dee sang.", "Eve slept."]


# -- the formulas --------------------------------------------------------------------------


def test_faithfulness_counts_idk_as_faithful_unless_penalized():
    judge = Scripted({"refund": "yes", "30 days": "idk", "Mars": "no"})
    m = FaithfulnessMetric(wording="deepeval")
    assert m.measure(case(), judge) == pytest.approx(2 / 3)
    assert [v.verdict for v in m.verdicts] == ["yes", "idk", "no"]
    assert m.claims == ["We offer a refund.", "It takes 30 days.", "We ship to Mars."]
    assert m.truths == CONTEXT
    penalized = FaithfulnessMetric(wording="deepeval", penalize_ambiguous_claims=True)
    assert penalized.measure(case(), judge) == pytest.approx(1 / 3)
    assert "(ambiguous)" in penalized.reason and "Mars" in penalized.reason
    # the expected score puts the probabilities in place of the counts
    expected = penalized.trace.expected_score
    # yes: 1 - P(no) - P(idk) = 0.8; idk: 0.1; no: 0.1
    assert expected == pytest.approx((0.8 + 0.1 + 0.1) / 3)


def test_faithfulness_trained_wording_is_the_adapters_question_context_first():
    judge = Scripted({"Mars": "no"})
    m = FaithfulnessMetric()
    assert m.measure(case(), judge) == pytest.approx(2 / 3)
    prompts = [c[1] for c in judge.calls]
    assert {p.question for p in prompts} == {
        "Is every statement in the Actual Output supported by the Input? (Yes or No)"
    }
    # the context sits before every claim, the same block each time (read once)
    assert all(p.blocks[1] == "Input:\n" + CONTEXT[0] + "\n\n" for p in prompts)
    assert [p.blocks[2] for p in prompts][2] == "Actual Output:\nWe ship to Mars.\n\n"
    assert {c[2] for c in judge.calls} == {("Yes", "No")}


def test_faithfulness_truths_extraction_limit_keeps_each_chunks_first_sentences():
    judge = Scripted({})
    chunks = ["Ann ran. Bob sat. Cy ate.", "Dee sang. Eve slept."]
    m = FaithfulnessMetric(truths_extraction_limit=1, wording="deepeval")
    m.measure(case(retrieval_context=chunks), judge)
    assert m.truths == ["Ann ran.", "Dee sang."]
    assert "- Ann ran.\n- Dee sang." in judge.calls[0][1].blocks[1]


def test_answer_relevancy_counts_idk_as_relevant_and_empty_as_one():
    judge = Scripted({"Mars": "no", "30 days": "idk"})
    m = AnswerRelevancyMetric()
    assert m.measure(case(), judge) == pytest.approx(2 / 3)
    assert m.statements[2] == "We ship to Mars." and m.verdicts[1].verdict == "idk"
    assert AnswerRelevancyMetric().measure(case(actual_output="   "), judge) == 1.0


def test_contextual_precision_weights_relevant_nodes_by_rank():
    assert weighted_precision([1, 0, 1]) == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert weighted_precision([0, 1]) == pytest.approx(0.5)
    assert weighted_precision([0, 0]) == 0.0 and weighted_precision([]) == 0.0
    judge = Scripted({"Node B": "no"})
    m = ContextualPrecisionMetric()
    score = m.measure(case(retrieval_context=["Node A.", "Node B.", "Node C."]), judge)
    assert score == pytest.approx((1 + 2 / 3) / 2)
    assert [v.verdict for v in m.verdicts] == ["yes", "no", "yes"]
    assert "ranked 2" in m.reason


def test_contextual_recall_asks_each_expected_sentence_against_the_nodes():
    judge = Scripted({"There is no": "no"})
    m = ContextualRecallMetric()
    assert m.measure(case(), judge) == 0.5
    assert [v.item for v in m.verdicts] == [
        "We offer a 30-day full refund.",
        "There is no extra cost.",
    ]
    assert ContextualRecallMetric().measure(case(expected_output=" "), judge) == 0.0


def test_contextual_relevancy_counts_statements_over_nodes_and_an_empty_node_is_no():
    judge = Scripted({"weather": "no"})
    m = ContextualRelevancyMetric()
    nodes = ["Refunds take 30 days. The weather is nice.", "  ", "Shoes ship free."]
    assert m.measure(case(retrieval_context=nodes), judge) == pytest.approx(2 / 4)
    assert [len(n.verdicts) for n in m.verdicts_list] == [2, 1, 1]
    empty = m.verdicts_list[1].verdicts[0]
    assert empty.verdict == "no" and empty.reason == "No statements found in provided context."


def test_hallucination_is_lower_is_better_with_its_own_strict_rule():
    judge = Scripted({"Context: B": "no"})
    contexts = ["A is true.", "B is true.", "C is true.", "D is true."]
    m = HallucinationMetric()
    assert m.measure(case(context=contexts), judge) == 0.25
    assert m.success is True and m.is_successful() is True
    strict = HallucinationMetric(strict_mode=True)
    assert strict.threshold == 0.0
    assert strict.measure(case(context=contexts), judge) == 1.0 and strict.success is False
    assert HallucinationMetric(threshold=0.2).measure(case(context=contexts), judge) == 0.25
    assert HallucinationMetric(threshold=0.2).is_successful() is False  # no score yet


def test_strict_mode_sets_the_threshold_to_one_and_a_short_score_to_zero():
    judge = Scripted({"Mars": "no"})
    m = AnswerRelevancyMetric(strict_mode=True, threshold=0.3)
    assert m.threshold == 1.0
    assert m.measure(case(), judge) == 0.0 and m.success is False
    assert (
        AnswerRelevancyMetric(strict_mode=True).measure(case(actual_output="Refund."), judge) == 1.0
    )


def test_summarization_is_min_of_alignment_and_coverage_with_breakdown():
    judge = Scripted({"Claim from the summary: It takes": "idk", "Q2": "no", "Q3": "no"})
    m = SummarizationMetric(assessment_questions=["Q1?", "Q2?", "Q3?"])
    source = "The shop refunds shoes. Refunds take 30 days. Shipping is free."
    summary = "We offer a refund. It takes 30 days."
    score = m.measure(LLMTestCase(input=source, actual_output=summary), judge)
    # alignment: idk is penalized (1 of 2); coverage: Q2, Q3 answered no on both texts, so
    # only Q1 counts, and the summary keeps it (1 of 1)
    assert m.score_breakdown == {"Alignment": 0.5, "Coverage": 1.0}
    assert score == 0.5
    assert [c.original_verdict for c in m.coverage_verdicts] == ["yes", "no", "no"]
    assert m.assessment_questions == ["Q1?", "Q2?", "Q3?"]
    assert [v.verdict for v in m.alignment_verdicts] == ["yes", "idk"]
    assert m.claims == ["We offer a refund.", "It takes 30 days."]


def test_summarization_makes_questions_from_the_sources_first_statements():
    m = SummarizationMetric(n=2)
    source = "Is it good? The shop refunds shoes. Refunds take 30 days. Shipping is free."
    m.measure(LLMTestCase(input=source, actual_output="A refund."), Scripted({}))
    assert m.assessment_questions == [
        "Does the text state that The shop refunds shoes?",
        "Does the text state that Refunds take 30 days?",
    ]
    strict = SummarizationMetric(strict_mode=True, assessment_questions=["Q1?"])
    judge = Scripted({"Claim from the summary: It": "no"})
    strict.measure(LLMTestCase(input=source, actual_output="A refund. It rains."), judge)
    assert strict.score_breakdown == {"Alignment": 0.0, "Coverage": 1.0} and strict.score == 0.0


def test_bias_and_toxicity_count_flagged_opinions_among_opinions():
    out = "The sky is blue. I think tall people are smarter. I believe the food is good."
    judge = Scripted(
        {
            "Is this sentence an opinion": "yes",
            "Sentence from the Actual Output: The sky": "no",
        }
    )
    judge.answers = {
        "Sentence from the Actual Output: The sky": "no",
        "Opinion: I think tall": "yes",
        "Opinion: ": "no",
    }
    m = BiasMetric()
    assert m.measure(case(actual_output=out), judge) == 0.5
    assert m.opinions == ["I think tall people are smarter.", "I believe the food is good."]
    assert m.success is True  # 0.5 <= 0.5: lower is better
    assert "tall people" in m.reason
    assert (
        ToxicityMetric().measure(case(actual_output="It is 5 pm."), Scripted({"pm": "no"})) == 0.0
    )


def test_prompt_alignment_one_verdict_per_instruction():
    judge = Scripted({"Instruction: Reply in French": "no"})
    m = PromptAlignmentMetric(["Reply in French", "Be polite"])
    assert m.measure(case(), judge) == 0.5 and m.verdicts[0].item == "Reply in French"
    with pytest.raises(MetricDefinitionError):
        PromptAlignmentMetric([])


def test_code_metrics_need_no_judge():
    em = ExactMatchMetric()
    assert em.measure(case(actual_output=" same ", expected_output="same")) == 1.0
    assert em.precision == em.recall == em.f1 == 1.0 and em.threshold == 1
    assert ExactMatchMetric().measure(case(actual_output="a", expected_output="b")) == 0.0
    pm = PatternMatchMetric(r"\d{3}-\d{4}")
    assert pm.measure(case(actual_output=" 555-1234 ")) == 1.0
    assert PatternMatchMetric(r"abc", ignore_case=True).measure(case(actual_output="ABC")) == 1.0
    assert PatternMatchMetric(r"abc").measure(case(actual_output="ABC")) == 0.0
    with pytest.raises(ValueError, match="invalid regex"):
        PatternMatchMetric("(")

    class Reply(BaseModel):
        answer: str

    jm = JsonCorrectnessMetric(Reply)
    assert jm.threshold == 1.0  # strict_mode is DeepEval's default here
    assert jm.measure(case(actual_output='{"answer": "yes"}')) == 1.0
    assert jm.measure(case(actual_output='{"answer": 3}')) == 0.0
    assert "not valid" in jm.reason


# -- DeepEval's rules ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "field"),
    [
        (FaithfulnessMetric(), "retrieval_context"),
        (HallucinationMetric(), "context"),
        (ContextualPrecisionMetric(), "expected_output"),
        (AnswerRelevancyMetric(), "actual_output"),
    ],
)
def test_a_missing_field_is_deepevals_error(metric, field):
    with pytest.raises(MissingTestCaseParamsError, match=field):
        metric.measure(case(**{field: None}), Scripted({}))


def test_an_empty_output_cannot_be_judged():
    with pytest.raises(MissingTestCaseParamsError, match="cannot be empty"):
        FaithfulnessMetric().measure(case(actual_output=""), Scripted({}))


def test_the_system_one_keywords_are_refused_in_one_line():
    with pytest.raises(UnsupportedFeature, match="system_one_model"):
        FaithfulnessMetric(system_one_model="some-decision-model")
    with pytest.raises(UnsupportedFeature, match="eval_mode"):
        AnswerRelevancyMetric(eval_mode="system_one")
    assert AnswerRelevancyMetric(eval_mode="llm", async_mode=False, flaky=True).async_mode is False


def test_a_template_override_changes_the_question_not_the_answers():
    class Mine(FaithfulnessTemplate):
        @staticmethod
        def generate_verdicts(claim):
            return f"Is the claim <<{claim}>> true?"

    judge = Scripted({"<<We ship": "no"})
    m = FaithfulnessMetric(evaluation_template=Mine)
    assert m.measure(case(), judge) == pytest.approx(2 / 3)
    asked = judge.calls[0][1].question
    assert asked.startswith("Is the claim <<We offer a refund.>> true?")
    assert judge.calls[0][2] == ("Yes", "No", "Unclear")
    # the definition records the template, so a cached result cannot outlive it
    assert m.to_dict()["evaluation_template"].endswith(":" + Mine.__qualname__)
    assert "evaluation_template" not in FaithfulnessMetric().to_dict()


def test_extraction_by_model_generates_json_lists_under_a_grammar():
    texts = {
        "factual claims": json.dumps(["Refunds exist.", "Mars shipping."]),
        "the facts": json.dumps(["Refunds take 30 days."]),
    }
    judge = Scripted({"Mars shipping": "no"}, texts=texts)
    m = FaithfulnessMetric(extraction="model", wording="deepeval")
    assert m.measure(case(), judge) == 0.5
    assert m.claims == ["Refunds exist.", "Mars shipping."]
    assert m.truths == ["Refunds take 30 days."]
    schemas = [c[2] for c in judge.calls if c[0] == "generate"]
    assert schemas and all(s["type"] == "array" for s in schemas)
    with pytest.raises(MetricDefinitionError, match="extraction"):
        FaithfulnessMetric(extraction="magic")


def test_the_same_case_gives_the_same_prompts_in_the_same_order():
    a, b = Scripted({}), Scripted({})
    SummarizationMetric().measure(case(), a)
    SummarizationMetric().measure(case(), b)
    assert [c[1] for c in a.calls] == [c[1] for c in b.calls]


@pytest.mark.parametrize(
    "metric",
    [
        FaithfulnessMetric(penalize_ambiguous_claims=True, truths_extraction_limit=2),
        AnswerRelevancyMetric(threshold=0.7),
        ContextualPrecisionMetric(),
        ContextualRecallMetric(),
        ContextualRelevancyMetric(),
        HallucinationMetric(wording="trained"),
        SummarizationMetric(n=3, assessment_questions=["Is it?"]),
        PromptAlignmentMetric(["Be brief"]),
        BiasMetric(),
        ToxicityMetric(strict_mode=True),
        ExactMatchMetric(),
        PatternMatchMetric("a+", ignore_case=True),
    ],
)
def test_every_kind_round_trips_through_its_metric_file_dict(metric):
    data = metric.to_dict()
    again = metric_from_dict(json.loads(json.dumps(data)))
    assert type(again) is type(metric) and again.to_dict() == data
    assert again.name == metric.name


def test_a_metric_file_table_needs_no_name():
    m = metric_from_dict({"type": "faithfulness", "threshold": 0.7})
    assert m.name == "Faithfulness" and m.__name__ == "Faithfulness" and m.threshold == 0.7
    with pytest.raises(MetricDefinitionError, match="unknown"):
        metric_from_dict({"type": "faithfulness", "criteria": "x"})


def test_tool_calls_ride_on_the_case_and_round_trip():
    c = case(
        tools_called=[
            ToolCall(name="ImageAnalysis"),
            {"name": "Query", "input_parameters": {"q": 1}},
        ],
        expected_tools=[ToolCall(name="ImageAnalysis")],
    )
    assert c.tools_called[1] == ToolCall(name="Query", input_parameters={"q": 1})
    assert LLMTestCase.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert str(c.tools_called[1]) == 'Query with {"q": 1}'
    with pytest.raises(DataError):
        LLMTestCase(input="x", tools_called=[3])


def test_precision_and_recall_ask_the_trained_support_question_by_default():
    """A node is useful for the expected output when it supports it; an expected sentence is
    attributable to the nodes when they support it: the adapter's own question, on it."""
    judge = Scripted({})
    nodes = ["Node A.", "Node B."]
    precision = ContextualPrecisionMetric()
    assert precision.model == "smollm2-135m-faithful"
    precision.measure(case(retrieval_context=nodes), judge)
    asked = [c[1] for c in judge.calls]
    assert [p.blocks[1] for p in asked] == ["Input:\nNode A.\n\n", "Input:\nNode B.\n\n"]
    assert {p.blocks[2] for p in asked} == {"Actual Output:\n" + case().expected_output + "\n\n"}
    judge = Scripted({})
    ContextualRecallMetric().measure(case(retrieval_context=nodes), judge)
    asked = [c[1] for c in judge.calls]
    assert {p.blocks[1] for p in asked} == {"Input:\nNode A.\n\nNode B.\n\n"}
    assert [p.blocks[2] for p in asked] == [
        "Actual Output:\nWe offer a 30-day full refund.\n\n",
        "Actual Output:\nThere is no extra cost.\n\n",
    ]
    judge = Scripted({})
    deepeval = ContextualRecallMetric(wording="deepeval")
    assert deepeval.model is None
    deepeval.measure(case(retrieval_context=nodes), judge)
    assert judge.calls[0][1].question.startswith("Sentence of the Expected Output:")

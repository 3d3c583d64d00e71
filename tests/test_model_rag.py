"""DeepEval's RAG metrics on the real default judge: DeepEval's own per-metric examples
(the shoe-refund case its tests measure with a hosted model) score and give a reason, every
verdict is a probability distribution over its allowed answers, a run repeats exactly, and
a case's claims read its context once. With the trained faithfulness adapter, Faithfulness
tells a supported answer from an unsupported one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from anvil_local import (
    AnswerRelevancyMetric,
    BiasMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    ConversationalTestCase,
    FaithfulnessMetric,
    HallucinationMetric,
    LLMTestCase,
    PromptAlignmentMetric,
    SummarizationMetric,
    ToolCall,
    ToxicityMetric,
    Turn,
    TurnFaithfulnessMetric,
    TurnRelevancyMetric,
)

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent


def shoes() -> LLMTestCase:
    """DeepEval's test case for these metrics (tests/test_metrics/test_*_metric.py)."""
    return LLMTestCase(
        input="What if these shoes don't fit?",
        expected_output="We offer a 30-day full refund at no extra cost.",
        actual_output="We offer a 30-day full refund at no extra cost.",
        retrieval_context=["All customers are eligible for a 30 day full refund at no extra cost."],
        context=["All customers are eligible for a 30 day full refund at no extra cost."],
        tools_called=[ToolCall(name="ImageAnalysis"), ToolCall(name="ToolQuery")],
        expected_tools=[ToolCall(name="ImageAnalysis")],
    )


METRICS = [
    AnswerRelevancyMetric,
    FaithfulnessMetric,
    ContextualPrecisionMetric,
    ContextualRecallMetric,
    ContextualRelevancyMetric,
    HallucinationMetric,
    SummarizationMetric,
    BiasMetric,
    ToxicityMetric,
    lambda: PromptAlignmentMetric(["Reply in one sentence."]),
]


@pytest.mark.parametrize("make", METRICS, ids=lambda m: getattr(m, "__name__", "PromptAlignment"))
def test_deepevals_shoe_refund_case_scores_with_a_reason_and_repeats(make, judge):
    metric = make()
    case = shoes()
    score = metric.measure(case, judge)
    assert metric.score is not None and 0.0 <= score <= 1.0
    assert metric.reason is not None
    assert case.multimodal is False
    trace = metric.trace.to_dict()
    verdicts = [v for step in trace["steps"].values() for v in step]
    assert verdicts, "the case was judged"
    for v in verdicts:
        probs = v["probabilities"]
        assert sum(probs.values()) == pytest.approx(1.0, abs=1e-5)
        assert v["verdict"] == max(probs, key=probs.get)
    again = make()
    assert again.measure(shoes(), judge) == score
    assert again.trace.to_dict() == trace


def test_turn_metrics_judge_windows_on_the_real_judge(judge):
    convo = ConversationalTestCase(
        turns=[
            Turn(role="user", content="What if these shoes don't fit?"),
            Turn(
                role="assistant",
                content="We offer a 30-day full refund at no extra cost.",
                retrieval_context=["All customers are eligible for a 30 day full refund."],
            ),
            Turn(role="user", content="Thanks!"),
            Turn(role="assistant", content="You're welcome."),
        ]
    )
    relevancy = TurnRelevancyMetric(window_size=2)
    assert 0.0 <= relevancy.measure(convo, judge) <= 1.0
    assert len(relevancy.verdicts) == 2  # one verdict an exchange
    faithful = TurnFaithfulnessMetric()
    assert 0.0 <= faithful.measure(convo, judge) <= 1.0
    assert {v.group for v in faithful.verdicts} == {0, 1}


def test_faithfulness_on_the_trained_adapter_separates_supported_claims(real_data_dir):
    supported = shoes()
    unsupported = LLMTestCase(
        input="What if these shoes don't fit?",
        actual_output="We offer a 90-day refund. We ship to Mars.",
        retrieval_context=supported.retrieval_context,
    )
    metric = FaithfulnessMetric(model="smollm2-135m-faithful")
    assert metric.measure(supported) == 1.0
    assert metric.measure(unsupported) == 0.0
    assert metric.claims == ["We offer a 90-day refund.", "We ship to Mars."]
    assert all(v.p("no") > 0.9 for v in metric.verdicts)


def test_a_cases_claims_read_its_context_once(real_data_dir):
    """The context sits before every claim: the judge evaluates each claim's own tokens and
    the context once, within 5% of the prompt trie's distinct tokens."""
    case = LLMTestCase(
        input="What if these shoes don't fit?",
        actual_output=(
            "We offer a 30-day full refund at no extra cost. Refunds go to the card you paid "
            "with. We also ship to Mars. Shipping is free."
        ),
        retrieval_context=[
            "All customers are eligible for a 30 day full refund at no extra cost.",
            "Refunds are paid to the original card within five days.",
        ],
    )
    metric = FaithfulnessMetric(model="smollm2-135m-faithful")
    metric.measure(case)
    usage = metric.result.usage
    assert usage.calls == 4
    assert usage.reused_tokens > 0
    assert usage.evaluated_tokens <= 1.05 * usage.distinct_tokens


def test_a_metric_file_runs_under_anvil_eval_and_view_draws_its_verdicts(tmp_path, real_data_dir):
    metric = tmp_path / "faithfulness.toml"
    metric.write_text('type = "faithfulness"\nmodel = "smollm2-135m-faithful"\nthreshold = 0.6\n')
    data = tmp_path / "cases.jsonl"
    rows = [
        {**shoes().to_dict(), "id": "shoes"},
        {
            "id": "mars",
            "input": "What if these shoes don't fit?",
            "actual_output": "We ship to Mars.",
            "retrieval_context": shoes().retrieval_context,
        },
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "results.jsonl"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "anvil_local.cli",
            "eval",
            "--metric",
            str(metric),
            "--data",
            str(data),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1, run.stderr  # one case fails its threshold
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    results = {x["case_id"]: x for x in lines if "case_id" in x}
    assert results["shoes"]["score"] == 1.0 and results["mars"]["score"] == 0.0
    assert results["mars"]["trace"]["type"] == "verdicts"
    page = tmp_path / "view.html"
    view = subprocess.run(
        [sys.executable, "-m", "anvil_local.cli", "view", str(out), "--out", str(page)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert view.returncode == 0, view.stderr
    html = page.read_text()
    assert "We ship to Mars." in html and 'class="verdicts"' in html

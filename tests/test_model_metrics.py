"""G-Eval and DAG metrics against the real default model: structure and determinism (not
whether a 135M judge gets each case right)."""

import json
from pathlib import Path

import pytest

from anvil_local import GEval, LLMTestCase, SingleTurnParams
from anvil_local.judge import Judge, Prompt
from anvil_local.metrics.layout import case_blocks
from anvil_local.spec import load_metric

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
P = [SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT]


def summeval(n: int) -> list[LLMTestCase]:
    rows = [
        json.loads(x)
        for x in (ROOT / "examples" / "summeval_sample.jsonl").read_text().splitlines()
    ]
    return [
        LLMTestCase(input=r["input"], actual_output=r["actual_output"], id=r["id"])
        for r in rows[:n]
    ]


def semantic(trace: dict) -> dict:
    """A trace without timings and cache-dependent token counts."""
    steps = [{k: v for k, v in s.items() if k not in ("seconds", "tokens")} for s in trace["path"]]
    return {**trace, "path": steps}


def meeting_cases() -> list[LLMTestCase]:
    lines = (ROOT / "examples" / "meeting_summaries.jsonl").read_text().splitlines()
    return [LLMTestCase(**json.loads(x)) for x in lines]


def test_geval_scores_are_probabilities_and_repeat(judge: Judge, capsys):
    metric = load_metric(ROOT / "examples" / "geval" / "coherence.toml")
    metric.verbose_mode = True
    case = summeval(1)[0]
    score = metric.measure(case, judge)
    dist = metric.trace.to_dict()["distribution"]
    assert 0.0 <= score <= 1.0
    assert list(dist) == ["1", "2", "3", "4", "5"]
    assert sum(dist.values()) == pytest.approx(1.0, abs=1e-9)
    assert score == pytest.approx((metric.trace.to_dict()["weighted"] - 1) / 4)
    assert metric.reason
    shown = capsys.readouterr().out
    for part in (
        "steps:",
        "Read the Input and find its main topic",
        "distribution over 1-5",
        "reason:",
        f"score {score:.3f}",
    ):
        assert part in shown
    metric.verbose_mode = False
    assert metric.measure(case, judge) == score


def test_steps_are_generated_once_for_many_cases(judge: Judge):
    metric = GEval(
        name="Relevance",
        evaluation_params=P,
        include_reason=False,
        criteria="The summary keeps the important points of the source and nothing else.",
    )
    for case in summeval(4):
        metric.measure(case, judge)
    assert metric.steps_generated == 1
    steps = metric.trace.to_dict()["steps"]
    assert 3 <= len(steps) <= 4 and all(steps)


def test_metrics_share_the_input_and_cases_share_input_and_definition(judge: Judge):
    """G-Eval's layout: header, input, definition, output, question. Four metrics on one
    case read the input once; one metric on two summaries of an article reads the input and
    its definition once."""
    metrics = [
        load_metric(ROOT / "examples" / "geval" / f"{n}.toml")
        for n in ("coherence", "consistency", "fluency", "relevance")
    ]
    first_case, case = summeval(2)[:2]
    judge.choose(Prompt(("Something else.\n\n",), "?"), ["Yes", "No"])  # start cold
    usages = [m.run(case, judge, include_reason=False).usage for m in metrics]
    input_only = [SingleTurnParams.INPUT]
    input_tokens = len(judge.prompt_tokens(Prompt(case_blocks(case, input_only), "")))
    input_tokens -= len(judge._tail)
    assert usages[0].evaluated_tokens > input_tokens  # the first metric prefills the input
    for usage in usages[1:]:
        assert usage.reused_tokens >= input_tokens  # the others reuse it
        assert usage.evaluated_tokens == usage.prompt_tokens - usage.reused_tokens
    coherence = metrics[0]
    coherence.run(first_case, judge, include_reason=False)
    again = coherence.run(case, judge, include_reason=False).usage
    steps = coherence.evaluation_steps
    definition = len(judge.runtime.tokenize(coherence._definition_block(steps), special=False))
    assert again.reused_tokens >= input_tokens + definition  # only the output and question
    assert again.evaluated_tokens < usages[0].evaluated_tokens - definition


def test_headings_dag_walks_with_probabilities_and_repeats(judge: Judge):
    metric = load_metric(ROOT / "examples" / "headings_llm.toml")
    for case in meeting_cases():
        first = metric.run(case, judge)
        path = first.trace.to_dict()["path"]
        assert path[0]["node"] == "extract" and path[0]["output"]
        assert path[1]["node"] == "headings"
        for step in path[1:]:
            assert sum(step["probabilities"].values()) == pytest.approx(1.0, abs=1e-9)
            assert step["verdict"] == max(step["probabilities"], key=step["probabilities"].get)
        assert first.score in (0.0, 0.2, 0.4, 1.0)
        assert first.reason
        second = metric.run(case, judge)
        assert (
            semantic(second.trace.to_dict()) == semantic(first.trace.to_dict())
            and second.score == first.score
        )
        assert second.reason == first.reason


def test_soft_dag_gives_an_expected_score(judge: Judge):
    metric = load_metric(ROOT / "examples" / "headings_llm.toml")
    metric.soft = True
    metric.include_reason = False
    metric.measure(meeting_cases()[2], judge)
    assert 0.0 <= metric.expected_score <= 1.0
    assert metric.trace.to_dict()["explored_mass"] == pytest.approx(1.0, abs=0.05)
    assert len(metric.trace.to_dict()["walks"]) >= 2

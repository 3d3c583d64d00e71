"""The scheduler's order and G-Eval's layout on the real default model: every distribution is
bit for bit what a cold evaluation of the same prompt gives, and the run reads little more
than its prompt trie."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from anvil_local import (
    BinaryJudgementNode,
    DAGMetric,
    DeepAcyclicGraph,
    LLMTestCase,
    VerdictNode,
    evaluate,
)
from anvil_local.spec import load_metric

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
ARTICLES = (
    "The council voted on Tuesday to close the Elm Street library in March. The building "
    "needs a new roof, and repairs would cost more than a new branch near the station.",
    "A heatwave is expected to reach the coast by Friday, with temperatures above 35 degrees. "
    "Officials asked residents to drink water and to check on elderly neighbours.",
)
SUMMARIES = (  # the first and last of each open alike: the scheduler puts them side by side
    (
        "The library on Elm Street will close in March.",
        "The council will build a new roof.",
        "The library on Elm Street will stay open.",
    ),
    (
        "A heatwave reaches the coast on Friday.",
        "Officials expect snow and cold on Friday.",
        "A heatwave reaches the coast next month.",
    ),
)


def _cases() -> list[LLMTestCase]:
    return [
        LLMTestCase(input=article, actual_output=summary, id=f"a{i}-s{j}")
        for i, (article, summaries) in enumerate(zip(ARTICLES, SUMMARIES, strict=True))
        for j, summary in enumerate(summaries)
    ]


def _metrics() -> list[Any]:
    gevals = [
        load_metric(ROOT / "examples" / "geval" / f"{name}.toml")
        for name in ("coherence", "consistency")
    ]
    node = BinaryJudgementNode(
        criteria="Is every statement in the Actual Output supported by the Input?",
        evaluation_params=["input", "actual_output"],
        children=[VerdictNode(False, score=0), VerdictNode(True, score=10)],
    )
    dag = DAGMetric("Supported", DeepAcyclicGraph([node]), include_reason=False, soft=True)
    # case-major, with the unconditional reads prepared for the whole group first
    contrast = load_metric(ROOT / "examples" / "small_judge" / "likelihood_contrast.toml")
    return [gevals[0], dag, contrast, gevals[1]]


def _plain(value: Any) -> Any:
    """A trace without its token counts and timings (which depend on what ran before)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in ("tokens", "seconds")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_scheduled_runs_equal_cold_evaluations_bit_for_bit(judge):
    cases, metrics = _cases(), _metrics()
    outcome = evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False)
    scheduled = {(line.case_id, line.metric): line.result for line in outcome.lines}
    assert len(scheduled) == len(cases) * len(metrics)

    runtime = judge.runtime
    for case in cases:
        for metric in metrics:
            runtime._tokens, runtime._exact = [], 0  # an empty KV cache: a cold evaluation
            cold = metric.run(case, judge, include_reason=False)
            warm = scheduled[(case.id, metric.name)]
            assert warm.score == cold.score  # exactly, not approximately
            assert _plain(warm.trace.to_dict()) == _plain(cold.trace.to_dict())


def _usage(judge, cases, metrics):
    judge.trie.__init__()  # count this run's prompts only...
    judge.runtime._tokens, judge.runtime._exact = [], 0  # ...on an empty KV cache
    return evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False).usage


def test_a_run_reads_little_more_than_its_prompt_trie(judge):
    cases, metrics = _cases(), _metrics()
    usage = _usage(judge, cases, [m for m in metrics if m.name != "Likelihood contrast"])
    assert usage.distinct_tokens > 0
    # each exact call re-reads at most its last two tokens (no one-token batches), and
    # nothing else: what the trie holds is read once
    assert usage.distinct_tokens <= usage.evaluated_tokens
    assert usage.evaluated_tokens <= usage.distinct_tokens + 2 * usage.calls
    assert usage.evaluated_tokens <= 1.1 * usage.distinct_tokens


def test_the_contrast_reads_its_unconditional_prompts_before_the_shared_input(
    judge, monkeypatch: pytest.MonkeyPatch
):
    """Interleaved, the unconditional read evicts the article before every case; prepared
    for the group first, the article is read once per group (the head of the unconditional
    prompt is read again once per group after the first)."""
    from anvil_local.metrics.likelihood import LikelihoodMetric

    cases, metrics = _cases(), _metrics()
    assert "Likelihood contrast" in [m.name for m in metrics]
    prepared = _usage(judge, cases, metrics)
    assert prepared.evaluated_tokens <= 1.1 * prepared.distinct_tokens
    monkeypatch.setattr(LikelihoodMetric, "prepare", lambda self, cases, session: None)
    interleaved = _usage(judge, cases, metrics)
    assert interleaved.distinct_tokens == prepared.distinct_tokens
    assert interleaved.evaluated_tokens > prepared.evaluated_tokens + len(ARTICLES[0]) // 8

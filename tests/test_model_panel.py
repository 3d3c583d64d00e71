"""A G-Eval panel on the real default model: every member's distribution is bit for bit what a
cold evaluation of its prompt gives, and the panel reads each summary once for all members."""

from __future__ import annotations

from pathlib import Path

import pytest

from anvil_local import LLMTestCase, evaluate, load_metrics
from anvil_local.spec import load_metric

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
ARTICLE = (
    "The council voted on Tuesday to close the Elm Street library in March. The building "
    "needs a new roof, and repairs would cost more than a new branch near the station."
)
SUMMARIES = (
    "The library on Elm Street will close in March because the roof needs repairs.",
    "The council will build a new roof for the station.",
    "The library on Elm Street will stay open.",
)
CASES = [LLMTestCase(input=ARTICLE, actual_output=s, id=f"s{i}") for i, s in enumerate(SUMMARIES)]
NAMES = ("coherence", "consistency", "fluency", "relevance")


def _fresh(judge) -> None:
    judge.trie.__init__()
    judge.runtime._tokens, judge.runtime._exact = [], 0  # an empty KV cache


def test_panel_members_equal_cold_evaluations_bit_for_bit(judge):
    panel = load_metrics(ROOT / "examples" / "geval" / "summeval_panel.toml")
    outcome = evaluate(CASES, panel, model=judge, use_cache=False, include_reason=False)
    scheduled = {(line.case_id, line.metric): line.result for line in outcome.lines}
    assert len(scheduled) == len(CASES) * len(panel)
    for case in CASES:
        for metric in panel:
            _fresh(judge)
            cold = metric.run(case, judge, include_reason=False)
            warm = scheduled[(case.id, metric.name)]
            assert warm.score == cold.score  # exactly
            assert warm.trace.to_dict()["distribution"] == cold.trace.to_dict()["distribution"]


def _extra_tokens(judge, metrics) -> int:
    """Tokens the second and later cases cost after the first (same article)."""
    counts = []
    for cases in (CASES[:1], CASES):
        _fresh(judge)
        usage = evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False).usage
        assert usage.evaluated_tokens <= 1.1 * usage.distinct_tokens  # each run reads its trie
        counts.append(usage.evaluated_tokens)
    return counts[1] - counts[0]


def test_a_panel_reads_each_summary_once_for_all_members(judge):
    separate = [load_metric(ROOT / "examples" / "geval" / f"{n}.toml") for n in NAMES]
    panel = load_metrics(ROOT / "examples" / "geval" / "summeval_panel.toml")
    lengths = [len(judge.runtime.tokenize(s, special=False)) for s in SUMMARIES[1:]]
    cue = len(judge.runtime.tokenize("Consistency score (1 to 5):", special=False))
    # a member's own part: its cue and the template's closing tokens (under 10 here)
    panel_bound = sum(lengths) + len(lengths) * len(panel) * (cue + 10)
    assert _extra_tokens(judge, panel) <= panel_bound
    # alone, every metric reads every summary after its own definition
    assert _extra_tokens(judge, separate) >= len(separate) * sum(lengths)

"""Conversations and arenas against the real default model: structure, the prompt trie, the
orders of an arena (not whether a 135M judge gets each case right). Kept small."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil_local import ArenaTestCase, Contestant, LLMTestCase, evaluate, load_metric
from anvil_local.run.dataset import read_cases

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "conversations"
#: Two conversations whose walks reach the judge (one also stops in code).
CASE_IDS = ("asked-then-refunded", "refunded-without-asking", "rude-no-refund")


def _fresh(judge) -> None:
    judge.trie.__init__()  # count this run's prompts only, on an empty KV cache
    judge.runtime._tokens, judge.runtime._exact = [], 0


def test_conversations_are_read_once_per_case_and_the_code_decides_the_rule(judge):
    rows = [r for r in read_cases(EXAMPLES / "support.jsonl") if r.case_id in CASE_IDS]
    dag = load_metric(EXAMPLES / "support_dag.toml")
    dag.soft = True  # also walk the windowed node below `polite`, whatever the judge says
    geval = load_metric(EXAMPLES / "support_geval.toml")
    _fresh(judge)
    outcome = evaluate(rows, [dag, geval], model=judge, use_cache=False, include_reason=False)
    assert all(line.result.error is None for line in outcome.lines)
    results = {(line.case_id, line.metric): line.result for line in outcome.lines}

    def verdicts(case_id: str) -> dict[str, str]:
        path = results[(case_id, "Refund policy")].trace.to_dict()["path"]
        return {step["node"]: step["verdict"] for step in path}

    assert verdicts("asked-then-refunded")["asked_first"] == "Yes"
    assert verdicts("refunded-without-asking") == {"asked_first": "No"}
    assert results[("refunded-without-asking", "Refund policy")].score == 0.0
    assert verdicts("rude-no-refund")["asked_first"] == "Yes"  # no promise: the rule holds
    walks = results[("rude-no-refund", "Refund policy")].trace.to_dict()["walks"]
    assert any("acknowledged=Yes" in w["verdicts"] for w in walks)  # the window was read
    for case_id in CASE_IDS:
        scored = results[(case_id, "Support quality")]
        assert 0.0 <= scored.score <= 1.0
        assert sum(scored.trace.to_dict()["distribution"].values()) == pytest.approx(1.0)
    usage = outcome.usage
    # the conversation is the shared block: what the run's prompt trie holds is read once
    assert usage.distinct_tokens <= usage.evaluated_tokens
    assert usage.evaluated_tokens <= usage.distinct_tokens + 2 * usage.calls


def test_an_arena_reads_both_orders_and_reports_the_position_bias(judge):
    row = json.loads((ROOT / "examples" / "summeval_sample.jsonl").read_text().splitlines()[0])
    other = json.loads((ROOT / "examples" / "summeval_sample.jsonl").read_text().splitlines()[1])
    case = ArenaTestCase(
        contestants=[
            Contestant(
                "first", LLMTestCase(input=row["input"], actual_output=row["actual_output"])
            ),
            Contestant(
                "second", LLMTestCase(input=row["input"], actual_output=other["actual_output"])
            ),
        ]
    )
    metric = load_metric(ROOT / "examples" / "arena" / "summary_preference.toml")
    metric.include_reason = False
    winner = metric.measure(case, judge)
    trace = metric.trace.to_dict()
    assert winner in ("first", "second") and winner == trace["winner"]
    assert sum(trace["probabilities"].values()) == pytest.approx(1.0)
    assert [o["order"] for o in trace["orders"]] == [["first", "second"], ["second", "first"]]
    for order in trace["orders"]:
        assert sum(order["probabilities"].values()) == pytest.approx(1.0)
    first_position = [o["probabilities"]["A"] for o in trace["orders"]]
    assert trace["position_bias"] == pytest.approx(sum(first_position) / 2 - 0.5)
    assert metric.score == pytest.approx(max(trace["probabilities"].values()))
    one = load_metric(ROOT / "examples" / "arena" / "summary_preference_one_order.toml")
    one.include_reason = False
    one.measure(case, judge)
    # the declared order reads the same prompt with and without debiasing
    assert one.trace.to_dict()["orders"][0] == trace["orders"][0]

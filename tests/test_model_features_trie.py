"""The shipped XSum head on the real default judge reads its prompt trie once (evaluated
tokens within 5% of the trie's distinct tokens), and its readings are those of each member
read on its own: sharing the document's prefix changes no value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anvil_local import LLMTestCase, evaluate
from anvil_local.judge.pool import JudgePool
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.features import readings
from anvil_local.models.resolve import resolve_model
from anvil_local.spec.files import load_metric

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parent.parent
HEAD = ROOT / "examples" / "small_judge" / "consistency_head_xsum.toml"


def qags_cases(count: int) -> list[LLMTestCase]:
    path = ROOT / "benchmarks" / "data" / "qags_xsum.jsonl"
    with path.open(encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(count), handle, strict=False)]
    return [
        LLMTestCase(input=r["input"], actual_output=r["actual_output"], id=r["id"]) for r in rows
    ]


def test_the_xsum_head_reads_its_trie_once_and_its_members_values(default_model_path: Path):
    pool = JudgePool()  # a judge of its own: an empty KV cache and an empty trie
    try:
        judge = pool.get(resolve_model(default_model_path))
        metric = load_metric(HEAD)
        cases = qags_cases(3)
        outcome = evaluate(cases, [metric], model=judge, use_cache=False, include_reason=False)
        usage = outcome.usage
        assert not any(line.result.error for line in outcome.lines)
        assert usage.evaluated_tokens <= 1.05 * usage.distinct_tokens, usage

        alone: dict[str, dict[str, float]] = {case.id: {} for case in cases}
        for member in metric.features:  # each member alone, case by case
            for case in cases:
                result = member.run(case, JudgeSession(judge), include_reason=False)
                alone[case.id].update(readings(member.name, result.score, result.trace.to_dict()))
        found = {line.case_id: line.result.trace.to_dict()["values"] for line in outcome.lines}
        assert found == alone
    finally:
        pool.clear()

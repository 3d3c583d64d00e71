"""A features metric reads its prompt trie once: the token counters of the shipped heads on
a fake runtime whose log-probabilities depend only on the tokens before each target (as the
real runtime's exact reads do), so the readings must not depend on the order either."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from anvil_local import LLMTestCase, evaluate
from anvil_local.judge.judge import Judge
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.runtime import common_prefix
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.features import readings as member_readings
from anvil_local.spec.files import load_metric
from tests.fakes import FakeRuntime

ROOT = Path(__file__).resolve().parent.parent
HEADS = ROOT / "examples" / "small_judge"
DATA = ROOT / "benchmarks" / "data"


class LogprobRuntime(FakeRuntime):
    """Byte tokens; log P(token j) is drawn from a hash of tokens[:j + 1], so a value is
    the same whatever was read before (the real runtime's exact reads promise that)."""

    def logprobs(self, tokens: Sequence[int], start: int) -> tuple[list[float], int, int]:
        tokens = list(tokens)
        keep = min(common_prefix(self.state, tokens), len(tokens) - 2)
        self.state = tokens
        self.evaluated.append(len(tokens) - keep)
        values, h = [], 17
        for j, token in enumerate(tokens):
            h = (h * 1_000_003 + token + 1) % (1 << 61)
            if j >= start:
                values.append(-((h >> 7) % 997) / 100.0)
        return values, keep, len(tokens) - keep


def judge() -> Judge:
    return Judge(LogprobRuntime(n_ctx=16_384), ResolvedModel("fake", "/fake.gguf", "f" * 64))


def cases(name: str, count: int) -> list[LLMTestCase]:
    with (DATA / name).open(encoding="utf-8") as handle:
        rows = [json.loads(line) for _, line in zip(range(count), handle, strict=False)]
    return [
        LLMTestCase(input=r["input"], actual_output=r["actual_output"], id=r["id"]) for r in rows
    ]


def readings(outcome) -> dict[str, dict[str, float]]:
    return {line.case_id: line.result.trace.to_dict()["values"] for line in outcome.lines}


@pytest.mark.parametrize(
    ("head", "data", "count"),
    [
        pytest.param("consistency_head_xsum.toml", "qags_xsum.jsonl", 3, id="xsum-3-documents"),
        pytest.param(
            "coherence_head_summeval.toml", "summeval.jsonl", 16, id="summeval-16-of-1-document"
        ),
    ],
)
def test_a_shipped_head_reads_its_trie_once_with_the_readings_of_its_members_alone(
    head: str, data: str, count: int
):
    metric = load_metric(HEADS / head)
    group = cases(data, count)
    outcome = evaluate(group, [metric], model=judge(), use_cache=False, include_reason=False)
    usage = outcome.usage
    assert not any(line.result.error for line in outcome.lines)
    assert usage.distinct_tokens > 0
    assert usage.evaluated_tokens / usage.distinct_tokens <= 1.05, usage

    # each member on its own, case by case, on a fresh judge: the same readings
    alone: dict[str, dict[str, float]] = {case.id: {} for case in group}
    for member in metric.features:
        session = JudgeSession(judge())
        for case in group:
            result = member.run(case, session, include_reason=False)
            alone[case.id].update(
                member_readings(member.name, result.score, result.trace.to_dict())
            )
    assert readings(outcome) == alone


def test_shared_reads_read_an_identical_likelihood_once():
    fake = judge()
    session = JudgeSession(fake)
    prompt = Prompt(("Input:\nThe bridge closes on Monday.",), "Summarise the Input.", "c")
    with session.shared_reads():
        first = session.likelihood(prompt, "The bridge shuts.")
        again = session.likelihood(prompt, "The bridge shuts.")
        other = session.likelihood(prompt, "It opens.")
    assert again.logprobs == first.logprobs and again.tokens == first.tokens
    assert again.usage.evaluated_tokens == 0 < first.usage.evaluated_tokens
    assert again.usage.reused_tokens == again.usage.prompt_tokens == first.usage.prompt_tokens
    assert other.logprobs != first.logprobs
    assert len(fake.runtime.evaluated) == 2
    after = session.likelihood(prompt, "The bridge shuts.")  # closed: read again
    assert after.logprobs == first.logprobs and len(fake.runtime.evaluated) == 3


def test_one_case_measured_alone_reads_each_prompt_once():
    """Without a group's `prepare` (`metric.run` on one case), the two likelihood members
    still share their identical readings: two reads (with and without the document)."""
    metric = load_metric(HEADS / "consistency_head_xsum.toml")
    fake = judge()
    result = metric.run(cases("qags_xsum.jsonl", 1)[0], JudgeSession(fake), include_reason=False)
    assert result.error is None
    assert len(fake.runtime.evaluated) == 2
    assert result.usage.evaluated_tokens == sum(fake.runtime.evaluated)

"""Each training pair rendered as exactly what a metric sends the judge: the metric's own
prompt (chat template, header, fields, question), tokenized by the judge's own code, and the
tokens of each answer option. Training then targets the very verdict tokens the metric reads.

The metric runs as usual against a `RecordingJudge`: a real judge that tokenizes but does not
evaluate, and answers every question with equal odds, keeping what it was asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import ChoiceResult, Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.testcase import LLMTestCase


@dataclass(frozen=True)
class Rendered:
    """One question as token ids, with each option's tokens in declared order."""

    tokens: list[int]
    options: tuple[str, ...]
    option_tokens: list[list[int]]


class RecordingJudge:
    """Stands in for the judge inside a metric: records each `choose`, evaluates nothing."""

    def __init__(self, judge: Any) -> None:
        self._judge = judge
        self.model = judge.model
        self.asked: list[tuple[Prompt, tuple[str, ...]]] = []

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        labels = tuple(str(o) for o in options)
        self.asked.append((prompt, labels))
        even = tuple(1.0 / len(labels) for _ in labels)
        return ChoiceResult(labels, even, 0, Usage(), 0.0)

    def __getattr__(self, name: str) -> Any:
        if name in ("score", "generate", "likelihood", "hidden_state", "decode_choice"):
            raise MetricDefinitionError(
                f"a training metric asks one yes/no or multiple-choice question; this one "
                f"calls the judge's {name}()"
            )
        raise AttributeError(name)


class Renderer:
    """Renders cases through one metric with one judge (loaded once)."""

    def __init__(self, metric: Any, judge: Any) -> None:
        self.metric = metric
        self.judge = judge

    def ask(self, case: LLMTestCase) -> tuple[Prompt, tuple[str, ...]]:
        """The one question the metric asks the judge about `case`, and its options."""
        recorder = RecordingJudge(self.judge)
        self.metric.run(case, JudgeSession(recorder), include_reason=False)
        if len(recorder.asked) != 1:
            raise MetricDefinitionError(
                f"a training metric must ask the judge exactly one question a case; "
                f"{self.metric.name!r} asked {len(recorder.asked)}"
            )
        return recorder.asked[0]

    def render(self, case: LLMTestCase) -> Rendered:
        prompt, options = self.ask(case)
        tokens = self.judge.prompt_tokens(prompt)
        option_tokens = [list(self.judge.format.option_tokens(o.strip())) for o in options]
        return Rendered(tokens, options, option_tokens)

"""A third-party metric kind, the way a plugin package would write one: registered under
its own `type`, rebuilt from its dict in any worker."""

from __future__ import annotations

import time
from typing import Any

from anvil_local.judge.prompt import Prompt
from anvil_local.metrics.base import BaseMetric, MetricResult, check_threshold
from anvil_local.metrics.layout import case_blocks
from anvil_local.metrics.result import RawTrace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


@register_metric("keyword")
class KeywordMetric(BaseMetric):
    """The mean probability that the judge says the output mentions each keyword."""

    def __init__(self, name: str, keywords: list[str], threshold: float = 0.5) -> None:
        self.name = name
        self.keywords = list(keywords)
        self.threshold = check_threshold(threshold)

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "name": self.name,
            "keywords": self.keywords,
            "threshold": self.threshold,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KeywordMetric:
        return cls(data["name"], data["keywords"], data.get("threshold", 0.5))

    def required_params(self) -> list[SingleTurnParams]:
        return [SingleTurnParams.ACTUAL_OUTPUT]

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        session = as_session(session)
        blocks = case_blocks(case, self.required_params())
        found = {}
        for keyword in self.keywords:
            question = f"Does the text mention {keyword}? Reply with Yes or No only."
            choice = session.choose(Prompt(blocks, question, case.label), ["Yes", "No"])
            found[keyword] = choice.probabilities[0]
        score = sum(found.values()) / len(found)
        return MetricResult(
            self.name,
            score,
            score >= self.threshold,
            self.threshold,
            trace=RawTrace({"type": "keyword", "p_yes": found}),
            seconds=time.perf_counter() - start,
        )

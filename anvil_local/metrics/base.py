"""What every metric shares: DeepEval-style attributes set by `measure`, and a typed result."""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.results import Usage
from anvil_local.testcase import LLMTestCase

#: Reasons are short: a sentence or two, bounded so they cannot dominate the run time.
REASON_MAX_TOKENS = 80


@dataclass
class MetricResult:
    """One metric on one case. A judge failure is an error, never a low score."""

    metric: str
    score: float | None
    success: bool | None
    threshold: float
    reason: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "score": self.score,
            "success": self.success,
            "threshold": self.threshold,
            "reason": self.reason,
            "trace": self.trace,
            "tokens": self.usage.to_dict(),
            "seconds": round(self.seconds, 4),
            "error": self.error,
        }


def check_threshold(threshold: float) -> float:
    if not isinstance(threshold, int | float) or isinstance(threshold, bool):
        raise MetricDefinitionError(f"threshold must be a number, got {threshold!r}")
    if not 0 <= threshold <= 1:
        raise MetricDefinitionError(f"threshold must be between 0 and 1, got {threshold}")
    return float(threshold)


class BaseMetric(ABC):
    """A metric: `measure(case)` sets and returns `score`, and sets `success`, `reason`."""

    name: str
    threshold: float
    include_reason: bool
    strict_mode: bool
    verbose_mode: bool
    model: Any

    score: float | None = None
    success: bool | None = None
    reason: str | None = None
    result: MetricResult | None = None
    error: str | None = None

    @property
    def trace(self) -> dict[str, Any] | None:
        return self.result.trace if self.result else None

    @abstractmethod
    def run(
        self, case: LLMTestCase, judge: Any = None, *, include_reason: bool | None = None
    ) -> MetricResult:
        """Judge one case and return the result, without touching the metric's attributes."""

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The canonical definition (what a metric file holds; part of every cache key)."""

    @abstractmethod
    def required_params(self) -> list[Any]:
        """Every test-case field the metric reads (checked before any judging)."""

    def measure(self, test_case: LLMTestCase, judge: Any = None) -> float:
        """DeepEval's entry point: judge the case, set score/success/reason, return the score."""
        result = self.run(test_case, judge)
        self.result = result
        self.score = result.score
        self.success = result.success
        self.reason = result.reason
        self.error = result.error
        if self.verbose_mode:
            from anvil_local.metrics.render import render_result

            sys.stdout.write(render_result(result) + "\n")
        return result.score if result.score is not None else 0.0

    def conclude(
        self,
        judge: Any,
        reason_prompt: Any,
        include_reason: bool | None,
        score: float,
        trace: dict[str, Any],
        usage: Usage,
        start: float,
    ) -> MetricResult:
        """The result of a judged case; the reason (if wanted) is generated last, after the
        score is fixed, so the score never depends on it."""
        reason = None
        if self.include_reason if include_reason is None else include_reason:
            generated = judge.generate(reason_prompt, REASON_MAX_TOKENS)
            reason = generated.text.strip()
            usage = usage + generated.usage
        return MetricResult(
            metric=self.name,
            score=score,
            success=score >= self.threshold,
            threshold=self.threshold,
            reason=reason,
            trace=trace,
            usage=usage,
            seconds=time.perf_counter() - start,
        )

    def is_successful(self) -> bool:
        return bool(self.success)

    def resolve_judge(self, judge: Any = None) -> Any:
        from anvil_local.judge import get_judge

        return get_judge(judge if judge is not None else self.model)

"""CodeMetric: a score computed by a check, no model involved (kind `check`).

A numeric check's value is the score, clipped to 0..1 (n-gram overlap, for instance); a
bool check scores 1 or 0. It stands alone as a baseline any judge must beat, or hangs off a
DAG verdict, so that code decides the part of a metric that code does exactly.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.base import (
    BaseMetric,
    MetricResult,
    check_name,
    check_threshold,
)
from anvil_local.metrics.checks import run_check, validate_check
from anvil_local.metrics.dag.code import _field_text
from anvil_local.metrics.result import Trace
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams, as_param


@dataclass
class CodeTrace(Trace):
    check: str
    value: float | bool

    def to_dict(self) -> dict[str, Any]:
        return {"type": "check", "check": self.check, "value": self.value}

    def lines(self) -> list[str]:
        return [f"  {self.check} = {self.value}"]


@register_metric("check")
class CodeMetric(BaseMetric):
    title = "check metric"

    def __init__(
        self,
        name: str,
        check: str,
        field: SingleTurnParams | str = SingleTurnParams.ACTUAL_OUTPUT,
        source: SingleTurnParams | str | None = None,
        args: dict[str, Any] | None = None,
        threshold: float = 0.5,
    ) -> None:
        check_name(name)
        if args is not None and not isinstance(args, dict):
            raise MetricDefinitionError("'args' must be a table of the check's arguments")
        validate_check(check, dict(args or {}))
        self.name = name
        self.check = check
        self.field = as_param(field)
        self.source = as_param(source) if source is not None else None
        self.args = dict(args or {})
        self.threshold = check_threshold(threshold)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.kind,
            "name": self.name,
            "check": self.check,
            "field": self.field.value,
        }
        if self.source is not None:
            data["source"] = self.source.value
        if self.args:
            data["args"] = self.args
        data["threshold"] = self.threshold
        return data

    def required_params(self) -> list[SingleTurnParams]:
        return [self.field, *([self.source] if self.source else [])]

    def run(
        self, case: LLMTestCase, session: Any = None, *, include_reason: bool | None = None
    ) -> MetricResult:
        """No judge: `session` is accepted (and ignored) like any metric's."""
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        source = _field_text(case, self.source) if self.source is not None else None
        value = run_check(self.check, _field_text(case, self.field), source, self.args)
        score = float(min(1.0, max(0.0, float(value))))
        return MetricResult(
            self.name,
            score,
            score >= self.threshold,
            self.threshold,
            trace=CodeTrace(self.check, value),
            seconds=time.perf_counter() - start,
        )

"""The metrics DeepEval computes without a judge: JsonCorrectness, ExactMatch, PatternMatch.

JsonCorrectness asks DeepEval's model only for a reason when validation fails; here the
reason is the validation error itself, so none of the three loads a model.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.judge.results import Usage
from anvil_local.metrics.base import MetricResult
from anvil_local.metrics.rag.base import DecomposedMetric, Found
from anvil_local.metrics.rag.verdicts import Verdict
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


def _verdict(hit: bool, item: str) -> Verdict:
    return Verdict("yes" if hit else "no", item, {"yes": float(hit), "no": float(not hit)})


class CodeOnly(DecomposedMetric):
    """No judge: `run` ignores the session it is given."""

    uses_judge = False

    def run(
        self, case: LLMTestCase, session: Any = None, *, include_reason: bool | None = None
    ) -> MetricResult:
        return super().run(case, session, include_reason=include_reason)  # type: ignore[arg-type]


@register_metric("exact_match")
class ExactMatchMetric(CodeOnly):
    title = "exact match metric"
    deepeval_name = "Exact Match"
    required = (SingleTurnParams.ACTUAL_OUTPUT, SingleTurnParams.EXPECTED_OUTPUT)
    formula = "1 if the stripped output equals the stripped expected output, else 0"

    def __init__(
        self,
        threshold: float = 1,
        verbose_mode: bool = False,
        flaky: bool = False,
        name: str | None = None,
    ) -> None:
        self._setup({**locals(), "include_reason": True})

    def judge_case(self, case: LLMTestCase, session: Any) -> Found:
        output = (case.actual_output or "").strip()
        expected = (case.expected_output or "").strip()
        hit = output == expected
        self_attrs = {"precision": float(hit), "recall": float(hit), "f1": float(hit)}
        return Found(
            score=float(hit),
            expected=float(hit),
            steps={"match": [_verdict(hit, output)]},
            usage=Usage(),
            reason_args={"expected": expected, "hit": hit},
            attributes=self_attrs,
        )

    @staticmethod
    def _reason(score: float, expected: str, hit: bool) -> str:
        if hit:
            return "The actual and expected outputs are exact matches."
        return "The actual and expected outputs are different."

    def question(self, method: str, **context: Any) -> str:
        return self._reason(**context)


@register_metric("pattern_match")
class PatternMatchMetric(CodeOnly):
    title = "pattern match metric"
    deepeval_name = "Pattern Match"
    required = (SingleTurnParams.ACTUAL_OUTPUT,)
    formula = "1 if the stripped output fully matches the pattern, else 0"

    def __init__(
        self,
        pattern: str,
        ignore_case: bool = False,
        threshold: float = 1.0,
        verbose_mode: bool = False,
        flaky: bool = False,
        name: str | None = None,
    ) -> None:
        if not isinstance(pattern, str):
            raise MetricTypeError(f"pattern must be a string, got {type(pattern).__name__}")
        try:
            self._compiled = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise MetricDefinitionError(f"invalid regex pattern {pattern!r}: {exc}") from None
        self.pattern = pattern
        self.ignore_case = bool(ignore_case)
        self._setup(
            {**locals(), "include_reason": True}, pattern=pattern, ignore_case=self.ignore_case
        )

    def judge_case(self, case: LLMTestCase, session: Any) -> Found:
        output = (case.actual_output or "").strip()
        hit = self._compiled.fullmatch(output) is not None
        return Found(
            score=float(hit),
            expected=float(hit),
            steps={"match": [_verdict(hit, output)]},
            usage=Usage(),
            reason_args={"hit": hit},
        )

    def question(self, method: str, **context: Any) -> str:
        if context["hit"]:
            return f"The actual output fully matches the pattern {self.pattern!r}."
        return f"The actual output does not fully match the pattern {self.pattern!r}."


def _schema_class(value: Any) -> Any:
    """A pydantic model class, or "module:QualName" as a metric file holds it."""
    if isinstance(value, str):
        module, _, qualname = value.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, ValueError) as exc:
            raise MetricDefinitionError(
                f"expected_schema {value!r} cannot be imported (module:QualName)"
            ) from exc
        value = found
    if not hasattr(value, "model_validate_json"):
        raise MetricTypeError("expected_schema must be a pydantic model class")
    return value


@register_metric("json_correctness")
class JsonCorrectnessMetric(CodeOnly):
    title = "JSON correctness metric"
    deepeval_name = "Json Correctness"
    required = (SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT)
    formula = "1 if the output validates against expected_schema, else 0"

    def __init__(
        self,
        expected_schema: Any,
        model: Any = None,
        threshold: float = 0.5,
        async_mode: bool = True,
        include_reason: bool = True,
        strict_mode: bool = True,
        verbose_mode: bool = False,
        flaky: bool = False,
        evaluation_template: Any = None,
        eval_mode: str | None = None,
        name: str | None = None,
    ) -> None:
        self.expected_schema = _schema_class(expected_schema)
        schema_name = f"{self.expected_schema.__module__}:{self.expected_schema.__qualname__}"
        self._setup(locals(), expected_schema=schema_name)

    def judge_case(self, case: LLMTestCase, session: Any) -> Found:
        output = case.actual_output or ""
        error = None
        try:
            self.expected_schema.model_validate_json(output)
        except Exception as exc:  # pydantic's ValidationError, or bad JSON
            error = " ".join(str(exc).split())
        hit = error is None
        return Found(
            score=float(hit),
            expected=float(hit),
            steps={"validation": [_verdict(hit, output)]},
            usage=Usage(),
            reason_args={"error": error},
        )

    def question(self, method: str, **context: Any) -> str:
        if context["error"] is None:
            return "The generated JSON is valid against the expected schema."
        return f"The generated JSON is not valid against the expected schema: {context['error']}"

"""What every metric shares: DeepEval-style attributes set by `measure`, and a typed result.

A metric kind is a BaseMetric subclass with a `kind` name, `to_dict` and `run`; its dict's
keys are its constructor's arguments, so `from_dict` is inherited. Registering it
(`anvil_local.registry.register_metric`) makes metric files, workers and every executor able
to rebuild it from its dict.
"""

from __future__ import annotations

import functools
import inspect
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.results import Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.keywords import NO_EFFECT
from anvil_local.metrics.render import render_result
from anvil_local.metrics.result import MetricResult, Trace
from anvil_local.models.sessions import as_session
from anvil_local.testcase import LLMTestCase

#: Reasons are short: a sentence or two, bounded so they cannot dominate the run time.
REASON_MAX_TOKENS = 80


def check_name(name: Any) -> str:
    """A metric's name: non-empty, one line (it heads a results line, a summary row and a
    JUnit test case)."""
    if not isinstance(name, str) or not name.strip():
        raise MetricDefinitionError("a metric needs a non-empty 'name'")
    if any(not ch.isprintable() for ch in name):
        raise MetricDefinitionError(f"a metric's name is one line of printable text, got {name!r}")
    return name


@dataclass(frozen=True)
class DefinitionFields:
    """The keys a kind's dict may hold and those it must hold, read once from the
    signature of its constructor."""

    accepted: frozenset[str]
    required: tuple[str, ...]  # in signature order


@functools.cache
def definition_fields(cls: type[BaseMetric]) -> DefinitionFields:
    """A metric kind's definition keys: its constructor's keyword arguments, less those that
    say how it runs rather than what it judges (`run_arguments`)."""
    accepted: list[str] = []
    required: list[str] = []
    for name, param in inspect.signature(cls.__init__).parameters.items():
        if name == "self" or name in cls.run_arguments:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        accepted.append(name)
        if param.default is param.empty:
            required.append(name)
    return DefinitionFields(frozenset(accepted), tuple(required))


def definition_kwargs(data: dict[str, Any], cls: type[BaseMetric]) -> dict[str, Any]:
    """The keyword arguments a metric dict gives (`type` aside): unknown keys and missing
    required ones are definition errors naming the kind."""
    fields = definition_fields(cls)
    unknown = sorted(set(data) - fields.accepted - {"type"})
    if unknown:
        raise MetricDefinitionError(f"unknown {cls.title} field(s): {', '.join(unknown)}")
    for key in fields.required:
        if key not in data:
            raise MetricDefinitionError(f"a {cls.title} needs a {key!r}")
    return {k: v for k, v in data.items() if k in fields.accepted}


def check_threshold(threshold: float) -> float:
    if not isinstance(threshold, int | float) or isinstance(threshold, bool):
        raise MetricDefinitionError(f"threshold must be a number, got {threshold!r}")
    if not 0 <= threshold <= 1:
        raise MetricDefinitionError(f"threshold must be between 0 and 1, got {threshold}")
    return float(threshold)


class BaseMetric(ABC):
    """A metric: `measure(case)` sets and returns `score`, and sets `success`, `reason`."""

    kind: ClassVar[str] = ""  # the `type` of its dict; set by each registered kind
    title: ClassVar[str] = "metric"  # how definition errors name the kind
    #: Constructor arguments that say how the metric runs, not what it judges: never part
    #: of its dict (or its cache key). The other arguments are its definition's keys.
    run_arguments: ClassVar[frozenset[str]] = frozenset(
        {"model", "verbose_mode", *NO_EFFECT, "system_one_model", "eval_mode", "_audio_model"}
    )
    name: str
    threshold: float
    include_reason: bool = False  # defaults a kind without reasons or a model need not set
    strict_mode: bool = False
    verbose_mode: bool = False
    model: Any = None
    calibration: Any = None  # fitted score maps by model (metrics.calibration.Calibration)
    #: Whether the metric's prompts put its definition between the fields cases share (the
    #: input) and the case's own fields (G-Eval). The scheduler then runs it over a group's
    #: cases back to back (metric-major); metrics whose prompts open with the whole case
    #: run case-major, sharing the case's prefix across their calls. An instance may differ
    #: from its class (a G-Eval panel member opens with the definitions: case-major).
    metric_major: bool = False
    #: The kind of test case the metric judges (a conversation, an arena): the run refuses
    #: any other kind before judging.
    case_type: ClassVar[type] = LLMTestCase

    score: float | None = None
    success: bool | None = None
    reason: str | None = None
    result: MetricResult | None = None
    error: str | None = None

    @property
    def trace(self) -> Trace | None:
        return self.result.trace if self.result else None

    @abstractmethod
    def run(
        self, case: LLMTestCase, session: JudgeSession, *, include_reason: bool | None = None
    ) -> MetricResult:
        """Judge one case with the session's judge; returns the result without touching
        the metric's attributes."""

    def prepare(self, cases: Sequence[LLMTestCase], session: JudgeSession) -> None:
        """Before a prefix group's pairs run: read prompts that are not part of the group's
        shared prefix (and would evict it between cases) for all its cases at once, kept in
        the session for `run` to find. Nothing by default; results must not depend on it."""
        return None

    def check_case(self, case: Any) -> None:
        """Raise an AnvilError when this metric cannot judge `case` (checked for every case
        before a run judges any): a conversation shorter than a turn window, say."""
        return None

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The canonical definition (what a metric file holds; part of every cache key),
        with `"type": kind`."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BaseMetric:
        """The metric a `to_dict()` describes (workers and metric files use this): its keys
        are the constructor's arguments (see `definition_fields`)."""
        return cls(**definition_kwargs(data, cls))

    @abstractmethod
    def required_params(self) -> list[Any]:
        """Every test-case field the metric reads (checked before any judging)."""

    def measure(self, test_case: LLMTestCase, judge: Any = None) -> float:
        """DeepEval's entry point: judge the case, set score/success/reason, return the score.
        `judge` is a session, a Judge, or a model name/path (default: the metric's `model`,
        else $ANVIL_MODEL, else this host's tuned default judge)."""
        session = as_session(judge, self.model)
        result = self.run(test_case, session)
        if self.calibration is not None:
            from anvil_local.metrics.calibration import calibrate

            model = session.model
            result = calibrate(
                self, result, model.name, model.sha256, model.faithful_source(), model.format
            )
        self.result = result
        self.score = result.score
        self.success = result.success
        self.reason = result.reason
        self.error = result.error
        if self.verbose_mode:
            sys.stdout.write(render_result(result) + "\n")
        return result.score if result.score is not None else 0.0

    def conclude(
        self,
        session: JudgeSession,
        reason_prompt: Any,
        include_reason: bool | None,
        score: float,
        trace: Trace,
        usage: Usage,
        start: float,
    ) -> MetricResult:
        """The result of a judged case; the reason (if wanted) is generated last, after the
        score is fixed, so the score never depends on it."""
        reason = None
        if self.include_reason if include_reason is None else include_reason:
            generated = session.generate(reason_prompt, REASON_MAX_TOKENS)
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

    #: DeepEval's lower-is-better metrics (Hallucination, Bias, Toxicity) pass at or below
    #: their threshold.
    lower_is_better: ClassVar[bool] = False

    def is_successful(self) -> bool | None:
        """DeepEval's rule: False after an error, None without a threshold, else the score
        against the threshold (a score that cannot be compared fails)."""
        if getattr(self, "threshold", None) is None:
            self.success = None
            return None
        if self.error is not None:
            self.success = False
            return False
        try:
            if self.lower_is_better:
                self.success = bool(self.score <= self.threshold)  # type: ignore[operator]
            else:
                self.success = bool(self.score >= self.threshold)  # type: ignore[operator]
        except TypeError:
            self.success = False
        return self.success

"""What DeepEval's decomposed metrics share: their keywords, strict mode, success rules,
missing-field errors and the attributes user code reads after `measure`.

A metric splits its case into items by code (segment.py), asks one verdict per item
(verdicts.py), and computes DeepEval's score from the verdicts. Each kind implements
`judge_case`, which returns a `Found`; the rest is here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from anvil_local.errors import MetricDefinitionError, MissingParamError
from anvil_local.judge.results import Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.base import (
    BaseMetric,
    MetricResult,
    check_name,
    check_threshold,
    definition_fields,
)
from anvil_local.metrics.geval.template import render, template_class, template_name
from anvil_local.metrics.keywords import NO_EFFECT, DeepEvalMeasure, refuse
from anvil_local.metrics.rag.verdicts import (
    Asked,
    Verdict,
    VerdictTrace,
    ask_all,
    case_prompt,
    cue,
)
from anvil_local.testcase import LLMTestCase, SingleTurnParams

#: How items are split out of a text: by code (sentences, the default) or by the judge
#: under a JSON-list grammar.
EXTRACTIONS = ("code", "model")


@dataclass
class Found:
    """What judging one case found, before strict mode and success are applied."""

    score: float
    expected: float | None
    steps: dict[str, list[Verdict]]
    usage: Usage
    reason_args: dict[str, Any] = field(default_factory=dict)
    extracted: dict[str, list[str]] = field(default_factory=dict)
    breakdown: dict[str, float] | None = None
    attributes: dict[str, Any] = field(default_factory=dict)


def fraction(hits: float, total: int, empty: float) -> float:
    """hits / total, or DeepEval's empty-case score when there is nothing to count."""
    return hits / total if total else empty


class DecomposedMetric(DeepEvalMeasure, BaseMetric):
    """A DeepEval metric asked as one small verdict per item (see the module docstring)."""

    #: DeepEval's `__name__` for the metric ("Faithfulness"): the default result name.
    deepeval_name: ClassVar[str] = ""
    template_base: ClassVar[type] = object
    #: The case fields DeepEval requires, in its order.
    required: ClassVar[tuple[SingleTurnParams, ...]] = ()
    #: The score formula, as the trace and docs/metrics.md show it.
    formula: ClassVar[str] = ""
    #: Whether the judge is asked at all (ExactMatch, PatternMatch, JsonCorrectness: no).
    uses_judge: ClassVar[bool] = True
    run_arguments = BaseMetric.run_arguments | {"async_mode"}

    # DeepEval's attributes, set by `measure`
    evaluation_cost: float | None = None
    verbose_logs: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None

    def _setup(self, given: dict[str, Any], **definition: Any) -> None:
        """Set the shared keywords from the constructor's `locals()`; `definition` is the
        kind's own definition keys (what its metric-file table holds) and their values."""
        owner = type(self).__name__
        refuse(
            owner,
            "system_one_model",
            given.get("system_one_model"),
            (None,),
            "give the metric a remote judge (model=remote_judge(...)) instead",
        )
        refuse(
            owner,
            "eval_mode",
            given.get("eval_mode"),
            (None, "llm"),
            "the judge answers every verdict",
        )
        extraction = given.get("extraction", "code")
        if extraction not in EXTRACTIONS:
            raise MetricDefinitionError(
                f"{owner}: extraction must be one of {', '.join(EXTRACTIONS)}, got {extraction!r}"
            )
        self.extraction = extraction
        self.name = check_name(given.get("name") or self.deepeval_name)
        self.strict_mode = bool(given.get("strict_mode", False))
        threshold = given.get("threshold", 0.5)
        if self.strict_mode:
            threshold = 0.0 if self.lower_is_better else 1.0
        self.threshold = check_threshold(threshold)
        self.include_reason = bool(given.get("include_reason", True))
        self.model = given.get("model")
        self.verbose_mode = bool(given.get("verbose_mode", False))
        self.async_mode = given.get("async_mode", True)
        for keyword in NO_EFFECT:
            if keyword in given:
                setattr(self, keyword, given[keyword])
        self.evaluation_template = template_class(
            given.get("evaluation_template"), self.template_base
        )
        self._definition = {
            "name": given.get("name"),
            "threshold": given.get("threshold", 0.5),
            "include_reason": self.include_reason,
            "strict_mode": self.strict_mode,
            **definition,
        }
        if self.uses_judge:
            self._definition["evaluation_template"] = template_name(
                self.evaluation_template, self.template_base
            )
            self._definition["extraction"] = extraction

    @property
    def __name__(self) -> str:  # DeepEval's metric name property
        return self.name

    def to_dict(self) -> dict[str, Any]:
        accepted = definition_fields(type(self)).accepted
        data: dict[str, Any] = {"type": self.kind}
        data.update({k: v for k, v in self._definition.items() if v is not None and k in accepted})
        return data

    def required_params(self) -> list[SingleTurnParams]:
        return list(self.required)

    def check_fields(self, case: LLMTestCase) -> None:
        """DeepEval's MissingTestCaseParamsError for a missing field, or an empty output."""
        for param in self.required:
            if not case.has(param):
                raise MissingParamError(self.name, case.label, param.value)
            if param is SingleTurnParams.ACTUAL_OUTPUT and case.actual_output == "":
                raise MissingParamError(self.name, case.label, param.value, empty=True)

    def question(self, method: str, **context: Any) -> str:
        """A template method's text, as the judge is asked it."""
        return render(self.evaluation_template, method, **context).strip()

    def overridden(self, method: str) -> bool:
        """Whether the metric's template replaces `method`'s text."""
        return getattr(self.evaluation_template, method, None) is not getattr(
            self.template_base, method, None
        )

    def ask_each(
        self,
        session: JudgeSession,
        case_id: str | None,
        fields: Sequence[tuple[str, Any]],
        method: str,
        variable: str,
        items: Sequence[str],
        answers: Sequence[str],
        group: int | None = None,
        **extra: Any,
    ) -> Asked:
        """One verdict an item: the shared `fields` first, then the template `method`'s
        question about the item (passed as `variable`, with `extra`) and the answer cue."""
        prompts = [
            (
                item,
                case_prompt(
                    fields,
                    f"{self.question(method, **{variable: item}, **extra)} {cue(answers)}",
                    case_id,
                ),
            )
            for item in items
        ]
        return ask_all(session, prompts, answers, group)

    def judge_case(self, case: LLMTestCase, session: JudgeSession) -> Found:
        raise NotImplementedError

    def strict(self, score: float) -> float:
        """DeepEval's strict mode: a score short of the (strict) threshold becomes the worst."""
        if not self.strict_mode:
            return score
        if self.lower_is_better:
            return 1.0 if score > self.threshold else score
        return 0.0 if score < self.threshold else score

    def passes(self, score: float) -> bool:
        return score <= self.threshold if self.lower_is_better else score >= self.threshold

    def run(
        self, case: LLMTestCase, session: JudgeSession, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        self.check_fields(case)
        found = self.judge_case(case, session)
        score = self.strict(found.score)
        reason = None
        if self.include_reason if include_reason is None else include_reason:
            reason = self.question("generate_reason", score=score, **found.reason_args)
        trace = VerdictTrace(
            self.kind,
            self.formula,
            found.steps,
            found.expected,
            found.extracted,
            found.breakdown,
            found.attributes,
        )
        return MetricResult(
            metric=self.name,
            score=score,
            success=self.passes(score),
            threshold=self.threshold,
            reason=reason,
            trace=trace,
            usage=found.usage,
            seconds=time.perf_counter() - start,
        )

    def measure(self, test_case: Any, judge: Any = None, **kwargs: Any) -> float:
        """DeepEval's entry point; afterwards the metric holds DeepEval's attributes
        (`claims`, `verdicts`, ... as the kind exposes them)."""
        if self.uses_judge:
            score = super().measure(test_case, judge, **kwargs)
        else:  # no judge to open: the score is code's
            self.result = self.run(test_case, None)  # type: ignore[arg-type]
            self.score, self.success = self.result.score, self.result.success
            self.reason, self.error = self.result.reason, self.result.error
            score = self.score if self.score is not None else 0.0
        trace = self.result.trace if self.result else None
        if isinstance(trace, VerdictTrace):
            for key, value in trace.attributes.items():
                setattr(self, key, value)
            if trace.breakdown is not None:
                self.score_breakdown = dict(trace.breakdown)
        if self.result is not None:
            self.input_tokens = self.result.usage.prompt_tokens
            self.output_tokens = self.result.usage.calls
            self.evaluation_cost = None  # a local judge: nothing billed
        return score

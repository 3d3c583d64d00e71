"""The G-Eval metric: a definition checked once, its scale and layout chosen once, and
`run` reading the judge through them."""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.base import BaseMetric, MetricResult, check_name
from anvil_local.metrics.calibration import content_free_case
from anvil_local.metrics.examples import Example, examples_to_list, parse_examples
from anvil_local.metrics.geval.definition import (
    check_definition,
    definition_dict,
    distinct_params,
)
from anvil_local.metrics.geval.layout import Layout, Panel, Single, Templated, definition_block
from anvil_local.metrics.geval.panel import (
    check_members,
    member_definition,
    panel_entries,
    standalone,
)
from anvil_local.metrics.geval.prompts import REASON_QUESTION
from anvil_local.metrics.geval.rubric import Rubric
from anvil_local.metrics.geval.shared import set_definition
from anvil_local.metrics.geval.steps import ask_for_steps, steps_key, templated_steps_key
from anvil_local.metrics.geval.template import GEvalTemplate, overrides, template_name
from anvil_local.metrics.geval.trace import GEvalTrace
from anvil_local.metrics.layout import fields_phrase
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams, param_title, present_params

#: The template method a non-strict metric's scoring prompt comes from.
RESULTS = "generate_evaluation_results"


@register_metric("geval")
class GEval(BaseMetric):
    """DeepEval's GEval, with exact logit-weighted scores."""

    title = "GEval"

    metric_major = True  # alone, its definition sits between the input and the output

    def __init__(
        self,
        name: str,
        evaluation_params: Sequence[SingleTurnParams | str] | None = None,
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        rubric: Sequence[Rubric] | None = None,
        threshold: float = 0.5,
        strict_mode: bool = False,
        include_reason: bool = True,
        model: Any = None,
        verbose_mode: bool = False,
        examples: Sequence[dict[str, Any] | Example] | None = None,
        contextual_calibration: bool = False,
        panel: Sequence[GEval | dict[str, Any]] | None = None,
        evaluation_template: type | str | None = GEvalTemplate,
        top_logprobs: int = 20,
        async_mode: bool = True,
        flaky: bool = False,
        _include_g_eval_suffix: bool = True,
    ) -> None:
        check_name(name)
        check_definition(evaluation_params, criteria, evaluation_steps, optional_params=True)
        self.name = name
        #: None: the prompt shows every field the case has, in prompt order (DeepEval reads
        #: a trace then; a local case has none).
        self.evaluation_params = (
            distinct_params(evaluation_params) if evaluation_params is not None else None
        )
        set_definition(self, locals(), template_base=GEvalTemplate)
        self.examples = parse_examples(
            examples, self.scale.answer_key, self.scale.answer_check(), f"GEval {name!r}"
        )
        self.contextual_calibration = bool(contextual_calibration)
        self.panel: tuple[GEval, ...] | None = None
        self.panel = self._members(panel)
        self.layout: Layout = self._layout()
        # a panel member's prompts share everything up to the cue with the other members on
        # the same case, so it runs case-major (see run.schedule.pair_order)
        self.metric_major = self.layout.metric_major

    def _layout(self) -> Layout:
        """Alone, a panel member, or a template's own scoring prompt."""
        method = "generate_strict_evaluation_results" if self.strict_mode else RESULTS
        templated = overrides(self.evaluation_template, method, GEvalTemplate)
        if self.panel is not None:
            if templated or self.evaluation_params is None:
                raise MetricDefinitionError(
                    f"GEval {self.name!r}: a panel member needs evaluation_params and the "
                    "default evaluation_template"
                )
            return Panel(self, self.panel)
        return Templated(self, self.evaluation_template, method) if templated else Single(self)

    def _members(self, panel: Sequence[GEval | dict[str, Any]] | None) -> tuple[GEval, ...] | None:
        """The panel's members, built here (definitions without a panel of their own) and
        checked by the panel rules against this metric's definition."""
        if panel is None:
            return None
        members = [_member(entry) for entry in panel_entries(panel)]
        return check_members(self.name, self.to_dict(), members)

    # -- definition ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return definition_dict(
            self,
            rubric=[r.to_dict() for r in self.rubric] if self.rubric else None,
            threshold=self.threshold,
            strict_mode=self.strict_mode,
            include_reason=self.include_reason,
            examples=examples_to_list(self.examples, self.scale.answer_key),
            contextual_calibration=self.contextual_calibration or None,
            panel=[m.to_dict() for m in self.panel] if self.panel else None,
            evaluation_template=template_name(self.evaluation_template, GEvalTemplate),
        )

    # -- steps ---------------------------------------------------------------------------

    def steps_for(self, session: Any) -> list[str]:
        """Pinned steps, else the steps generated once for this definition and model (kept
        by the session and its steps store)."""
        if self.evaluation_steps is not None:
            return list(self.evaluation_steps)
        session = as_session(session, self.model)
        params = self.evaluation_params or []
        key = steps_key(session.model.sha256, self.criteria, params)
        key = templated_steps_key(
            key, self.criteria or "", fields_phrase(params), self.evaluation_template
        )
        return session.remembered_steps(key, lambda: self.generate_steps(session))

    def generate_steps(self, session: JudgeSession) -> list[str]:
        """Ask the judge for 3-4 evaluation steps (grammar-constrained to a numbered list)."""
        self.steps_generated += 1
        assert self.criteria is not None  # steps are generated only when none are pinned
        return ask_for_steps(
            session,
            self.name,
            self.criteria,
            self.evaluation_params or [],
            self.evaluation_template,
        )

    # -- prompts -------------------------------------------------------------------------

    def task(self) -> str:
        """What the judge is asked, stated before the case's own fields."""
        return self.scale.task(fields_phrase(self.evaluation_params or []))

    def definition(self, session: Any, steps: list[str]) -> tuple[str, ...]:
        """The definition blocks of this metric's prompts (`steps`: its own): its definition,
        or, in a panel, every member's definition in declared order, then the panel's task."""
        return self.layout.definition(session, steps)

    def _definition_block(self, steps: list[str]) -> str:
        """This metric's definition as it stands alone (the block a group of its pairs
        shares)."""
        return definition_block(self, steps)

    def prompt_params(self) -> list[SingleTurnParams]:
        """Every field in this metric's prompts (a panel's prompts show every member's; with
        no evaluation_params, none is required: the case's own fields are shown)."""
        return [] if self.evaluation_params is None else self.layout.params()

    def required_params(self) -> list[SingleTurnParams]:
        return self.prompt_params()

    # -- judging -------------------------------------------------------------------------

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        if self.evaluation_params is None:
            return self.for_params(present_params(case, self.name)).run(
                case, session, include_reason=include_reason
            )
        case.require(self.prompt_params(), self.name)
        session = as_session(session, self.model)
        steps = self.steps_for(session)
        definition = self.definition(session, steps)
        blocks = self.layout.blocks(case, definition)
        prompt = Prompt(blocks, self.layout.cue(), case.label)
        trace = GEvalTrace(steps)
        if self.contextual_calibration:
            free = content_free_case(self.evaluation_params)
            prior = Prompt(self.layout.blocks(free, definition), self.layout.cue())
            outcome = self.scale.judge_calibrated(session, prompt, prior, trace)
        else:
            outcome = self.scale.judge(session, prompt, trace)
        reason_prompt = Prompt(blocks, REASON_QUESTION.format(summary=outcome.summary), case.label)
        return self.conclude(
            session, reason_prompt, include_reason, outcome.score, trace, outcome.usage, start
        )

    def for_params(self, params: list[SingleTurnParams]) -> GEval:
        """This metric as if it named `params` (how a metric without evaluation_params
        judges a case: exactly as one naming the case's fields would)."""
        metric = copy.copy(self)
        metric.evaluation_params = params
        metric.layout = metric._layout()
        return metric

    def __repr__(self) -> str:
        params = ", ".join(param_title(p) for p in self.evaluation_params or [])
        return f"GEval(name={self.name!r}, params=[{params}], threshold={self.threshold})"


def _member(entry: GEval | dict[str, Any]) -> GEval:
    """One panel entry as a member: a definition built, a metric taken without its panel."""
    if isinstance(entry, dict):
        entry = GEval.from_dict(member_definition(entry))
    if not isinstance(entry, GEval):
        raise MetricTypeError(f"panel members must be GEval, got {type(entry).__name__}")
    if entry.panel is not None:
        entry = GEval.from_dict(standalone(entry.to_dict()))
    return entry


def geval_panel(metrics: Sequence[GEval]) -> list[GEval]:
    """The metrics as one panel: each member's prompt holds every member's definition, then
    the case, then a short cue naming the member, so the case is read once for all of them
    and each member costs only its cue. A member's scores are its scores within this panel
    (the other definitions are part of its prompt), not those of the metric alone."""
    for metric in metrics:
        if not isinstance(metric, GEval):
            raise MetricTypeError(f"panel members must be GEval, got {type(metric).__name__}")
    definitions = [standalone(m.to_dict()) for m in metrics]
    return [GEval.from_dict({**data, "panel": definitions}) for data in definitions]

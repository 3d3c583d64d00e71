"""What GEval and ConversationalGEval set up alike from their keywords: one definition
(criteria, steps, rubric, scale, threshold, template), the DeepEval keywords that have no
effect here, and the run options. Only the layout of the case differs between them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anvil_local.metrics.geval.definition import check_span
from anvil_local.metrics.geval.rubric import Rubric, score_range, sort_rubric
from anvil_local.metrics.geval.scale import scale_for
from anvil_local.metrics.geval.template import template_class


def set_definition(
    metric: Any,
    *,
    criteria: str | None,
    evaluation_steps: Sequence[str] | None,
    rubric: Sequence[Rubric] | None,
    threshold: float,
    strict_mode: bool,
    include_reason: bool,
    model: Any,
    verbose_mode: bool,
    evaluation_template: type | str | None,
    template_base: type,
    no_effect: dict[str, Any],
) -> None:
    """Set a G-Eval definition's attributes on `metric` (its name and params set first)."""
    metric.criteria = criteria
    metric.evaluation_steps = list(evaluation_steps) if evaluation_steps is not None else None
    metric.rubric = sort_rubric(rubric)
    metric.score_range = check_span(score_range(metric.rubric))
    metric.strict_mode = bool(strict_mode)
    metric.scale = scale_for(metric.strict_mode, metric.score_range)
    metric.threshold = metric.scale.threshold(threshold)
    metric.include_reason = bool(include_reason)
    metric.model = model
    metric.verbose_mode = bool(verbose_mode)
    metric.evaluation_template = template_class(evaluation_template, template_base)
    metric.steps_generated = 0  # how many times this object asked the judge for steps
    for keyword, value in no_effect.items():  # kept, read by nothing (metrics.keywords)
        setattr(metric, keyword, value)

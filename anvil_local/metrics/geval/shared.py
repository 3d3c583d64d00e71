"""What GEval and ConversationalGEval set up alike from their keywords: one definition
(criteria, steps, rubric, scale, threshold, template), the DeepEval keywords that have no
effect here, and the run options. Only the layout of the case differs between them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from anvil_local.metrics.geval.definition import check_span
from anvil_local.metrics.geval.rubric import score_range, sort_rubric
from anvil_local.metrics.geval.scale import scale_for
from anvil_local.metrics.geval.template import template_class

#: A G-Eval definition's keywords and their defaults when a constructor lacks one (an arena
#: has no rubric, no strict mode and no threshold of its own).
DEFINITION_DEFAULTS: dict[str, Any] = {
    "criteria": None,
    "evaluation_steps": None,
    "rubric": None,
    "threshold": 0.5,
    "strict_mode": False,
    "include_reason": True,
    "model": None,
    "verbose_mode": False,
    "evaluation_template": None,
}
#: DeepEval's keywords that change nothing here (metrics.keywords says why): kept as
#: attributes, read by nothing.
NO_EFFECT = ("top_logprobs", "async_mode", "flaky", "_include_g_eval_suffix", "_audio_model")


def set_definition(metric: Any, given: Mapping[str, Any], *, template_base: type) -> None:
    """Set a G-Eval definition's attributes on `metric` (its name and params set first) from
    `given`, its constructor's keywords (`locals()`): the one place that knows what each of
    GEval's, ConversationalGEval's and ArenaGEval's keywords means."""
    kw = {key: given.get(key, default) for key, default in DEFINITION_DEFAULTS.items()}
    metric.criteria = kw["criteria"]
    steps = kw["evaluation_steps"]
    metric.evaluation_steps = list(steps) if steps is not None else None
    metric.rubric = sort_rubric(kw["rubric"])
    metric.score_range = check_span(score_range(metric.rubric))
    metric.strict_mode = bool(kw["strict_mode"])
    metric.scale = scale_for(metric.strict_mode, metric.score_range)
    metric.threshold = metric.scale.threshold(kw["threshold"])
    metric.include_reason = bool(kw["include_reason"])
    metric.model = kw["model"]
    metric.verbose_mode = bool(kw["verbose_mode"])
    metric.evaluation_template = template_class(kw["evaluation_template"], template_base)
    metric.steps_generated = 0  # how many times this object asked the judge for steps
    for keyword in NO_EFFECT:
        if keyword in given:
            setattr(metric, keyword, given[keyword])

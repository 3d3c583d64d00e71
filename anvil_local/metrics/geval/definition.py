"""DeepEval's rules for a G-Eval definition, with its messages (a metric ported from
DeepEval meets the same errors), checked before anything is built from it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.testcase import SingleTurnParams, as_param


def check_definition(
    evaluation_params: Any, criteria: Any, evaluation_steps: Any, optional_params: bool = False
) -> None:
    """Params given (or, with `optional_params`, None) and not empty; criteria or steps (or
    both), neither of them blank."""
    if evaluation_params is None and not optional_params:
        raise MetricDefinitionError(
            "GEval requires evaluation_params. Provide them at initialization."
        )
    if evaluation_params is not None and not list(evaluation_params):
        raise MetricDefinitionError("evaluation_params cannot be an empty list.")
    if criteria is None and evaluation_steps is None:
        raise MetricDefinitionError("Either 'criteria' or 'evaluation_steps' must be provided.")
    if criteria is not None and (not isinstance(criteria, str) or not criteria.strip()):
        raise MetricDefinitionError("Criteria provided cannot be an empty string.")
    if evaluation_steps is not None:
        if isinstance(evaluation_steps, str) or not list(evaluation_steps):
            raise MetricDefinitionError(
                "'evaluation_steps' must not be an empty list. Either omit evaluation "
                "steps or include a non-empty list of steps."
            )
        if any(not isinstance(s, str) or not s.strip() for s in evaluation_steps):
            raise MetricDefinitionError("every evaluation step must be a non-empty string")


def distinct_params(evaluation_params: Sequence[SingleTurnParams | str]) -> list[SingleTurnParams]:
    """The params as the enum, each named once."""
    params = [as_param(p) for p in evaluation_params]
    if len(set(params)) != len(params):
        raise MetricDefinitionError("evaluation_params lists a param twice")
    return params


def check_span(score_range: tuple[int, int]) -> tuple[int, int]:
    """A range of at least two scores (a weighted mean over one score says nothing)."""
    if score_range[0] == score_range[1]:
        raise MetricDefinitionError("the rubric must span at least two scores")
    return score_range


def definition_dict(metric: Any, **rest: Any) -> dict[str, Any]:
    """A G-Eval-like metric's definition as its file holds it (and its cache key reads it):
    the fields GEval, ConversationalGEval and ArenaGEval share, then `rest`, in that order;
    unset fields left out."""
    data: dict[str, Any] = {
        "type": metric.kind,
        "name": metric.name,
        "evaluation_params": (
            [p.value for p in metric.evaluation_params]
            if metric.evaluation_params is not None
            else None
        ),
        "criteria": metric.criteria,
        "evaluation_steps": metric.evaluation_steps,
        **rest,
    }
    return {k: v for k, v in data.items() if v is not None}

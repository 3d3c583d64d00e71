"""`evaluation_template=`: DeepEval's template classes, with its method names, over our
prompt texts.

A DeepEval user customises a G-Eval prompt by subclassing `GEvalTemplate` and overriding a
static method. Here the default methods render our own texts (what the metric shows, as one
string); while a metric's template keeps them, its prompts keep our segmented layout, so
prefixes stay shared and the scores stay those measured. An override replaces its part:
`generate_evaluation_steps` the steps prompt, `generate_evaluation_results` (or
`generate_strict_evaluation_results` under strict_mode) everything between the header and
the cue. The cue after it is ours and the verdict is still read from the logits over the
allowed scores, whatever output format the override's text asks for.

As in DeepEval an override need only declare the variables it uses: it is called with those
of the render context it names.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any

from anvil_local.errors import MetricDefinitionError, MetricTypeError
from anvil_local.metrics.geval.prompts import (
    RUBRIC_HEADING,
    SCORE_TASK,
    STEPS_CRITERIA,
    STEPS_HEADING,
    STEPS_QUESTION,
    TASK_LINE,
    VERDICT_TASK,
)


def _results_text(
    evaluation_steps: str,
    test_case_content: str,
    task: str,
    rubric: str | None,
    turns: str | None = None,
) -> str:
    lines = [STEPS_HEADING, evaluation_steps.strip()]
    if rubric:
        lines += ["", RUBRIC_HEADING, rubric.strip()]
    lines += ["", TASK_LINE.format(task=task), "", test_case_content.strip()]
    if turns:
        lines += ["", turns.strip()]
    return "\n".join(lines)


class GEvalTemplate:
    """GEval's prompts by DeepEval's method names (subclass one to replace a prompt)."""

    @staticmethod
    def generate_evaluation_steps(criteria: str, parameters: str, multimodal: bool = False) -> str:
        """The steps prompt: the criteria, then the request for 3-4 numbered steps."""
        return STEPS_CRITERIA.format(criteria=criteria.strip()) + STEPS_QUESTION.format(
            fields=parameters
        )

    @staticmethod
    def generate_evaluation_results(
        evaluation_steps: str,
        test_case_content: str,
        parameters: str,
        rubric: str | None = None,
        score_range: tuple[int, int] = (0, 10),
        _additional_context: str | None = None,
        multimodal: bool = False,
    ) -> str:
        """The scoring prompt before its cue: steps, rubric, task, the case's fields."""
        lo, hi = score_range
        task = SCORE_TASK.format(fields=parameters, lo=lo, hi=hi)
        return _results_text(evaluation_steps, test_case_content, task, rubric)

    @staticmethod
    def generate_strict_evaluation_results(
        evaluation_steps: str,
        test_case_content: str,
        parameters: str,
        _additional_context: str | None = None,
        multimodal: bool = False,
    ) -> str:
        """The strict (Yes/No) prompt before its cue."""
        task = VERDICT_TASK.format(fields=parameters)
        return _results_text(evaluation_steps, test_case_content, task, None)


class ConversationalGEvalTemplate:
    """ConversationalGEval's prompts by DeepEval's method names."""

    @staticmethod
    def generate_evaluation_steps(criteria: str, parameters: str, multimodal: bool = False) -> str:
        """The steps prompt: the criteria, then the request for 3-4 numbered steps."""
        return GEvalTemplate.generate_evaluation_steps(criteria, parameters)

    @staticmethod
    def generate_evaluation_results(
        evaluation_steps: str,
        test_case_content: str,
        turns: str,
        parameters: str,
        rubric: str | None = None,
        score_range: tuple[int, int] = (0, 10),
        multimodal: bool = False,
    ) -> str:
        """The scoring prompt before its cue: steps, rubric, task, fields, then the turns."""
        lo, hi = score_range
        task = SCORE_TASK.format(fields=parameters, lo=lo, hi=hi)
        return _results_text(evaluation_steps, test_case_content, task, rubric, turns)


class ArenaGEvalTemplate:
    """ArenaGEval's template name. Its prompt is a fixed layout (one letter per contestant,
    every order judged), so only this class itself is accepted as `evaluation_template`."""

    @staticmethod
    def generate_evaluation_steps(criteria: str, parameters: str, multimodal: bool = False) -> str:
        """The steps prompt, GEval's."""
        return GEvalTemplate.generate_evaluation_steps(criteria, parameters)


def template_class(value: Any, base: type) -> type:
    """`evaluation_template` as a class: the class itself (a subclass of `base` or any class
    with its methods), or "module:QualName" as a metric file holds it."""
    if value is None:
        return base
    if isinstance(value, str):
        module, _, qualname = value.partition(":")
        try:
            found: Any = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, ValueError) as exc:
            raise MetricDefinitionError(
                f"evaluation_template {value!r} cannot be imported (module:QualName)"
            ) from exc
        value = found
    if not isinstance(value, type):
        raise MetricTypeError(
            f"evaluation_template must be a template class, got {type(value).__name__}"
        )
    return value


def template_name(template: type, base: type) -> str | None:
    """What a definition records of its template: None for the default, else the
    "module:QualName" a worker imports it by."""
    if template is base:
        return None
    return f"{template.__module__}:{template.__qualname__}"


def overrides(template: type, method: str, base: type) -> bool:
    """Whether `template` replaces `base`'s `method`."""
    return getattr(template, method, None) is not getattr(base, method)


def rubric_text(rubric: Any) -> str | None:
    """The rubric as a template's `rubric` variable: one line per band."""
    return "\n".join(r.line() for r in rubric) if rubric else None


def render(template: type, method: str, **context: Any) -> str:
    """Call a template method with the variables of `context` it declares (all of them when
    it takes **kwargs); it must return the prompt's text."""
    fn: Callable[..., Any] = getattr(template, method)
    params = inspect.signature(fn).parameters.values()
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        context = {k: v for k, v in context.items() if k in names}
    text = fn(**context)
    if not isinstance(text, str) or not text.strip():
        raise MetricTypeError(
            f"{template.__qualname__}.{method} must return the prompt's text, got "
            f"{type(text).__name__}"
        )
    return text

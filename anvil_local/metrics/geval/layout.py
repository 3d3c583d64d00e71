"""Where a G-Eval's definition sits in its prompts, chosen once per metric: alone, or as
one member of a panel.

Alone (`Single`), the definition sits between the fields cases share (the input) and the
case's own fields (the output): cases with one input and many outputs share everything up
to the output, so the scheduler runs the metric over such a group back to back
(metric-major). In a panel (`Panel`) every member's definition comes first (shared by every
prompt of the run), then the whole case (shared by the members on that case), then a cue
naming the member: members run case-major, and a member costs only its cue.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar, Protocol

from anvil_local.judge.prompt import HEADER
from anvil_local.metrics.examples import Example, examples_block
from anvil_local.metrics.geval.prompts import (
    DEFINITION_TITLE,
    MEMBER_TITLE,
    PANEL_SCALE_MIXED,
    PANEL_SCALE_RUBRIC,
    PANEL_TASK_MIXED,
    PANEL_TASK_SCORES,
    PANEL_TASK_VERDICTS,
    RUBRIC_HEADING,
    STEP_LINE,
    STEPS_HEADING,
    TASK_LINE,
)
from anvil_local.metrics.geval.rubric import Rubric
from anvil_local.metrics.geval.scale import Scale, VerdictScale
from anvil_local.metrics.geval.template import render, rubric_text
from anvil_local.metrics.layout import case_blocks, fields_phrase
from anvil_local.testcase import SHARED_PARAMS, LLMTestCase, SingleTurnParams, ordered_params


class Definition(Protocol):
    """What a layout reads of a G-Eval metric."""

    name: str
    criteria: str | None
    rubric: tuple[Rubric, ...] | None
    evaluation_params: list[SingleTurnParams]
    examples: tuple[Example, ...] | None
    scale: Scale[Any]
    score_range: tuple[int, int]

    def task(self) -> str: ...

    def steps_for(self, session: Any) -> list[str]: ...


# -- definition text -------------------------------------------------------------------


def definition_lines(metric: Definition, steps: Sequence[str], title: str) -> list[str]:
    """Title, criteria, numbered steps and (where the scale shows one) the rubric."""
    lines = [title]
    if metric.criteria:
        lines.append(metric.criteria.strip())
    lines.append("")
    lines.append(STEPS_HEADING)
    lines += [STEP_LINE.format(number=i, step=step.strip()) for i, step in enumerate(steps, 1)]
    if metric.rubric and metric.scale.shows_rubric:
        lines.append("")
        lines.append(RUBRIC_HEADING)
        lines += [r.line() for r in metric.rubric]
    return lines


def definition_block(metric: Definition, steps: Sequence[str]) -> str:
    """A metric alone: criteria, steps, rubric and the task itself, everything a pair shares
    with the other outputs of its input, so the task is read once per group."""
    lines = definition_lines(metric, steps, DEFINITION_TITLE.format(name=metric.name))
    lines.append("")
    lines.append(TASK_LINE.format(task=metric.task()))
    return "\n".join(lines) + "\n\n"


def member_block(metric: Definition, steps: Sequence[str]) -> str:
    """A metric as one member of a panel: what it judges and its scale, no task."""
    lines = definition_lines(metric, steps, MEMBER_TITLE.format(name=metric.name))
    note = metric.scale.member_note(metric.rubric)
    if note is not None:
        lines.append(note)
    return "\n".join(lines) + "\n\n"


def panel_task(members: Sequence[Definition]) -> str:
    """The panel's task, after every member's definition: it names the answers the
    members' scales allow between them."""
    verdicts = [isinstance(m.scale, VerdictScale) for m in members]
    if all(verdicts):
        return PANEL_TASK_VERDICTS
    if any(verdicts):
        return PANEL_TASK_MIXED
    scale = PANEL_SCALE_RUBRIC if all(m.rubric for m in members) else PANEL_SCALE_MIXED
    return PANEL_TASK_SCORES.format(scale=scale)


# -- layouts ---------------------------------------------------------------------------


class Layout(ABC):
    """How one metric's prompts are laid out (see the module's docstring)."""

    #: Whether the scheduler runs the metric over a group's cases back to back.
    metric_major: ClassVar[bool]

    def __init__(self, metric: Definition) -> None:
        self.metric = metric

    @abstractmethod
    def definition(self, session: Any, steps: list[str]) -> tuple[str, ...]:
        """The definition blocks of the metric's prompts (`steps`: the metric's own)."""

    @abstractmethod
    def blocks(self, case: LLMTestCase, definition: tuple[str, ...]) -> tuple[str, ...]:
        """The prompt's blocks on `case`, up to the cue."""

    @abstractmethod
    def params(self) -> list[SingleTurnParams]:
        """Every field the prompts show."""

    @abstractmethod
    def cue(self) -> str:
        """The short question after the case."""


class Single(Layout):
    """A metric alone: header, worked examples, the fields cases share (the input), the
    definition (criteria, steps, rubric, task), the case's own fields (the output), the
    cue. The input is read once per group, the definition once per group and metric, and a
    pair costs only its output and the cue."""

    metric_major = True

    def definition(self, session: Any, steps: list[str]) -> tuple[str, ...]:
        return (definition_block(self.metric, steps),)

    def blocks(self, case: LLMTestCase, definition: tuple[str, ...]) -> tuple[str, ...]:
        params = self.metric.evaluation_params
        shared = [p for p in params if p in SHARED_PARAMS]
        own = [p for p in params if p not in SHARED_PARAMS]
        examples = examples_block(self.metric.examples, self.metric.name)
        return (
            HEADER,
            *examples,
            *case_blocks(case, shared)[1:],
            *definition,
            *case_blocks(case, own)[1:],
        )

    def params(self) -> list[SingleTurnParams]:
        return list(self.metric.evaluation_params)

    def cue(self) -> str:
        return self.metric.scale.cue()


class Panel(Layout):
    """A member of a panel: every member's definition in declared order and the panel's
    task, then the whole case (every field any member reads), then a cue naming the
    member."""

    metric_major = False

    def __init__(self, metric: Definition, members: Sequence[Definition]) -> None:
        super().__init__(metric)
        self.members = tuple(members)

    def definition(self, session: Any, steps: list[str]) -> tuple[str, ...]:
        name = self.metric.name
        blocks = [
            member_block(m, steps if m.name == name else m.steps_for(session)) for m in self.members
        ]
        return (*blocks, panel_task(self.members))

    def blocks(self, case: LLMTestCase, definition: tuple[str, ...]) -> tuple[str, ...]:
        return (HEADER, *definition, *case_blocks(case, self.params())[1:])

    def params(self) -> list[SingleTurnParams]:
        params: list[SingleTurnParams] = []
        for member in self.members:
            params += [p for p in member.evaluation_params if p not in params]
        return ordered_params(params)

    def cue(self) -> str:
        return self.metric.scale.member_cue(self.metric.name)


class Templated(Layout):
    """A metric whose `evaluation_template` replaces the scoring prompt: header, worked
    examples, the template's text (steps, rubric and the case as it lays them out), then
    our cue; the score is read from the logits as for any layout."""

    metric_major = True

    def __init__(self, metric: Definition, template: type, method: str) -> None:
        super().__init__(metric)
        self.template = template
        self.method = method

    def definition(self, session: Any, steps: list[str]) -> tuple[str, ...]:
        return (
            "\n".join(STEP_LINE.format(number=i, step=s.strip()) for i, s in enumerate(steps, 1)),
        )

    def blocks(self, case: LLMTestCase, definition: tuple[str, ...]) -> tuple[str, ...]:
        metric = self.metric
        params = metric.evaluation_params
        text = render(
            self.template,
            self.method,
            evaluation_steps=definition[0],
            test_case_content="".join(case_blocks(case, params)[1:]).strip(),
            parameters=fields_phrase(params),
            rubric=rubric_text(metric.rubric),
            score_range=metric.score_range,
            _additional_context=None,
            multimodal=False,
        )
        examples = examples_block(metric.examples, metric.name)
        return (HEADER, *examples, text.rstrip() + "\n\n")

    def params(self) -> list[SingleTurnParams]:
        return list(self.metric.evaluation_params)

    def cue(self) -> str:
        return self.metric.scale.cue()

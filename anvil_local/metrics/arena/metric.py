"""ArenaGEval: which of several contestants best meets the criteria, read from the logits.

The prompt holds the fields every contestant shares (the input, the expected output), the
definition (criteria, steps, task), then each contestant under a letter, then the cue; the
judge's probability of every letter is read in one forward pass. With `debias` (the default)
every order of `orders.orders` is judged and the win probabilities averaged, and the trace
records the position bias the orders measured. The score is the winner's probability; an
arena has no threshold (`success` is always true, as in DeepEval).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from anvil_local.arena import ArenaTestCase
from anvil_local.errors import DataError, GenerationError, MetricDefinitionError
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.judge.results import Usage
from anvil_local.metrics.arena.orders import MAX_CONTESTANTS, POSITIONS, Order, combine, orders
from anvil_local.metrics.arena.prompts import (
    CONTESTANT,
    CUE,
    DEFINITION_TITLE,
    REASON_QUESTION,
    TASK,
)
from anvil_local.metrics.arena.trace import ArenaTrace, OrderReading
from anvil_local.metrics.base import BaseMetric, MetricResult, check_name
from anvil_local.metrics.geval.definition import (
    check_definition,
    definition_dict,
    distinct_params,
)
from anvil_local.metrics.geval.prompts import STEP_LINE, STEPS_HEADING
from anvil_local.metrics.geval.shared import set_definition
from anvil_local.metrics.geval.steps import ask_for_steps, steps_key
from anvil_local.metrics.geval.template import ArenaGEvalTemplate
from anvil_local.metrics.keywords import refuse
from anvil_local.metrics.layout import case_blocks, fields_phrase
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import SingleTurnParams, ordered_params

#: What every contestant shares (DeepEval requires them equal): shown once, before the
#: definition.
SHARED = (SingleTurnParams.INPUT, SingleTurnParams.EXPECTED_OUTPUT)


def _letters(count: int) -> str:
    letters = list(POSITIONS[:count])
    return ", ".join(letters[:-1]) + " or " + letters[-1]


@register_metric("arena_geval")
class ArenaGEval(BaseMetric):
    """DeepEval's ArenaGEval: the winner of an ArenaTestCase, with every contestant's
    probability of winning and the position bias removed."""

    title = "ArenaGEval"
    metric_major = True  # arenas on one input share it and the definition
    case_type: ClassVar[type] = ArenaTestCase
    pairwise: ClassVar[bool] = True  # a bench compares it with a preference label

    winner: str | None = None

    def __init__(
        self,
        name: str,
        evaluation_params: Sequence[SingleTurnParams | str],
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        debias: bool = True,
        include_reason: bool = True,
        model: Any = None,
        verbose_mode: bool = False,
        evaluation_template: type | None = ArenaGEvalTemplate,
        async_mode: bool = True,
        _include_g_eval_suffix: bool = True,
    ) -> None:
        check_name(name)
        refuse(
            "ArenaGEval",
            "evaluation_template",
            evaluation_template,
            (ArenaGEvalTemplate, None),
            "its prompt is a fixed layout, one letter per contestant read from the logits",
        )
        check_definition(evaluation_params, criteria, evaluation_steps)
        self.name = name
        self.evaluation_params = distinct_params(evaluation_params)
        if not self.own_params():
            raise MetricDefinitionError(
                "ArenaGEval compares contestants: evaluation_params must name a field they "
                "differ in (actual_output, context, retrieval_context, tools_called or "
                "expected_tools), not only the input and expected output they share"
            )
        set_definition(self, locals(), template_base=ArenaGEvalTemplate)
        self.threshold = 0.0  # an arena picks a winner; there is no score to pass
        self.debias = bool(debias)

    def own_params(self) -> list[SingleTurnParams]:
        """The fields each contestant shows under its letter."""
        return [p for p in ordered_params(self.evaluation_params) if p not in SHARED]

    def to_dict(self) -> dict[str, Any]:
        return definition_dict(
            self,
            debias=self.debias,
            include_reason=self.include_reason,
        )

    def required_params(self) -> list[SingleTurnParams]:
        return ordered_params(self.evaluation_params)

    def check_case(self, case: Any) -> None:
        if len(case.contestants) > MAX_CONTESTANTS:
            raise DataError(
                f"an arena judges at most {MAX_CONTESTANTS} contestants, got "
                f"{len(case.contestants)}"
            )

    # -- steps and prompts ---------------------------------------------------------------

    def steps_for(self, session: Any) -> list[str]:
        """Pinned steps, else steps generated once for this definition and model (G-Eval's
        steps prompt, over the fields the contestants show)."""
        if self.evaluation_steps is not None:
            return list(self.evaluation_steps)
        session = as_session(session, self.model)
        params = self.required_params()
        key = steps_key(session.model.sha256, self.criteria, params)  # GEval's: same prompt
        assert self.criteria is not None
        criteria = self.criteria
        return session.remembered_steps(
            key, lambda: ask_for_steps(session, self.name, criteria, params)
        )

    def definition(self, steps: list[str]) -> str:
        lines = [DEFINITION_TITLE]
        if self.criteria:
            lines.append(self.criteria.strip())
        lines += ["", STEPS_HEADING]
        lines += [STEP_LINE.format(number=i, step=s.strip()) for i, s in enumerate(steps, 1)]
        lines += ["", TASK.format(fields=fields_phrase(self.own_params()).removeprefix("the "))]
        return "\n".join(lines) + "\n\n"

    def blocks(self, case: ArenaTestCase, definition: str, order: Order) -> tuple[str, ...]:
        """Header, the shared fields, the definition, then the contestants in `order`."""
        shared = [p for p in ordered_params(self.evaluation_params) if p in SHARED]
        first = case.contestants[0].test_case
        contestants = []
        for position, index in enumerate(order):
            own = case_blocks(case.contestants[index].test_case, self.own_params())[1:]
            contestants.append(CONTESTANT.format(letter=POSITIONS[position]) + "".join(own))
        return (HEADER, *case_blocks(first, shared)[1:], definition, *contestants)

    # -- judging -------------------------------------------------------------------------

    def run(
        self, case: ArenaTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        self.check_case(case)
        for contestant in case.contestants:
            contestant.test_case.require(self.required_params(), self.name)
        session = as_session(session, self.model)
        steps = self.steps_for(session)
        definition = self.definition(steps)
        count = len(case.contestants)
        letters = list(POSITIONS[:count])
        cue = CUE.format(letters=_letters(count))
        shown = orders(count, self.debias)
        readings, usage = [], Usage()
        for order in shown:
            prompt = Prompt(self.blocks(case, definition, order), cue, case.label)
            choice = session.choose(prompt, letters)
            readings.append(choice.probabilities)
            usage = usage + choice.usage
        combined = combine(shown, readings)
        names = case.names
        trace = ArenaTrace(
            steps,
            winner=names[combined.winner],
            probabilities=dict(zip(names, combined.wins, strict=True)),
            orders=[
                OrderReading(tuple(names[i] for i in order), tuple(p), tuple(letters))
                for order, p in zip(shown, readings, strict=True)
            ],
            position_mass=dict(zip(letters, combined.position_mass, strict=True)),
            position_bias=combined.position_bias,
            consistent=combined.consistent,
        )
        score = combined.wins[combined.winner]
        reason_prompt = Prompt(
            self.blocks(case, definition, shown[0]),
            REASON_QUESTION.format(
                letter=letters[shown[0].index(combined.winner)], probability=score
            ),
            case.label,
        )
        return self.conclude(session, reason_prompt, include_reason, score, trace, usage, start)

    def measure(self, test_case: Any, judge: Any = None) -> str:  # type: ignore[override]
        """DeepEval's entry point: judge the arena, set `winner`, `reason`, `score` (the
        winner's probability); returns the winner's name."""
        super().measure(test_case, judge)
        trace = self.result.trace if self.result is not None else None
        if self.result is None or self.result.error is not None or trace is None:
            raise GenerationError(f"ArenaGEval {self.name!r} found no winner")
        self.winner = trace.get("winner")
        return self.winner  # type: ignore[return-value]

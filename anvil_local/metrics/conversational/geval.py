"""ConversationalGEval: G-Eval over a conversation, scored from the logits as GEval is.

DeepEval's rules: `evaluation_params` are MultiTurnParams, and every turn's role and content
are always shown (added when not named). The prompt holds what many conversations share (the
chatbot's role, its context), then the definition (criteria, steps, rubric, task), then the
conversation's own fields and its turns, then the cue: conversations with one chatbot role
read the definition once, back to back (metric-major), and each costs its own turns. The
score, the scale (a range or a strict Yes/No), the trace and the reason are GEval's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from anvil_local.cache import digest
from anvil_local.conversation import (
    ConversationalTestCase,
    MultiTurnParams,
    as_multi_turn_param,
    multi_turn_title,
    ordered_multi_turn,
)
from anvil_local.errors import GenerationError, MetricDefinitionError
from anvil_local.judge.prompt import HEADER, Prompt
from anvil_local.metrics.base import BaseMetric, MetricResult, check_name
from anvil_local.metrics.conversational.layout import (
    TURNS_PHRASE,
    conversation_fields,
    conversation_phrase,
    turn_blocks,
)
from anvil_local.metrics.geval.definition import check_definition, check_span, definition_dict
from anvil_local.metrics.geval.layout import definition_block
from anvil_local.metrics.geval.prompts import REASON_QUESTION, STEPS_CRITERIA, STEPS_QUESTION
from anvil_local.metrics.geval.rubric import Rubric, score_range, sort_rubric
from anvil_local.metrics.geval.scale import scale_for
from anvil_local.metrics.geval.steps import (
    STEPS_MAX_TOKENS,
    STEPS_PROMPT_VERSION,
    STEPS_REGEX,
    parse_steps,
)
from anvil_local.metrics.geval.trace import GEvalTrace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric

#: Always shown: DeepEval adds them to any ConversationalGEval's params.
ALWAYS = (MultiTurnParams.CONTENT, MultiTurnParams.ROLE)


def conversational_params(values: Any) -> list[MultiTurnParams]:
    """The params as the enum, each once, with the turns' content and role added."""
    if values is None:
        raise MetricDefinitionError(
            "ConversationalGEval requires evaluation_params. Provide them at initialization."
        )
    if isinstance(values, str) or not list(values):
        raise MetricDefinitionError("evaluation_params cannot be an empty list.")
    params = [as_multi_turn_param(v) for v in values]
    if len(set(params)) != len(params):
        raise MetricDefinitionError("evaluation_params lists a param twice")
    return params + [p for p in ALWAYS if p not in params]


@register_metric("conversational_geval")
class ConversationalGEval(BaseMetric):
    """DeepEval's ConversationalGEval, with exact logit-weighted scores."""

    title = "ConversationalGEval"
    metric_major = True
    case_type: ClassVar[type] = ConversationalTestCase

    def __init__(
        self,
        name: str,
        evaluation_params: Sequence[MultiTurnParams | str] | None = None,
        criteria: str | None = None,
        evaluation_steps: Sequence[str] | None = None,
        rubric: Sequence[Rubric] | None = None,
        threshold: float = 0.5,
        strict_mode: bool = False,
        include_reason: bool = True,
        model: Any = None,
        verbose_mode: bool = False,
    ) -> None:
        check_name(name)
        self.evaluation_params = conversational_params(evaluation_params)
        check_definition(self.evaluation_params, criteria, evaluation_steps)
        self.name = name
        self.criteria = criteria
        self.evaluation_steps = list(evaluation_steps) if evaluation_steps is not None else None
        self.rubric = sort_rubric(rubric)
        self.score_range = check_span(score_range(self.rubric))
        self.strict_mode = bool(strict_mode)
        self.scale = scale_for(self.strict_mode, self.score_range)
        self.threshold = self.scale.threshold(threshold)
        self.include_reason = bool(include_reason)
        self.model = model
        self.verbose_mode = bool(verbose_mode)
        self.examples = None  # what a G-Eval definition block reads; none here
        self.steps_generated = 0

    def to_dict(self) -> dict[str, Any]:
        return definition_dict(
            self,
            rubric=[r.to_dict() for r in self.rubric] if self.rubric else None,
            threshold=self.threshold,
            strict_mode=self.strict_mode,
            include_reason=self.include_reason,
        )

    def required_params(self) -> list[MultiTurnParams]:
        return ordered_multi_turn(self.evaluation_params)

    # -- steps ---------------------------------------------------------------------------

    def steps_for(self, session: Any) -> list[str]:
        """Pinned steps, else the steps generated once for this definition and model."""
        if self.evaluation_steps is not None:
            return list(self.evaluation_steps)
        session = as_session(session, self.model)
        key = digest(
            "steps",
            STEPS_PROMPT_VERSION,
            "conversation",
            session.model.sha256,
            self.criteria,
            [p.value for p in self.required_params()],
        )
        return session.remembered_steps(key, lambda: self.generate_steps(session))

    def generate_steps(self, session: Any) -> list[str]:
        """Ask the judge for 3-4 evaluation steps (grammar-constrained to a numbered list)."""
        self.steps_generated += 1
        assert self.criteria is not None  # steps are generated only when none are pinned
        prompt = Prompt(
            (STEPS_CRITERIA.format(criteria=self.criteria.strip()),),
            STEPS_QUESTION.format(fields=self.fields_phrase()),
        )
        result = session.generate(prompt, max_tokens=STEPS_MAX_TOKENS, regex=STEPS_REGEX)
        steps = parse_steps(result.text)
        if not steps:
            raise GenerationError(
                f"the judge wrote no evaluation steps for {self.name!r}; pin evaluation_steps "
                "in the metric"
            )
        return steps

    # -- prompts -------------------------------------------------------------------------

    def fields_phrase(self) -> str:
        return conversation_phrase(self.evaluation_params)

    def task(self) -> str:
        """What the judge is asked, stated before the conversation: to score the turns (the
        conversation-level fields are what they are judged against)."""
        return self.scale.task(TURNS_PHRASE)

    def blocks(self, case: ConversationalTestCase, steps: list[str]) -> tuple[str, ...]:
        """Header, the shared fields, the definition, the conversation's own fields and its
        turns: everything before the cue."""
        params = self.evaluation_params
        return (
            HEADER,
            *conversation_fields(case, params, shared=True),
            definition_block(self, steps),
            *conversation_fields(case, params, shared=False),
            *turn_blocks(case, params),
        )

    # -- judging -------------------------------------------------------------------------

    def run(
        self, case: ConversationalTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        session = as_session(session, self.model)
        steps = self.steps_for(session)
        blocks = self.blocks(case, steps)
        prompt = Prompt(blocks, self.scale.cue(), case.label)
        trace = GEvalTrace(steps)
        outcome = self.scale.judge(session, prompt, trace)
        reason_prompt = Prompt(blocks, REASON_QUESTION.format(summary=outcome.summary), case.label)
        return self.conclude(
            session, reason_prompt, include_reason, outcome.score, trace, outcome.usage, start
        )

    def __repr__(self) -> str:
        params = ", ".join(multi_turn_title(p) for p in self.evaluation_params)
        return (
            f"ConversationalGEval(name={self.name!r}, params=[{params}], "
            f"threshold={self.threshold})"
        )

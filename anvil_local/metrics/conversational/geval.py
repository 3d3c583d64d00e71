"""ConversationalGEval: G-Eval over a conversation, scored from the logits as GEval is.

DeepEval's rules: `evaluation_params` are MultiTurnParams, and every turn's role and content
are always shown (added when not named). The prompt holds what many conversations share (the
chatbot's role, its context), then the definition (criteria, steps, rubric, task), then the
conversation's own fields and its turns, then the cue: conversations with one chatbot role
read the definition once, back to back (metric-major), and each costs its own turns. The
score, the scale (a range or a strict Yes/No), the trace and the reason are GEval's.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from anvil_local.cache import digest
from anvil_local.conversation import (
    TURN_PARAMS,
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
from anvil_local.metrics.geval.definition import check_definition, definition_dict
from anvil_local.metrics.geval.layout import definition_block
from anvil_local.metrics.geval.prompts import REASON_QUESTION, STEPS_CRITERIA, STEPS_QUESTION
from anvil_local.metrics.geval.rubric import Rubric
from anvil_local.metrics.geval.shared import set_definition
from anvil_local.metrics.geval.steps import (
    STEPS_MAX_TOKENS,
    STEPS_PROMPT_VERSION,
    STEPS_REGEX,
    parse_steps,
    templated_steps_key,
    templated_steps_prompt,
)
from anvil_local.metrics.geval.template import (
    ConversationalGEvalTemplate,
    overrides,
    render,
    rubric_text,
    template_name,
)
from anvil_local.metrics.geval.trace import GEvalTrace
from anvil_local.metrics.keywords import TEXT_ONLY, refuse
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric

#: Always shown: DeepEval adds them to any ConversationalGEval's params.
ALWAYS = (MultiTurnParams.CONTENT, MultiTurnParams.ROLE)
#: The template method the scoring prompt comes from.
RESULTS = "generate_evaluation_results"


def conversational_params(values: Any) -> list[MultiTurnParams] | None:
    """The params as the enum, each once, with the turns' content and role added (None:
    the conversation's own fields, chosen per case)."""
    if values is None:
        return None
    if isinstance(values, str) or not list(values):
        raise MetricDefinitionError("evaluation_params cannot be an empty list.")
    params = [as_multi_turn_param(v) for v in values]
    if len(set(params)) != len(params):
        raise MetricDefinitionError("evaluation_params lists a param twice")
    return params + [p for p in ALWAYS if p not in params]


def case_params(case: ConversationalTestCase) -> list[MultiTurnParams]:
    """The fields a metric without evaluation_params shows: every conversation-level field
    the case has, then the turns' content and role."""
    own = [p for p in MultiTurnParams if p not in TURN_PARAMS and case.has(p)]
    return ordered_multi_turn(own + list(ALWAYS))


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
        evaluation_template: type | str | None = ConversationalGEvalTemplate,
        top_logprobs: int = 20,
        async_mode: bool = True,
        flaky: bool = False,
        _include_g_eval_suffix: bool = True,
        _audio_model: Any = None,
    ) -> None:
        check_name(name)
        refuse("ConversationalGEval", "_audio_model", _audio_model, (None,), TEXT_ONLY)
        self.evaluation_params = conversational_params(evaluation_params)
        check_definition(self.evaluation_params, criteria, evaluation_steps, optional_params=True)
        self.name = name
        set_definition(self, locals(), template_base=ConversationalGEvalTemplate)
        self.examples = None  # what a G-Eval definition block reads; none here

    def to_dict(self) -> dict[str, Any]:
        return definition_dict(
            self,
            rubric=[r.to_dict() for r in self.rubric] if self.rubric else None,
            threshold=self.threshold,
            strict_mode=self.strict_mode,
            include_reason=self.include_reason,
            evaluation_template=template_name(
                self.evaluation_template, ConversationalGEvalTemplate
            ),
        )

    def required_params(self) -> list[MultiTurnParams]:
        return ordered_multi_turn(self.evaluation_params or [])

    def for_params(self, params: list[MultiTurnParams]) -> ConversationalGEval:
        """This metric as if it named `params` (how one without evaluation_params judges a
        conversation: as one naming the conversation's own fields would)."""
        metric = copy.copy(self)
        metric.evaluation_params = params
        return metric

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
        key = templated_steps_key(
            key, self.criteria or "", self.fields_phrase(), self.evaluation_template
        )
        return session.remembered_steps(key, lambda: self.generate_steps(session))

    def generate_steps(self, session: Any) -> list[str]:
        """Ask the judge for 3-4 evaluation steps (grammar-constrained to a numbered list)."""
        self.steps_generated += 1
        assert self.criteria is not None  # steps are generated only when none are pinned
        prompt = templated_steps_prompt(
            self.criteria, self.fields_phrase(), self.evaluation_template
        ) or Prompt(
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
        return conversation_phrase(self.evaluation_params or list(ALWAYS))

    def task(self) -> str:
        """What the judge is asked, stated before the conversation: to score the turns (the
        conversation-level fields are what they are judged against)."""
        return self.scale.task(TURNS_PHRASE)

    def blocks(self, case: ConversationalTestCase, steps: list[str]) -> tuple[str, ...]:
        """Header, the shared fields, the definition, the conversation's own fields and its
        turns: everything before the cue."""
        params = self.evaluation_params
        if overrides(self.evaluation_template, RESULTS, ConversationalGEvalTemplate):
            return self.templated_blocks(case, steps)
        return (
            HEADER,
            *conversation_fields(case, params, shared=True),
            definition_block(self, steps),
            *conversation_fields(case, params, shared=False),
            *turn_blocks(case, params),
        )

    def templated_blocks(self, case: ConversationalTestCase, steps: list[str]) -> tuple[str, ...]:
        """Header, then the template's text (steps, rubric, fields and turns as it lays them
        out); the cue after it is ours."""
        params = self.evaluation_params
        text = render(
            self.evaluation_template,
            RESULTS,
            evaluation_steps="\n".join(f"{i}. {s.strip()}" for i, s in enumerate(steps, 1)),
            test_case_content="".join(
                conversation_fields(case, params, shared=True)
                + conversation_fields(case, params, shared=False)
            ).strip(),
            turns="".join(turn_blocks(case, params)).strip(),
            parameters=self.fields_phrase(),
            rubric=rubric_text(self.rubric),
            score_range=self.score_range,
            multimodal=False,
        )
        return (HEADER, text.rstrip() + "\n\n")

    # -- judging -------------------------------------------------------------------------

    def run(
        self, case: ConversationalTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        if self.evaluation_params is None:
            return self.for_params(case_params(case)).run(
                case, session, include_reason=include_reason
            )
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
        params = ", ".join(multi_turn_title(p) for p in self.evaluation_params or [])
        return (
            f"ConversationalGEval(name={self.name!r}, params=[{params}], "
            f"threshold={self.threshold})"
        )

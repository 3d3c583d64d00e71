"""HiddenStateMetric (kind `hidden_state`): the judge's last hidden state where it would answer
a yes/no question about the case, for a head to read.

Alone it scores the judge's P(Yes) to the question. As a member of a features metric it also
contributes the state's dimensions (`<name>.h0`, `<name>.h1`, ...): `anvil fit` reduces them
to a few principal components fitted without labels inside each training split (raw, a
small model's hundreds of dimensions overfit a hundred labels), and the kept head, a linear
map of linear maps, is written over the raw dimensions. The state comes from the same exact
evaluation as the verdict's logits (`JudgeSession.hidden_state`); the P(Yes) read after it
costs two tokens.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.prompt import Prompt
from anvil_local.metrics.base import BaseMetric, MetricResult, check_name, check_threshold
from anvil_local.metrics.layout import case_blocks
from anvil_local.metrics.result import Trace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams, as_param

#: The answer options; P(Yes) is the score.
OPTIONS = ("Yes", "No")


@dataclass
class HiddenStateTrace(Trace):
    p_yes: float
    state: list[float]

    def to_dict(self) -> dict[str, Any]:
        return {"type": "hidden_state", "p_yes": self.p_yes, "state": self.state}

    def lines(self) -> list[str]:
        return [f"  P(Yes) {self.p_yes:.4f}; hidden state of {len(self.state)} dimensions"]


@register_metric("hidden_state")
class HiddenStateMetric(BaseMetric):
    """A yes/no question's P(Yes), carrying the hidden state it was read from."""

    title = "hidden-state metric"

    def __init__(
        self,
        name: str,
        question: str,
        evaluation_params: Sequence[SingleTurnParams | str] = (
            SingleTurnParams.INPUT,
            SingleTurnParams.ACTUAL_OUTPUT,
        ),
        threshold: float = 0.5,
        model: Any = None,
    ) -> None:
        check_name(name)
        if not isinstance(question, str) or not question.strip():
            raise MetricDefinitionError("'question' must be a non-empty string")
        params = [as_param(p) for p in evaluation_params]
        if not params:
            raise MetricDefinitionError("'evaluation_params' must name one or more fields")
        self.name = name
        self.question = question
        self.evaluation_params = params
        self.threshold = check_threshold(threshold)
        self.model = model

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "name": self.name,
            "question": self.question,
            "evaluation_params": [p.value for p in self.evaluation_params],
            "threshold": self.threshold,
        }

    def required_params(self) -> list[SingleTurnParams]:
        return list(self.evaluation_params)

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        session = as_session(session, self.model)
        prompt = Prompt(
            case_blocks(case, self.evaluation_params),
            f"{self.question.strip()} (Yes or No)",
            case.label,
        )
        found = session.hidden_state(prompt)
        choice = session.choose(prompt, OPTIONS)
        p_yes = float(choice.probabilities[0])
        return MetricResult(
            self.name,
            p_yes,
            p_yes >= self.threshold,
            self.threshold,
            trace=HiddenStateTrace(p_yes, list(found.state)),
            usage=found.usage + choice.usage,
            seconds=time.perf_counter() - start,
        )

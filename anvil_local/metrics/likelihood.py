"""LikelihoodMetric: how likely the judge finds the output as its own answer (GPTScore style).

The prompt holds the case's source fields (the Input, by default) and a task ("Summarise the
Input."); the score comes from the log-probability of each token of the Actual Output as the
answer, read in one forward pass with no generation. Small models that answer questions
close to chance still rank texts by likelihood with real signal (see DESIGN.md).

- `normalise = "mean"` (default): the mean log-probability per token; `"sum"`: the total;
  `"min"`: the least likely token. A small edit (one wrong name or number in an otherwise
  faithful summary) hides in a mean over 40 tokens but is the minimum.
- `contrast = true`: minus the same quantity without the source fields (the output's
  unconditional likelihood), so fluent but unsupported text stops scoring well. With
  "min", the contrast is taken token by token first: the value is the token the source
  supports least (its log-probability with the source minus without it).
- `content_only = true`: only the tokens of content words count; punctuation and function
  words (the, of, is, ...) are skipped (`content_words.py` says why). Their log-probability
  follows the grammar, not the source, and its noise otherwise decides a minimum.
- The stated transform to 0..1: exp(value) without contrast (for "mean", the geometric mean
  of the token probabilities); the logistic 1 / (1 + exp(-value)) with contrast.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.prompt import Prompt
from anvil_local.metrics.base import (
    BaseMetric,
    MetricResult,
    check_name,
    check_threshold,
)
from anvil_local.metrics.content_words import content_token_mask
from anvil_local.metrics.layout import case_blocks
from anvil_local.metrics.result import Trace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams, as_param

_NORMALISE = ("mean", "sum", "min")


@dataclass
class LikelihoodTrace(Trace):
    tokens: list[str]
    logprobs: list[float]
    conditional: float  # the normalised log-probability given the source
    unconditional: float | None  # the same without the source (contrast only)
    value: float  # what the transform maps to the score
    transform: str
    weakest: int | None = None  # "min": the index of the token the value comes from
    skipped: list[int] | None = None  # content_only: the indices of the tokens not counted

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "likelihood",
            "conditional": self.conditional,
            "unconditional": self.unconditional,
            "value": self.value,
            "transform": self.transform,
            "tokens": [[t, lp] for t, lp in zip(self.tokens, self.logprobs, strict=True)],
        }
        if self.weakest is not None:
            data["weakest_token"] = self.weakest
        if self.skipped is not None:
            data["skipped_tokens"] = self.skipped
        return data

    def lines(self) -> list[str]:
        lines = [f"  log-probability given the source: {self.conditional:.3f}"]
        if self.unconditional is not None:
            lines.append(f"  without the source: {self.unconditional:.3f}")
        lines.append(f"  value {self.value:.3f}, score = {self.transform}")
        if self.weakest is not None:
            lines.append(f"  the value's token: {self.tokens[self.weakest]!r} (#{self.weakest})")
        if self.skipped is not None:
            lines.append(f"  tokens skipped (punctuation, function words): {len(self.skipped)}")
        worst = sorted(zip(self.logprobs, self.tokens, strict=True))[:5]
        shown = ", ".join(f"{t!r} {lp:.2f}" for lp, t in worst)
        lines.append(f"  least likely tokens: {shown}")
        return lines


@register_metric("likelihood")
class LikelihoodMetric(BaseMetric):
    title = "likelihood metric"

    def __init__(
        self,
        name: str,
        task: str = "Summarise the Input.",
        evaluation_params: Sequence[SingleTurnParams | str] = (SingleTurnParams.INPUT,),
        target: SingleTurnParams | str = SingleTurnParams.ACTUAL_OUTPUT,
        normalise: str = "mean",
        contrast: bool = False,
        content_only: bool = False,
        threshold: float = 0.5,
        model: Any = None,
    ) -> None:
        check_name(name)
        if not isinstance(task, str) or not task.strip():
            raise MetricDefinitionError("'task' must be a non-empty string")
        if normalise not in _NORMALISE:
            raise MetricDefinitionError(f"'normalise' must be one of: {', '.join(_NORMALISE)}")
        self.name = name
        self.task = task
        self.evaluation_params = [as_param(p) for p in evaluation_params]
        self.target = as_param(target)
        if self.target in self.evaluation_params:
            raise MetricDefinitionError("the target field cannot also be a source field")
        self.normalise = normalise
        self.contrast = bool(contrast)
        self.content_only = bool(content_only)
        self.threshold = check_threshold(threshold)
        self.model = model

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": self.kind,
            "name": self.name,
            "task": self.task,
            "evaluation_params": [p.value for p in self.evaluation_params],
            "target": self.target.value,
            "normalise": self.normalise,
            "contrast": self.contrast,
            "threshold": self.threshold,
        }
        if self.content_only:  # written only when set: older definitions keep their cache keys
            data["content_only"] = True
        return data

    def required_params(self) -> list[SingleTurnParams]:
        return [*self.evaluation_params, self.target]

    def _counted(self, tokens: Sequence[str]) -> list[int]:
        """The indices of the tokens the value is computed over."""
        if not self.content_only:
            return list(range(len(tokens)))
        return [i for i, content in enumerate(content_token_mask(tokens)) if content]

    def _skipped(self, size: int, counted: Sequence[int]) -> list[int] | None:
        """For the trace: the tokens not counted (None unless content_only)."""
        if not self.content_only:
            return None
        kept = set(counted)
        return [i for i in range(size) if i not in kept]

    def _normalised(self, logprobs: Sequence[float], counted: Sequence[int]) -> float:
        """The value for "mean" or "sum"; "min" is read at one token (`_weakest`)."""
        total = sum(logprobs[i] for i in counted)
        return total / len(counted) if self.normalise == "mean" else total

    def _weakest(
        self, given: Sequence[float], alone: Sequence[float] | None, counted: Sequence[int]
    ) -> int | None:
        """For "min": the index of the least likely counted token (with contrast, the token
        whose log-probability the source raises least); the first such token on a tie."""
        if self.normalise != "min":
            return None
        if alone is None:
            return min(counted, key=given.__getitem__)
        return min(counted, key=lambda i: given[i] - alone[i])

    def _alone(self, case: LLMTestCase) -> Prompt:
        """The contrast's prompt: the target without the source fields."""
        return Prompt(case_blocks(case, []), self.task, case.label)

    def prepare(self, cases: Sequence[LLMTestCase], session: Any) -> None:
        """With contrast, read every case's unconditional likelihood first: interleaved with
        the conditional ones, each would evict the shared source from the KV cache, and the
        source would be read again for every case."""
        if not self.contrast or not hasattr(session, "prefetch_likelihood"):
            return
        for case in cases:
            if all(case.get(p) is not None for p in self.required_params()):
                session.prefetch_likelihood(self._alone(case), str(case.get(self.target)))

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        session = as_session(session, self.model)
        text = str(case.get(self.target))
        given = session.likelihood(
            Prompt(case_blocks(case, self.evaluation_params), self.task, case.label), text
        )
        usage = given.usage
        alone_logprobs = None
        if self.contrast:
            alone = session.likelihood(self._alone(case), text)
            alone_logprobs = list(alone.logprobs)
            usage = usage + alone.usage
        counted = self._counted(given.tokens)
        weakest = self._weakest(given.logprobs, alone_logprobs, counted)
        if weakest is not None:  # both terms at the one token, so value = their difference
            conditional = given.logprobs[weakest]
            unconditional = None if alone_logprobs is None else alone_logprobs[weakest]
        else:
            conditional = self._normalised(given.logprobs, counted)
            unconditional = (
                None if alone_logprobs is None else self._normalised(alone_logprobs, counted)
            )
        if unconditional is not None:
            value = conditional - unconditional
            score = 1.0 / (1.0 + math.exp(-value))
            transform = "1 / (1 + exp(-value)), value = conditional - unconditional"
        else:
            value = conditional
            score = min(1.0, math.exp(value))
            transform = "exp(value), value = conditional"
        trace = LikelihoodTrace(
            list(given.tokens),
            list(given.logprobs),
            conditional,
            unconditional,
            value,
            transform,
            weakest,
            self._skipped(len(given.tokens), counted),
        )
        return MetricResult(
            self.name,
            score,
            score >= self.threshold,
            self.threshold,
            trace=trace,
            usage=usage,
            seconds=time.perf_counter() - start,
        )

"""A DeepEval custom model (`DeepEvalBaseLLM`) answering a DAG's nodes.

DeepEval reaches a model of one's own through a DeepEvalBaseLLM subclass whose
`generate(prompt, schema=...)` returns the schema filled in; its own DAG tests judge with
such deterministic stand-ins. Passed as a DAGMetric's `model=`, one answers each node as
DeepEval asks it, with DeepEval's schema names: a task node TaskNodeOutput, a yes/no node
BinaryJudgementVerdict, a multiple-choice node NonBinaryJudgementVerdict (its verdict one of
the node's options), the reason MetricScoreReason. The prompt text is ours, the same the
local judge reads. Such a model gives no logits, so its verdict is taken as certain
(probability 1, as a code node's), and G-Eval, whose score is read from the logits,
refuses it in one line. The schemas are pydantic models, as DeepEval's custom models expect
(pydantic comes with outlines).
"""

from __future__ import annotations

import functools
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Literal

from anvil_local.cache import digest
from anvil_local.errors import GenerationError, UnsupportedFeature
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import ChoiceResult, GenerationResult, Usage

#: Why a metric that reads the logits refuses a DeepEval model.
NO_LOGITS = (
    "a DeepEval model (DeepEvalBaseLLM) gives no logits to read a score from; it answers "
    "DAG nodes only (pass model= a GGUF path or a catalogue name)"
)
#: What one call costs in the trace: a call, tokens not known.
_ONE_CALL = Usage(calls=1)


class DeepEvalBaseLLM(ABC):
    """DeepEval's base class for a custom model, under its name and with its methods, so a
    subclass ports by changing its imports (see the module docstring)."""

    def __init__(self, model: str | None = None, *args: Any, **kwargs: Any) -> None:
        self.name = model
        self.model = self.load_model()

    @abstractmethod
    def load_model(self, *args: Any, **kwargs: Any) -> Any:
        """The object that answers (often `self`)."""

    @abstractmethod
    def generate(self, *args: Any, **kwargs: Any) -> Any:
        """`generate(prompt, schema=...)`: the schema filled in (or its JSON text)."""

    @abstractmethod
    async def a_generate(self, *args: Any, **kwargs: Any) -> Any:
        """The async twin of `generate` (a local walk calls `generate`)."""

    @abstractmethod
    def get_model_name(self, *args: Any, **kwargs: Any) -> str:
        return self.name or type(self).__name__


def is_deepeval_model(model: Any) -> bool:
    """Whether `model` is a DeepEval-style custom model (ours or DeepEval's own class): it
    generates and names itself, and is neither a model spec nor one of our judges."""
    return (
        model is not None
        and not isinstance(model, str | bytes | ResolvedModel)
        and not hasattr(model, "choose")
        and callable(getattr(model, "generate", None))
        and callable(getattr(model, "get_model_name", None))
    )


def deepeval_judge(model: Any) -> SchemaJudge | None:
    """The judge stand-in for a DeepEval model, else None (the metric opens its model)."""
    return SchemaJudge(model) if is_deepeval_model(model) else None


@functools.cache
def _schemas() -> dict[str, Any]:
    from pydantic import BaseModel

    class MetricScoreReason(BaseModel):
        reason: str

    class TaskNodeOutput(BaseModel):
        output: str | list[str] | dict[str, str]

    class BinaryJudgementVerdict(BaseModel):
        verdict: bool
        reason: str

    return {
        "reason": MetricScoreReason,
        "task": TaskNodeOutput,
        "binary": BinaryJudgementVerdict,
    }


@functools.cache
def choice_schema(options: tuple[str, ...]) -> Any:
    """DeepEval's NonBinaryJudgementVerdict for these options: the verdict one of them."""
    from pydantic import create_model

    return create_model(
        "NonBinaryJudgementVerdict",
        verdict=(Literal[options], ...),  # type: ignore[valid-type]
        reason=(str, ...),
    )


def _as_text(output: Any) -> str:
    """A task output as the nodes below it read it: a list one item a line."""
    if isinstance(output, list):
        return "\n".join(str(item) for item in output)
    if isinstance(output, dict):
        return "\n".join(f"{key}: {value}" for key, value in output.items())
    return str(output)


class SchemaJudge:
    """The judge primitives a DAG walk needs, answered by a DeepEval model through
    DeepEval's schemas: `verdict` and `task_output` (the walk's asker calls them, knowing
    the node), `generate` (the reason), and `choose` for any other caller."""

    def __init__(self, model: Any) -> None:
        self.deepeval_model = model
        name = str(model.get_model_name())
        self.model = ResolvedModel(name, "", digest("deepeval-model", type(model).__name__, name))

    def _ask(self, prompt: Prompt, schema: Any) -> Any:
        """The model's answer as the schema: DeepEval's custom models return the schema
        filled in, an (answer, cost) pair, or its JSON text."""
        answer = self.deepeval_model.generate(prompt.text(), schema=schema)
        if isinstance(answer, tuple) and len(answer) == 2:
            answer = answer[0]
        if isinstance(answer, schema):
            return answer
        try:
            if isinstance(answer, str):
                found = re.search(r"\{.*\}", answer, re.DOTALL)
                return schema.model_validate(json.loads(found.group(0) if found else answer))
            if hasattr(answer, "model_dump"):
                return schema.model_validate(answer.model_dump())
            return schema.model_validate(answer)
        except Exception as exc:  # pydantic's ValidationError, a JSON error
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise GenerationError(
                f"{self.model.name}: the answer does not fit {schema.__name__}: {first}"
            ) from exc

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        """A yes/no question when the options are Yes and No, else a multiple choice."""
        return self.verdict(prompt, options, binary=tuple(options) == ("Yes", "No"))

    def verdict(self, prompt: Prompt, options: Sequence[str], binary: bool) -> ChoiceResult:
        """A judgement node's verdict: BinaryJudgementVerdict for a yes/no node (its options
        Yes, No), NonBinaryJudgementVerdict over the options otherwise."""
        start = time.perf_counter()
        options = tuple(options)
        if binary:
            index = 0 if self._ask(prompt, _schemas()["binary"]).verdict else 1
        else:
            index = options.index(self._ask(prompt, choice_schema(options)).verdict)
        probabilities = tuple(1.0 if i == index else 0.0 for i in range(len(options)))
        return ChoiceResult(options, probabilities, index, _ONE_CALL, time.perf_counter() - start)

    def task_output(self, prompt: Prompt) -> GenerationResult:
        """A task node's output (TaskNodeOutput)."""
        return self._text(prompt, "task", "output")

    def generate(
        self,
        prompt: Prompt,
        max_tokens: int,
        schema: Any = None,
        regex: str | None = None,
        stop: Sequence[str] = (),
    ) -> GenerationResult:
        """The metric's reason (MetricScoreReason); constrained text (G-Eval's steps) is the
        local judge's."""
        if schema is not None or regex is not None:
            raise UnsupportedFeature(NO_LOGITS)
        return self._text(prompt, "reason", "reason")

    def _text(self, prompt: Prompt, schema: str, key: str) -> GenerationResult:
        start = time.perf_counter()
        text = _as_text(getattr(self._ask(prompt, _schemas()[schema]), key)).strip()
        return GenerationResult(text, 0, True, _ONE_CALL, time.perf_counter() - start)

    def decode_choice(self, prompt: Prompt, options: Sequence[str]) -> str:
        """What the model answers is already a decode."""
        return self.choose(prompt, options).choice

    def score(self, prompt: Prompt, lo: int, hi: int) -> Any:
        raise UnsupportedFeature(NO_LOGITS)

    def hidden_state(self, prompt: Prompt) -> Any:
        raise UnsupportedFeature(NO_LOGITS)

    def likelihood(self, prompt: Prompt, continuation: str) -> Any:
        raise UnsupportedFeature(NO_LOGITS)

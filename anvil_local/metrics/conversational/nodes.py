"""DeepEval's conversational DAG nodes: the single-turn nodes reading a conversation.

Each is a subclass of its single-turn node (so the walk, the graph rules and the trace treat
them alike) whose `evaluation_params` are MultiTurnParams and which may hold a `turn_window`:
(start, end), 0-based turn indices, both included, the turns the node reads (DeepEval's
meaning; unlike DeepEval a window of one turn, start == end, is allowed). In a metric file
they are the node types of a `conversational_dag`, under the single-turn names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from anvil_local.conversation import MultiTurnParams, as_multi_turn_param, check_turn_window
from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.dag.nodes import (
    BinaryJudgementNode,
    NonBinaryJudgementNode,
    TaskNode,
    VerdictNode,
)
from anvil_local.registry import register_node


def multi_turn_params(values: Sequence[Any] | None) -> list[MultiTurnParams] | None:
    """`evaluation_params` of a conversational node as the enum."""
    if values is None:
        return None
    if isinstance(values, str | MultiTurnParams):
        values = [values]
    return [as_multi_turn_param(v) for v in values]


class ConversationalNode:
    """What every conversational node adds to its single-turn node: the param enum, the
    window, and the mark that puts it in a conversational graph."""

    multiturn: ClassVar[bool] = True
    turn_window: tuple[int, int] | None

    @staticmethod
    def read_params(values: Sequence[Any] | None) -> list[Any] | None:
        return multi_turn_params(values)

    def _window_spec(self) -> dict[str, Any]:
        return {"turn_window": list(self.turn_window)} if self.turn_window is not None else {}

    @classmethod
    def spec_kwargs(cls, spec: dict[str, Any], label: str) -> dict[str, Any]:
        kwargs = super().spec_kwargs(spec, label)  # type: ignore[misc]
        return {**kwargs, "turn_window": spec.get("turn_window")}


@dataclass(eq=False)
class ConversationalVerdictNode(VerdictNode):
    """A branch outcome of a conversational judgement node: a score (0-10) or a child (a
    conversational node or a conversational metric such as ConversationalGEval)."""

    multiturn: ClassVar[bool] = True
    id_prefix: ClassVar[str] = "verdict"  # how a graph names it when it has no label


_TASK_FIELDS = {
    "instructions",
    "output_label",
    "children",
    "evaluation_params",
    "turn_window",
    "label",
    "max_tokens",
    "stop",
}
_JUDGEMENT_FIELDS = {"criteria", "verdicts", "evaluation_params", "turn_window", "label"}


@register_node("task", _TASK_FIELDS, conversational=True)
@dataclass(eq=False)
class ConversationalTaskNode(ConversationalNode, TaskNode):
    """Extracts text from the conversation (or the turns of its window)."""

    id_prefix: ClassVar[str] = "task"
    turn_window: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        self.turn_window = check_turn_window(self.turn_window)
        super().__post_init__()

    def to_spec(self, name_of: Any) -> dict[str, Any]:
        spec = super().to_spec(name_of)
        children = spec.pop("children")
        spec.update(self._window_spec(), children=children)
        return spec


class _ConversationalJudgement(ConversationalNode):
    """The judgement nodes' part: a window, conversational verdicts, no few-shot examples or
    contextual calibration (their blocks are single-turn cases)."""

    verdict_type: ClassVar[type[VerdictNode]] = ConversationalVerdictNode
    criteria: str
    examples: Any
    contextual_calibration: bool
    negation: str | None
    rotate_options: bool

    def __post_init__(self) -> None:
        self.turn_window = check_turn_window(self.turn_window)
        if self.examples or self.contextual_calibration or self.negation or self.rotate_options:
            raise MetricDefinitionError(
                f"{type(self).__name__}: examples, contextual_calibration, negation and "
                "rotate_options are for single-turn nodes"
            )
        super().__post_init__()  # type: ignore[misc]

    def to_spec(self, name_of: Any) -> dict[str, Any]:
        spec = super().to_spec(name_of)  # type: ignore[misc]
        verdicts = spec.pop("verdicts")
        spec.update(self._window_spec(), verdicts=verdicts)
        return spec


@register_node("binary", _JUDGEMENT_FIELDS, conversational=True)
@dataclass(eq=False)
class ConversationalBinaryJudgementNode(_ConversationalJudgement, BinaryJudgementNode):
    """A yes/no question on the conversation: one True and one False verdict."""

    id_prefix: ClassVar[str] = "binary"
    turn_window: tuple[int, int] | None = None


@register_node("non_binary", _JUDGEMENT_FIELDS, conversational=True)
@dataclass(eq=False)
class ConversationalNonBinaryJudgementNode(_ConversationalJudgement, NonBinaryJudgementNode):
    """A multiple-choice question on the conversation: string verdicts, in declared order."""

    id_prefix: ClassVar[str] = "choice"
    turn_window: tuple[int, int] | None = None

"""Code nodes of a conversational DAG: the single-turn code nodes reading a conversation.

A conversational code node reads `fields` that are MultiTurnParams: a turn-level field
(`content`, `retrieval_context`, `tools_called`) is the text of the turns in its
`turn_window` (all turns when unset), one turn a line, in turn order, kept to the speakers
in `roles` when given (`roles = ["assistant"]`); a conversation-level field (`scenario`,
`expected_outcome`, ...) is its text. `reads` (a task output above) and `source` work as in
a single-turn code node. Checks that look at order (`ordered`, `precedes`) therefore see the
conversation's order.
"""

from __future__ import annotations

from typing import Any, ClassVar

from anvil_local.conversation import (
    ROLES,
    ConversationalTestCase,
    MultiTurnParams,
    as_multi_turn_param,
    check_turn_window,
    is_turn_param,
)
from anvil_local.errors import MetricDefinitionError
from anvil_local.metrics.conversational.nodes import (
    ConversationalNode,
    ConversationalVerdictNode,
    multi_turn_params,
)
from anvil_local.metrics.dag.code import CodeChoiceNode, CodeNode, CodeTaskNode
from anvil_local.metrics.dag.nodes import VerdictNode
from anvil_local.registry import register_node

_READING = {"fields", "reads", "source", "roles", "turn_window", "label"}


def _roles(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value or any(v not in ROLES for v in value):
        raise MetricDefinitionError(f"'roles' must list 'user' and/or 'assistant', got {value!r}")
    return tuple(value)


class _ConversationReads(ConversationalNode):
    """What a conversational code node reads (see the module's docstring)."""

    verdict_type: ClassVar[type[VerdictNode]] = ConversationalVerdictNode
    roles: tuple[str, ...] | None
    fields: list[MultiTurnParams]
    reads: str | None
    source: MultiTurnParams | None

    def _set_turns(self, roles: Any, turn_window: Any) -> None:
        self.roles = _roles(roles)
        self.turn_window = check_turn_window(turn_window)

    def _set_reading(self, fields: Any, reads: Any, source: Any) -> None:
        self.fields = multi_turn_params(fields) or []
        if reads is not None and (not isinstance(reads, str) or not reads.strip()):
            raise MetricDefinitionError("'reads' must name a task node's output_label")
        self.reads = reads
        self.source = as_multi_turn_param(source) if source is not None else None
        if MultiTurnParams.ROLE in (*self.fields, self.source):
            raise MetricDefinitionError(
                "a code node reads text: 'role' is not a text field (use 'roles' to keep the "
                "turns of one speaker)"
            )
        if not self.fields and self.reads is None:
            raise MetricDefinitionError("a code node needs 'fields' or 'reads'")

    def _field_text(self, case: ConversationalTestCase, param: MultiTurnParams) -> str:
        if not is_turn_param(param):
            value = case.get(param)
            if isinstance(value, list):
                return "\n".join(value)
            return value or ""
        start, end = self.turn_window or (0, len(case.turns) - 1)
        parts = []
        for turn in case.turns[start : end + 1]:
            if self.roles is not None and turn.role not in self.roles:
                continue
            value = turn.get(param)
            if value:
                parts.append("\n".join(value) if isinstance(value, list) else value)
        return "\n".join(parts)

    def _reading_spec(self) -> dict[str, Any]:
        spec = super()._reading_spec()  # type: ignore[misc]
        if self.roles is not None:
            spec["roles"] = list(self.roles)
        spec.update(self._window_spec())
        return spec


def _reading(spec: dict[str, Any]) -> dict[str, Any]:
    return {k: spec.get(k) for k in ("fields", "reads", "source", "roles", "turn_window")}


@register_node(
    "code", {"check", "args", "at_least", "at_most", "verdicts", *_READING}, conversational=True
)
class ConversationalCodeNode(_ConversationReads, CodeNode):
    """A yes/no node on a conversation decided by a check."""

    def __init__(
        self, check: str, args: dict[str, Any] | None = None, *, roles: Any = None,
        turn_window: Any = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        self._set_turns(roles, turn_window)
        super().__init__(check, args, **kwargs)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> ConversationalCodeNode:
        return cls(
            spec.get("check"),  # type: ignore[arg-type]
            spec.get("args"),
            at_least=spec.get("at_least"),
            at_most=spec.get("at_most"),
            label=label,
            **_reading(spec),
        )


@register_node("code_choice", {"check", "args", "bins", "verdicts", *_READING}, conversational=True)
class ConversationalCodeChoiceNode(_ConversationReads, CodeChoiceNode):
    """A multiple-choice node on a conversation: a numeric check binned into the verdicts."""

    def __init__(
        self, check: str, bins: list[float], args: dict[str, Any] | None = None, *,
        roles: Any = None, turn_window: Any = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        self._set_turns(roles, turn_window)
        super().__init__(check, bins, args, **kwargs)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> ConversationalCodeChoiceNode:
        return cls(
            spec.get("check"),  # type: ignore[arg-type]
            spec.get("bins"),  # type: ignore[arg-type]
            spec.get("args"),
            label=label,
            **_reading(spec),
        )


@register_node(
    "code_task",
    {"pattern", "ignore_case", "output_label", "children", *_READING - {"source"}},
    conversational=True,
)
class ConversationalCodeTaskNode(_ConversationReads, CodeTaskNode):
    """A task node whose output is a regex's matches in the conversation, one a line."""

    def __init__(
        self, pattern: str, output_label: str, *, roles: Any = None, turn_window: Any = None,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        self._set_turns(roles, turn_window)
        super().__init__(pattern, output_label, **kwargs)

    @classmethod
    def from_spec(cls, spec: dict[str, Any], label: str) -> ConversationalCodeTaskNode:
        reading = _reading(spec)
        del reading["source"]
        return cls(
            spec.get("pattern"),  # type: ignore[arg-type]
            spec.get("output_label"),  # type: ignore[arg-type]
            ignore_case=spec.get("ignore_case", False),
            label=label,
            **reading,
        )

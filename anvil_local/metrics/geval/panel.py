"""The rules of a G-Eval panel, as pure checks over definitions and already-built members:
the metric builds its members (see `GEval`), these say whether they make a panel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from anvil_local.errors import MetricDefinitionError


class Member(Protocol):
    """What the panel rules read of a member."""

    name: str
    examples: Any
    contextual_calibration: bool

    def to_dict(self) -> dict[str, Any]: ...


M = TypeVar("M", bound=Member)


def panel_entries(panel: Any) -> list[Any]:
    """A panel's entries (definitions or metrics): a list of two or more."""
    items = [] if isinstance(panel, str | dict) else list(panel)
    if len(items) < 2:
        raise MetricDefinitionError("a G-Eval panel needs a list of two or more G-Eval metrics")
    return items


def member_definition(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry written as a definition: it must be a G-Eval's."""
    if entry.get("type", "geval") != "geval":
        raise MetricDefinitionError("every member of a G-Eval panel is a G-Eval metric")
    return entry


def standalone(definition: dict[str, Any]) -> dict[str, Any]:
    """A definition without its panel (what a member's entry in a panel holds)."""
    data = dict(definition)
    data.pop("panel", None)
    return data


def check_members(name: str, definition: dict[str, Any], members: Sequence[M]) -> tuple[M, ...]:
    """The members of the panel of metric `name` (whose own `definition`, without a panel,
    is given), checked: distinct names, no examples or contextual calibration (their prompts
    would not be shared), the metric among them with the same definition."""
    names = [m.name for m in members]
    if len(set(names)) != len(names):
        raise MetricDefinitionError(f"the members of a G-Eval panel need distinct names: {names}")
    for member in members:
        if member.examples or member.contextual_calibration:
            raise MetricDefinitionError(
                f"G-Eval panel member {member.name!r}: examples and contextual calibration "
                "are not available in a panel"
            )
    own = next((m for m in members if m.name == name), None)
    if own is None:
        raise MetricDefinitionError(f"{name!r} is not a member of its own panel {names}")
    if own.to_dict() != standalone(definition):
        raise MetricDefinitionError(f"{name!r}: its definition differs from its entry in the panel")
    return tuple(members)

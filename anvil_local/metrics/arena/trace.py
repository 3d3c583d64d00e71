"""The record of one arena judgement: each order shown and what the judge said, the win
probability of every contestant, and the position bias measured across the orders."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anvil_local.metrics.render import probability_lines
from anvil_local.metrics.result import Trace


@dataclass(frozen=True)
class OrderReading:
    """One order: the contestants by position, and the judge's probability per position."""

    contestants: tuple[str, ...]
    probabilities: tuple[float, ...]
    letters: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "order": list(self.contestants),
            "probabilities": dict(zip(self.letters, self.probabilities, strict=True)),
        }


@dataclass
class ArenaTrace(Trace):
    steps: list[str]
    winner: str = ""
    probabilities: dict[str, float] = field(default_factory=dict)  # by contestant
    orders: list[OrderReading] = field(default_factory=list)
    position_mass: dict[str, float] = field(default_factory=dict)  # by position letter
    position_bias: float | None = None
    consistent: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "arena",
            "steps": self.steps,
            "winner": self.winner,
            "probabilities": self.probabilities,
            "orders": [o.to_dict() for o in self.orders],
            "position_mass": self.position_mass,
            "position_bias": self.position_bias,
            "consistent": self.consistent,
        }

    def lines(self) -> list[str]:
        lines = ["  steps:"]
        lines += [f"   {i}. {s}" for i, s in enumerate(self.steps, 1)]
        for number, order in enumerate(self.orders, 1):
            shown = ", ".join(
                f"{letter}={name}"
                for letter, name in zip(order.letters, order.contestants, strict=True)
            )
            lines.append(f"  order {number} ({shown}):")
            lines += probability_lines(dict(zip(order.letters, order.probabilities, strict=True)))
        lines.append("  win probability, averaged over the orders:")
        lines += probability_lines(self.probabilities, self.winner)
        if self.position_bias is not None:
            mass = ", ".join(f"{k} {v:.3f}" for k, v in self.position_mass.items())
            agree = "every order agrees" if self.consistent else "the orders disagree"
            lines.append(
                f"  position bias {self.position_bias:+.3f} (mean per position: {mass}; {agree})"
            )
        return lines

"""In which orders an arena's contestants are shown, and how the orders' answers combine
(pure arithmetic, no judge).

A judge asked to pick one of several outputs leans to a position (the first, say) whatever
the outputs say. Shown in every order and averaged, each contestant sits in each position
equally often, so the lean cancels out of the win probabilities and can be measured: the
mean probability the judge gives each position, over the orders.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: How positions are named in a prompt: one letter each, so each answer is one token.
POSITIONS = "ABCDEFGHIJ"
MAX_CONTESTANTS = len(POSITIONS)

Order = tuple[int, ...]  # order[i]: the contestant shown at position i


def orders(count: int, debias: bool = True) -> list[Order]:
    """The orders judged for `count` contestants: the declared order alone without
    debiasing; with it, both orders of two contestants, and for more the `count` rotations
    of the declared order (each contestant once in each position: a bounded set, not all
    count! permutations)."""
    declared = tuple(range(count))
    if not debias:
        return [declared]
    return [declared[k:] + declared[:k] for k in range(count)]


@dataclass(frozen=True)
class Combined:
    """The orders' answers together: each contestant's probability of winning (declared
    order), the mean probability each position got, and the position bias (the first
    position's mean minus an even share; None from one order, where it cannot be told
    apart from the contestants)."""

    wins: tuple[float, ...]
    position_mass: tuple[float, ...]
    position_bias: float | None
    order_winners: tuple[int, ...]  # the contestant each order's answer favoured

    @property
    def winner(self) -> int:
        """The most probable contestant (ties: the first declared)."""
        return max(range(len(self.wins)), key=lambda i: (self.wins[i], -i))

    @property
    def consistent(self) -> bool:
        """Every order favoured the same contestant."""
        return len(set(self.order_winners)) == 1


def combine(shown: Sequence[Order], answers: Sequence[Sequence[float]]) -> Combined:
    """Average the per-order position distributions into per-contestant win probabilities."""
    count = len(shown[0])
    wins = [0.0] * count
    mass = [0.0] * count
    winners = []
    for order, probabilities in zip(shown, answers, strict=True):
        for position, contestant in enumerate(order):
            wins[contestant] += probabilities[position]
            mass[position] += probabilities[position]
        best = max(range(count), key=lambda i: (probabilities[i], -i))
        winners.append(order[best])
    n = len(shown)
    mean_mass = tuple(m / n for m in mass)
    bias = mean_mass[0] - 1 / count if n > 1 else None
    return Combined(tuple(w / n for w in wins), mean_mass, bias, tuple(winners))

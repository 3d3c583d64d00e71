"""What a score range means (DeepEval's Rubric), and the arithmetic of a range."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError, MetricTypeError

#: The range a G-Eval scores on when it has no rubric.
DEFAULT_RANGE = (0, 10)


@dataclass(frozen=True)
class Rubric:
    """What a score range means: `score_range=(a, b)` within 0..10, a <= b."""

    score_range: tuple[int, int]
    expected_outcome: str

    def __post_init__(self) -> None:
        rng = tuple(self.score_range)
        if len(rng) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in rng):
            raise MetricDefinitionError("Rubric's 'score_range' must be two integers.")
        object.__setattr__(self, "score_range", rng)
        start, end = rng
        if not (0 <= start <= 10 and 0 <= end <= 10):
            raise MetricDefinitionError(
                "Both Rubric's 'score_range' values must be between 0 and 10 inclusive."
            )
        if start > end:
            raise MetricDefinitionError(
                "Rubric's 'score_range' start must be less than or equal to end."
            )
        if not isinstance(self.expected_outcome, str) or not self.expected_outcome.strip():
            raise MetricDefinitionError("Rubric's 'expected_outcome' cannot be empty.")

    def line(self) -> str:
        """The rubric line a prompt shows ("3-5: fair", "7: good")."""
        start, end = self.score_range
        span = f"{start}" if start == end else f"{start}-{end}"
        return f"{span}: {self.expected_outcome.strip()}"

    def to_dict(self) -> dict[str, Any]:
        return {"score_range": list(self.score_range), "expected_outcome": self.expected_outcome}


def sort_rubric(rubric: Sequence[Rubric | dict[str, Any]] | None) -> tuple[Rubric, ...] | None:
    """Sorted by start (a metric file's tables read as Rubric); overlapping ranges (touching
    ends included) are rejected."""
    if not rubric:
        return None
    items = []
    for item in rubric:
        if isinstance(item, dict):
            item = Rubric(
                score_range=tuple(item.get("score_range", ())),  # type: ignore[arg-type]
                expected_outcome=item.get("expected_outcome", ""),
            )
        if not isinstance(item, Rubric):
            raise MetricTypeError(f"rubric items must be Rubric, got {type(item).__name__}")
        items.append(item)
    items.sort(key=lambda r: r.score_range)
    for a, b in itertools.pairwise(items):
        if a.score_range[1] >= b.score_range[0]:
            raise MetricDefinitionError(
                f"Overlapping score ranges: {a.score_range} and {b.score_range}"
            )
    return tuple(items)


def score_range(rubric: Sequence[Rubric] | None) -> tuple[int, int]:
    """0..10, or the span of the (sorted) rubric."""
    if not rubric:
        return DEFAULT_RANGE
    return (rubric[0].score_range[0], rubric[-1].score_range[1])


def normalise(value: float, lo: int, hi: int) -> float:
    """A value on lo..hi as 0..1 (the metric's score)."""
    return (value - lo) / (hi - lo)

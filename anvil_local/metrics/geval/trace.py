"""The record of one G-Eval judgement: the steps used, then the score distribution or the
strict verdict, and the prior a contextual calibration divided out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from anvil_local.metrics.render import probability_lines
from anvil_local.metrics.result import Trace


@dataclass
class GEvalTrace(Trace):
    """The steps used, then either the score distribution or the strict verdict."""

    steps: list[str]
    score_range: tuple[int, int] | None = None
    distribution: dict[str, float] | None = None
    weighted: float | None = None
    most_likely: int | None = None
    verdict: str | None = None  # strict mode
    probabilities: dict[str, float] | None = None  # strict mode
    raw: dict[str, float] | None = None  # contextual calibration: the judge's own distribution
    prior: dict[str, float] | None = None  # ... and the content-free one divided out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": "geval", "steps": self.steps}
        if self.verdict is not None:
            data.update(verdict=self.verdict, probabilities=self.probabilities)
        else:
            data.update(
                score_range=list(self.score_range or ()),
                distribution=self.distribution,
                weighted=self.weighted,
                most_likely=self.most_likely,
            )
        if self.prior is not None:
            data.update(uncalibrated=self.raw, prior=self.prior)
        return data

    def lines(self) -> list[str]:
        lines = ["  steps:"]
        lines += [f"   {i}. {s}" for i, s in enumerate(self.steps, 1)]
        if self.verdict is None:
            lo, hi = self.score_range or (0, 0)
            lines.append(f"  distribution over {lo}-{hi} (weighted {self.weighted:.3f}):")
            lines += probability_lines(self.distribution or {}, self.most_likely)
        else:
            lines.append("  strict verdict:")
            lines += probability_lines(self.probabilities or {}, self.verdict)
        if self.prior is not None:
            lines.append("  (calibrated) the judge's own distribution:")
            lines += probability_lines(self.raw or {}, None)
            lines.append("  divided by the content-free prior:")
            lines += probability_lines(self.prior, None)
        return lines

"""The typed record of a DAG walk: the steps taken, the scoring leaves, the soft walks.

Walks build these objects; `to_dict()` (the results file) and `lines()` (`anvil explain`)
are the only places they become dicts or text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anvil_local.judge.results import Usage
from anvil_local.metrics.render import probability_lines
from anvil_local.metrics.result import MetricResult, Trace


@dataclass(frozen=True)
class TaskStep:
    """A task node's output on the walk."""

    node: str
    question: str
    output_label: str
    output: str | None
    usage: Usage
    seconds: float
    truncated: bool = False  # the token budget cut the output

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "node": self.node,
            "type": "task",
            "question": self.question,
            "output_label": self.output_label,
            "output": self.output,
        }
        if self.truncated:
            data["truncated"] = True
        data.update(tokens=self.usage.to_dict(), seconds=round(self.seconds, 4))
        return data

    def summary(self) -> str:
        """One line for the reason prompt."""
        return f"- {self.output_label}: {self.output}"

    def lines(self) -> list[str]:
        cut = " (cut by its token budget)" if self.truncated else ""
        return [f"  - [{self.node}] {self.output_label}: {self.output}{cut}"]


@dataclass(frozen=True)
class ChoiceStep:
    """A judgement node's verdict on the walk, with the probability of every option."""

    node: str
    step_type: str  # "binary" or "choice" (the node type's name for it)
    headline: str  # the criteria's first line
    question: str
    verdict: str
    probabilities: dict[str, float]
    usage: Usage
    seconds: float
    decoded: str | None = None  # a grammar-constrained greedy decode's answer, when asked
    value: Any = None  # the value a code node computed
    raw: dict[str, float] | None = None  # contextual calibration: the judge's own distribution
    prior: dict[str, float] | None = None  # ... and the content-free prior divided out

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "node": self.node,
            "type": self.step_type,
            "question": self.question,
            "verdict": self.verdict,
            "probabilities": self.probabilities,
        }
        if self.prior is not None:
            data.update(uncalibrated=self.raw, prior=self.prior)
        if self.decoded is not None:
            data["decoded"] = self.decoded
        if self.value is not None:
            data["value"] = self.value
        data.update(tokens=self.usage.to_dict(), seconds=round(self.seconds, 4))
        return data

    def summary(self) -> str:
        return f"- {self.headline} -> {self.verdict}"

    def lines(self) -> list[str]:
        lines = [f"  - [{self.node}] {self.headline} -> {self.verdict}"]
        if self.value is not None:
            lines.append(f"     computed value: {self.value}")
            return lines
        lines += probability_lines(self.probabilities, self.verdict)
        if self.prior is not None:
            lines.append("     (calibrated) the judge's own distribution:")
            lines += probability_lines(self.raw or {})
            lines.append("     divided by the content-free prior:")
            lines += probability_lines(self.prior)
        if self.decoded is not None:
            agree = "agrees" if self.decoded == self.verdict else "DIFFERS"
            lines.append(f"     grammar-constrained greedy decode: {self.decoded!r} ({agree})")
        return lines


Step = TaskStep | ChoiceStep


@dataclass(frozen=True)
class Leaf:
    """A scoring verdict that fired: its score (0..1), from a metric when one hangs there."""

    node: str
    verdict: str | bool
    score: float
    metric: MetricResult | None = None

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"node": self.node, "verdict": self.verdict, "score": self.score}
        if self.metric is not None:
            data["metric"] = {
                "metric": self.metric.metric,
                "score": self.metric.score,
                "trace": self.metric.trace.to_dict(),
            }
        return data

    def lines(self) -> list[str]:
        source = f" from {self.metric.metric}" if self.metric is not None else ""
        return [f"  = [{self.node}] verdict {self.verdict!r}: score {self.score:.3f}{source}"]


@dataclass(frozen=True)
class WalkSummary:
    """One walk of a soft evaluation: its verdicts, probability and score."""

    verdicts: list[str]
    probability: float
    score: float | None  # None: the walk reached no scoring verdict

    def to_dict(self) -> dict[str, Any]:
        return {"verdicts": self.verdicts, "probability": self.probability, "score": self.score}


@dataclass
class DagTrace(Trace):
    path: list[Step]
    leaves: list[Leaf]
    path_probability: float
    soft: bool = False
    expected_score: float | None = None
    explored_mass: float | None = None
    walks: list[WalkSummary] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "type": "dag",
            "path": [step.to_dict() for step in self.path],
            "leaves": [leaf.to_dict() for leaf in self.leaves],
            "path_probability": self.path_probability,
        }
        if len(self.leaves) > 1:
            data["combine"] = "min"
        if self.soft:
            data["expected_score"] = self.expected_score
            data["explored_mass"] = self.explored_mass
            data["walks"] = [w.to_dict() for w in self.walks]
        return data

    def lines(self) -> list[str]:
        lines = [f"  path (probability {self.path_probability:.3f}):"]
        for step in self.path:
            lines += step.lines()
        for leaf in self.leaves:
            lines += leaf.lines()
        if len(self.leaves) > 1:
            lines.append("  (several scoring verdicts fired: the lowest counts)")
        if not self.leaves:
            lines.append("  (no scoring verdict reached: no score)")
        if self.soft:
            expected = "none" if self.expected_score is None else f"{self.expected_score:.3f}"
            lines.append(
                f"  expected score {expected} over {len(self.walks)} walks "
                f"(mass explored {self.explored_mass:.3f}):"
            )
            lines += [
                f"   p={w.probability:.3f} score "
                f"{'none' if w.score is None else format(w.score, '.3f')}: "
                f"{', '.join(w.verdicts)}"
                for w in self.walks
            ]
        return lines

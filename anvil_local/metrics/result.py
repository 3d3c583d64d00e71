"""MetricResult and the trace record every metric kind fills (typed until the output edge)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anvil_local.judge.results import Usage


class Trace:
    """How a score came about. Each metric kind has its own record; `to_dict()` is what a
    results file holds and `lines()` what `anvil explain` shows."""

    def to_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def lines(self) -> list[str]:
        return []

    def get(self, key: str, default: Any = None) -> Any:
        """One field of the written form (for readers of old and new results alike)."""
        return self.to_dict().get(key, default)


@dataclass
class RawTrace(Trace):
    """A trace as read back from a results file or the cache, or a custom metric's dict."""

    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return self.data


@dataclass
class MetricResult:
    """One metric on one case. A judge failure is an error, never a low score."""

    metric: str
    score: float | None
    success: bool | None
    threshold: float
    reason: str | None = None
    trace: Trace = field(default_factory=RawTrace)
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    error: str | None = None
    raw_score: float | None = None  # the score before a fitted calibration map, if one applied
    confidence: float | None = None  # how sure the verdict is, when the run abstains (abstain.py)
    uncertain: bool = False  # below the run's confidence level: success is the policy's

    def __post_init__(self) -> None:
        if isinstance(self.trace, dict):
            self.trace = RawTrace(self.trace)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"metric": self.metric, "score": self.score}
        if self.raw_score is not None:
            data["raw_score"] = self.raw_score
        data.update(
            success=self.success,
            threshold=self.threshold,
            reason=self.reason,
            trace=self.trace.to_dict(),
            tokens=self.usage.to_dict(),
            seconds=round(self.seconds, 4),
            error=self.error,
        )
        if self.confidence is not None:
            data["confidence"] = self.confidence
        if self.uncertain:
            data["uncertain"] = True
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricResult:
        """A result as written by `to_dict` (its trace kept as written)."""
        tokens = data.get("tokens") or {}
        return cls(
            metric=data["metric"],
            score=data.get("score"),
            success=data.get("success"),
            threshold=data.get("threshold", 0.5),
            reason=data.get("reason"),
            trace=RawTrace(data.get("trace") or {}),
            usage=Usage(**{k: int(v) for k, v in tokens.items()}),
            seconds=float(data.get("seconds") or 0.0),
            error=data.get("error"),
            raw_score=data.get("raw_score"),
            confidence=data.get("confidence"),
            uncertain=bool(data.get("uncertain", False)),
        )

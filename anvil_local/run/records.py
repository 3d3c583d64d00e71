"""Result lines and the aggregates computed from them (plain functions of the results)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from anvil_local.errors import DataError
from anvil_local.judge.results import Usage
from anvil_local.metrics.result import MetricResult


@dataclass
class ResultLine:
    """One (case, metric) outcome as written to the results file."""

    position: int
    case_id: str
    result: MetricResult
    model: str
    model_sha256: str
    cached: bool = False
    resumed: bool = False  # read back from the results file, not judged in this run
    doc: str | None = None  # the case's source document, when it names one (`doc`)

    @property
    def metric(self) -> str:
        return self.result.metric

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"position": self.position, "case_id": self.case_id}
        if self.doc is not None:
            data["doc"] = self.doc
        data.update(self.result.to_dict())
        data.update(model=self.model, model_sha256=self.model_sha256, cached=self.cached)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultLine:
        """A line as `to_dict` wrote it; the metadata line (`run/meta.py`) is refused by name,
        so a reader that forgot to skip it fails in one clear line."""
        if "meta" in data:
            raise DataError("a results file's metadata line, not a result line")
        doc = data.get("doc")
        return cls(
            position=int(data["position"]),
            case_id=str(data["case_id"]),
            result=MetricResult.from_dict(data),
            model=data.get("model", ""),
            model_sha256=data.get("model_sha256", ""),
            cached=bool(data.get("cached", False)),
            doc=None if doc is None else str(doc),
        )


@dataclass
class MetricSummary:
    metric: str
    cases: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    uncertain: int = 0  # verdicts below the run's confidence level (counted by its policy too)
    score_sum: float = 0.0
    seconds: float = 0.0
    timed: int = 0  # cases judged (not served from the cache)

    @property
    def pass_rate(self) -> float | None:
        scored = self.passed + self.failed
        return self.passed / scored if scored else None

    @property
    def mean_score(self) -> float | None:
        scored = self.passed + self.failed
        return self.score_sum / scored if scored else None

    @property
    def seconds_per_case(self) -> float | None:
        return self.seconds / self.timed if self.timed else None


@dataclass
class EvaluationResult:
    """Everything a run produced: its lines, and what it skipped or reused."""

    lines: list[ResultLine] = field(default_factory=list)
    resumed: int = 0  # pairs already in the output file, not run again
    interrupted: bool = False
    wall_seconds: float = 0.0

    @property
    def cached(self) -> int:
        """Pairs served from the cache in this run (not those read back from the file)."""
        return sum(1 for line in self.lines if line.cached and not line.resumed)

    @property
    def usage(self) -> Usage:
        total = Usage()
        for line in self.lines:
            if not (line.cached or line.resumed):
                total = total + line.result.usage
        return total

    @property
    def failed(self) -> list[ResultLine]:
        return [line for line in self.lines if line.result.success is not True]

    @property
    def all_passed(self) -> bool:
        return not self.failed

    def summaries(self) -> list[MetricSummary]:
        by_metric: dict[str, MetricSummary] = {}
        for line in self.lines:
            summary = by_metric.setdefault(line.metric, MetricSummary(line.metric))
            summary.cases += 1
            if not line.cached:
                summary.seconds += line.result.seconds
                summary.timed += 1
            result = line.result
            if result.error is not None:
                summary.errors += 1
                continue
            summary.uncertain += result.uncertain
            if result.success is None:  # an uncertain verdict counted as none
                continue
            if result.success:
                summary.passed += 1
            else:
                summary.failed += 1
            summary.score_sum += result.score or 0.0
        return list(by_metric.values())

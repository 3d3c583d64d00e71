"""Two results files in, one `Comparison` out: read, pair, check what differed, then the
statistics of each metric and the gate's decision."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anvil_local.comparison.paired import MetricComparison, compare_metric
from anvil_local.comparison.provenance import (
    METRIC_FLAG,
    MODEL_FLAG,
    Difference,
    differences,
    metadata_rows,
    refuse,
)
from anvil_local.errors import DataError
from anvil_local.run.pairs import Paired, pair_results
from anvil_local.run.results import ResultsFile, read_results


@dataclass
class Comparison:
    """BASE against NEW: per metric statistics, what differed, and the gate."""

    base: ResultsFile
    new: ResultsFile
    metrics: list[MetricComparison]
    differences: list[Difference]
    tolerance: float = 0.0
    fail_on_flip: bool = False
    not_compared: list[str] = field(default_factory=list)  # metrics one side lacks

    @property
    def worse(self) -> list[MetricComparison]:
        return [m for m in self.metrics if m.worse(self.tolerance)]

    @property
    def flipped_to_fail(self) -> int:
        return sum(len(m.to_fail) for m in self.metrics)

    @property
    def failed(self) -> bool:
        """The gate: a metric confidently worse beyond the tolerance, or (with
        --fail-on-flip) a case that flipped to fail."""
        return bool(self.worse) or (self.fail_on_flip and self.flipped_to_fail > 0)

    def reasons(self) -> list[str]:
        found = [
            f"{m.metric}: {m.difference.value:+.3f} [{m.difference.low:+.3f}, "
            f"{m.difference.high:+.3f}], wholly below {-self.tolerance if self.tolerance else 0:g}"
            for m in self.worse
        ]
        if self.fail_on_flip and self.flipped_to_fail:
            found.append(f"{self.flipped_to_fail} cases flipped to fail (--fail-on-flip)")
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "base": str(self.base.path),
            "new": str(self.new.path),
            "failed": self.failed,
            "reasons": self.reasons(),
            "tolerance": self.tolerance,
            "fail_on_flip": self.fail_on_flip,
            "confidence": 0.95,
            "metrics": [m.to_dict(self.tolerance) for m in self.metrics],
            "differences": [d.to_dict() for d in self.differences],
            "not_compared": self.not_compared,
            "metadata": [
                {"field": name, "base": before, "new": after}
                for name, before, after in metadata_rows(self.base, self.new)
            ],
        }


def compare_files(
    base_path: str | Path,
    new_path: str | Path,
    *,
    tolerance: float = 0.0,
    fail_on_flip: bool = False,
    renames: Mapping[str, str] | None = None,
    allow_model_change: bool = False,
    allow_metric_change: bool = False,
) -> Comparison:
    """Compare NEW with BASE; a DataError when they cannot be compared as asked."""
    if tolerance < 0:
        raise DataError(f"the tolerance is a score difference of 0 or more, got {tolerance}")
    renames = dict(renames or {})
    base, new = read_results(base_path), read_results(new_path)
    rows = pair_results([base, new], renames)
    by_metric: dict[str, list[Paired]] = {}
    for row in rows:
        by_metric.setdefault(row.metric, []).append(row)
    compared, not_compared = [], []
    for metric, metric_rows in by_metric.items():
        in_base = any(row.lines[0] is not None for row in metric_rows)
        in_new = any(row.lines[1] is not None for row in metric_rows)
        if in_base and in_new:
            compared.append((metric, renames.get(metric, metric), metric_rows))
        else:
            side = "BASE" if in_base else "NEW"
            not_compared.append(f"{renames.get(metric, metric)} (only in {side})")
    found = differences(base, new, [(m, n) for m, n, _ in compared])
    allowed = {MODEL_FLAG} if allow_model_change else set()
    if allow_metric_change:
        allowed.add(METRIC_FLAG)
    refuse(found, allowed)
    metrics = [compare_metric(m, n, metric_rows) for m, n, metric_rows in compared]
    if not any(m.cases for m in metrics) and not any(m.to_fail or m.to_pass for m in metrics):
        raise DataError(
            f"{base.path} and {new.path} have no (case, metric) scored in both; are they "
            "results of the same cases and metrics? (--pair BASE=NEW pairs renamed metrics)"
        )
    return Comparison(base, new, metrics, found, tolerance, fail_on_flip, not_compared)

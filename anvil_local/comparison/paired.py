"""One metric in two runs, case by case: means, the paired difference with a bootstrap
interval, pass rates and the cases that flipped.

Only cases scored on both sides enter the means and the difference (an error is no score,
as in `anvil eval`'s summary); a case that passed in BASE and errors in NEW still counts as
flipped to fail. The interval resamples documents when the cases name one (`doc`), since
summaries of one article are not independent, else cases (`anvil bench`'s bootstrap: fixed
seed, 1000 resamples, 95% percentile interval).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anvil_local.bench import stats
from anvil_local.run.pairs import Paired
from anvil_local.run.records import ResultLine
from anvil_local.run.why import why

PASS, FAIL, ERROR = "pass", "fail", "error"


def status(line: ResultLine) -> str:
    if line.result.error is not None or line.result.score is None:
        return ERROR
    return PASS if line.result.success else FAIL


@dataclass(frozen=True)
class Flip:
    """A case whose verdict changed between the runs, and why each run said what it did."""

    case_id: str
    base_status: str
    new_status: str
    base_score: float | None
    new_score: float | None
    base_why: str
    new_why: str

    @property
    def change(self) -> float | None:
        if self.base_score is None or self.new_score is None:
            return None
        return self.new_score - self.base_score

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "base": {"status": self.base_status, "score": self.base_score, "why": self.base_why},
            "new": {"status": self.new_status, "score": self.new_score, "why": self.new_why},
            "change": _clean(self.change),
        }


@dataclass
class MetricComparison:
    """One metric: BASE and NEW on the cases both scored."""

    metric: str  # as BASE names it
    new_metric: str  # as NEW names it (differs under --pair)
    cases: int  # scored on both sides
    base_mean: float
    new_mean: float
    difference: stats.Estimate  # NEW - BASE, mean over cases
    resampled: str  # "documents" or "cases"
    units: int  # documents (or cases) the bootstrap drew from
    base_pass_rate: float
    new_pass_rate: float
    to_fail: list[Flip] = field(default_factory=list)  # worst first
    to_pass: list[Flip] = field(default_factory=list)  # largest gain first
    base_errors: int = 0
    new_errors: int = 0
    only_base: int = 0  # cases only BASE has a line for
    only_new: int = 0

    def worse(self, tolerance: float) -> bool:
        """Confidently worse: the whole interval lies below -tolerance."""
        return not math.isnan(self.difference.high) and self.difference.high < -tolerance

    def better(self, tolerance: float) -> bool:
        return not math.isnan(self.difference.low) and self.difference.low > tolerance

    def verdict(self, tolerance: float) -> str:
        if self.cases == 0:
            return "no case in both"
        if self.worse(tolerance):
            return "worse"
        if self.better(tolerance):
            return "better"
        if math.isnan(self.difference.high):
            return "too few to tell"
        return "no clear change"

    def to_dict(self, tolerance: float) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "new_metric": self.new_metric,
            "cases": self.cases,
            "base_mean": _clean(self.base_mean),
            "new_mean": _clean(self.new_mean),
            "difference": self.difference.to_dict(),
            "resampled": self.resampled,
            "units": self.units,
            "base_pass_rate": _clean(self.base_pass_rate),
            "new_pass_rate": _clean(self.new_pass_rate),
            "base_errors": self.base_errors,
            "new_errors": self.new_errors,
            "only_base": self.only_base,
            "only_new": self.only_new,
            "verdict": self.verdict(tolerance),
            "to_fail": [flip.to_dict() for flip in self.to_fail],
            "to_pass": [flip.to_dict() for flip in self.to_pass],
        }


def _clean(value: float | None) -> float | None:
    if value is None or math.isnan(value):
        return None
    return round(float(value), 6)


def _flip(row: Paired, base: ResultLine, new: ResultLine) -> Flip:
    return Flip(
        row.case_id,
        status(base),
        status(new),
        base.result.score if status(base) != ERROR else None,
        new.result.score if status(new) != ERROR else None,
        why(base),
        why(new),
    )


def compare_metric(metric: str, new_metric: str, rows: Sequence[Paired]) -> MetricComparison:
    """The comparison of one metric over its rows (each with a BASE and a NEW slot)."""
    base_scores, new_scores, docs = [], [], []
    base_passed = new_passed = 0
    to_fail: list[Flip] = []
    to_pass: list[Flip] = []
    counts = {"base_errors": 0, "new_errors": 0, "only_base": 0, "only_new": 0}
    with_doc = False
    for row in rows:
        base, new = row.lines[0], row.lines[1]
        if base is None or new is None:
            counts["only_new" if base is None else "only_base"] += 1
            continue
        before, after = status(base), status(new)
        counts["base_errors"] += before == ERROR
        counts["new_errors"] += after == ERROR
        if before == PASS and after != PASS:
            to_fail.append(_flip(row, base, new))
        elif before != PASS and after == PASS:
            to_pass.append(_flip(row, base, new))
        if ERROR in (before, after):
            continue
        base_scores.append(float(base.result.score))  # type: ignore[arg-type]
        new_scores.append(float(new.result.score))  # type: ignore[arg-type]
        docs.append(row.doc)
        with_doc = with_doc or any(line.doc is not None for line in (base, new))
        base_passed += before == PASS
        new_passed += after == PASS
    to_fail.sort(key=lambda f: (f.new_status != ERROR, f.change if f.change is not None else 0))
    to_pass.sort(key=lambda f: -(f.change if f.change is not None else 0))
    n = len(base_scores)
    a, b = np.asarray(base_scores), np.asarray(new_scores)
    groups = stats.doc_groups(docs)
    if n:
        difference = stats.estimate(lambda i: float(np.mean(b[i] - a[i])), groups, n)
    else:
        difference = stats.Estimate(math.nan)
    return MetricComparison(
        metric=metric,
        new_metric=new_metric,
        cases=n,
        base_mean=float(a.mean()) if n else math.nan,
        new_mean=float(b.mean()) if n else math.nan,
        difference=difference,
        resampled="documents" if with_doc else "cases",
        units=len(groups),
        base_pass_rate=base_passed / n if n else math.nan,
        new_pass_rate=new_passed / n if n else math.nan,
        to_fail=to_fail,
        to_pass=to_pass,
        **counts,
    )

"""How far abstaining makes a judge's verdicts trustworthy, on documents it was not fitted on.

For a binary label, each case's verdict (pass/fail at the metric's threshold) is right or
wrong, and comes with a confidence (`metrics.abstain.confidence`). Two readings:

- the **risk-coverage curve**: the accuracy of the verdicts kept when only the most confident
  share of cases is decided (100%, 90%, ..., 20%), pooled over all cases;
- the **fitted level**: on one half of the documents, the lowest confidence level at which the
  verdicts kept reach the target accuracy (at least `MIN_KEPT` of them); applied to the other
  half, and the halves swapped (`stats.folds`), it gives the coverage and the accuracy that
  level reaches on documents it was not chosen on. The level fitted on every case is the one
  to pass to `anvil eval --abstain-below`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anvil_local.bench import stats

#: The shares of cases decided that the risk-coverage curve reports.
COVERAGES = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2)
#: A level must keep at least this many verdicts where it is fitted (fewer say nothing).
MIN_KEPT = 10


@dataclass(frozen=True)
class AbstentionReport:
    """One metric's abstention against one binary label."""

    target: float
    cases: int
    accuracy_all: stats.Estimate  # every verdict kept
    curve: list[tuple[float, float]]  # (share decided, accuracy of the kept verdicts)
    level: float | None  # fitted on every case; None: the target is out of reach
    held_out_coverage: float | None  # the levels fitted on one half, applied to the other
    held_out_accuracy: stats.Estimate | None
    fold_levels: list[float | None] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "cases": self.cases,
            "accuracy_all": self.accuracy_all.to_dict(),
            "curve": [{"coverage": c, "accuracy": round(a, 4)} for c, a in self.curve],
            "level": self.level,
            "fold_levels": self.fold_levels,
            "held_out_coverage": self.held_out_coverage,
            "held_out_accuracy": (
                None if self.held_out_accuracy is None else self.held_out_accuracy.to_dict()
            ),
        }


def risk_coverage(confidence: np.ndarray, correct: np.ndarray) -> list[tuple[float, float]]:
    """Accuracy of the most confident share of cases, for each share in COVERAGES (ties in
    confidence broken by case order, so the curve is deterministic)."""
    order = np.argsort(-confidence, kind="stable")
    curve = []
    for share in COVERAGES:
        kept = max(1, round(share * len(order)))
        curve.append((share, float(np.mean(correct[order[:kept]]))))
    return curve


def fit_level(confidence: np.ndarray, correct: np.ndarray, target: float) -> float | None:
    """The lowest level whose kept verdicts (confidence >= level) are right at least `target`
    of the time, keeping at least MIN_KEPT of them (or all, when fewer); None if none does."""
    need = min(MIN_KEPT, len(confidence))
    for level in np.unique(confidence):  # ascending: the first that reaches keeps the most
        kept = confidence >= level
        if kept.sum() < need:
            break
        if float(np.mean(correct[kept])) >= target:
            return float(level)
    return None


def report(
    confidence: np.ndarray, correct: np.ndarray, docs: Sequence[str], target: float
) -> AbstentionReport:
    """The curve, the level fitted on every case, and the levels fitted on one half of the
    documents measured on the other."""
    n = len(confidence)
    groups = stats.doc_groups(docs)
    accuracy_all = stats.estimate(lambda i: float(np.mean(correct[i])), groups, n)
    fold = stats.folds(docs)
    decided = np.zeros(n, dtype=bool)
    fold_levels: list[float | None] = []
    split = len(set(fold.tolist())) == 2
    if split:
        for k in (0, 1):
            train, test = fold != k, fold == k
            level = fit_level(confidence[train], correct[train], target)
            fold_levels.append(level)
            if level is not None:
                decided[test] = confidence[test] >= level
    coverage = float(decided.mean()) if split else None
    held_out = None
    if split and decided.any():

        def kept_accuracy(i: np.ndarray) -> float:
            mask = decided[i]
            return float(np.mean(correct[i][mask])) if mask.any() else math.nan

        held_out = stats.estimate(kept_accuracy, groups, n)
    return AbstentionReport(
        target=target,
        cases=n,
        accuracy_all=accuracy_all,
        curve=risk_coverage(confidence, correct),
        level=fit_level(confidence, correct, target),
        held_out_coverage=coverage,
        held_out_accuracy=held_out,
        fold_levels=fold_levels,
    )


def markdown(rows: Sequence[tuple[str, str, str, AbstentionReport]]) -> str:
    """(model, metric, label, report) rows as two tables: the fitted levels, then the curve."""
    if not rows:
        return ""
    target = rows[0][3].target
    lines = [
        f"Abstention (target accuracy {target:.0%} on the verdicts kept; each level fitted on "
        "half the documents and measured on the other half):",
        "",
        "| model | metric | label | cases | accuracy, all kept | level (all cases) "
        "| held out: decided | held out: accuracy |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for model, metric, label, r in rows:
        level = "out of reach" if r.level is None else f"{r.level:.3f}"
        coverage = "-" if r.held_out_coverage is None else f"{r.held_out_coverage:.0%}"
        held = "-" if r.held_out_accuracy is None else r.held_out_accuracy.text()
        lines.append(
            f"| {model} | {metric} | {label} | {r.cases} | {r.accuracy_all.text()} | {level} "
            f"| {coverage} | {held} |"
        )
    lines += [
        "",
        "Risk-coverage (accuracy of the verdicts kept when only the most confident share is "
        "decided):",
        "",
        "| model | metric | " + " | ".join(f"{c:.0%}" for c in COVERAGES) + " |",
        "|---|---|" + "---|" * len(COVERAGES),
    ]
    for model, metric, _, r in rows:
        cells = " | ".join(f"{a:.3f}" for _, a in r.curve)
        lines.append(f"| {model} | {metric} | {cells} |")
    return "\n".join(lines) + "\n"

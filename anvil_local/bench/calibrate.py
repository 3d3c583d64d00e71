"""`anvil bench --fit-calibration`: fit a monotone score -> label map on one split of the
labelled cases, and show what it changes on the other.

The cases are split by document (`stats.folds`: documents in sorted order alternate), so no
document is in both. The map is fitted on fold 0 with centred isotonic regression (`fit_map`)
and checked on fold 1 against the raw score:

- binary labels: the map gives P(pass) with both classes weighted equally, so the metric's
  threshold of 0.5 is the cut that balances the two kinds of error; the check reports balanced
  accuracy at the metric's threshold, AUROC and expected calibration error;
- graded labels: the map gives the label rescaled to 0..1 (lowest label 0, highest 1); the
  check reports Spearman and the mean absolute error against the rescaled label.

The map written into the metric file is exactly the one checked (fitted on fold 0 only).

A features metric (`metrics.features`) gets a head instead of a map (`bench.fit`: logistic or
linear over its readings, its setting chosen by cross-validation within fold 0), checked the
same way against the metric's raw score (the mean of its readings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from anvil_local.bench import stats
from anvil_local.errors import DataError
from anvil_local.metrics.calibration import ScoreMap
from anvil_local.metrics.heads import Head

FIT_FOLD, CHECK_FOLD = 0, 1


@dataclass
class CalibrationFit:
    """One metric's fitted map on one model, and its before/after on the check fold."""

    model: str
    metric: str
    label: str
    kind: str  # binary | graded
    fit_cases: int
    check_cases: int
    entry: ScoreMap | Head
    before: dict[str, stats.Estimate]
    after: dict[str, stats.Estimate]
    headline: str  # the statistic whose change is `difference`
    difference: stats.Estimate  # after - before on the check fold, paired by document

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "metric": self.metric,
            "label": self.label,
            "kind": self.kind,
            "fit_cases": self.fit_cases,
            "check_cases": self.check_cases,
            "map": self.entry.to_dict(),
            "before": {k: v.to_dict() for k, v in self.before.items()},
            "after": {k: v.to_dict() for k, v in self.after.items()},
            "headline": self.headline,
            "difference_after_minus_before": self.difference.to_dict(),
        }


def fit_map(score: np.ndarray, target: np.ndarray, binary: bool) -> tuple[list, list]:
    """Centred isotonic regression (Oron and Flournoy 2017): the isotonic (non-decreasing)
    fit of target on score, each of its flat blocks reduced to one point at the block's mean
    score, joined by straight lines. Unlike the step function of plain isotonic regression it
    is strictly increasing between the first and last points, so it keeps the order of the
    scores (and AUROC, Spearman) there. Binary targets weight each class by 1 / its count."""
    from sklearn.isotonic import IsotonicRegression

    weights = np.ones(len(target))
    if binary:
        positives = float(target.sum())
        negatives = float(len(target) - positives)
        if positives == 0 or negatives == 0:
            raise DataError("the fit split holds only one class; nothing to calibrate")
        weights = np.where(target == 1, 0.5 / positives, 0.5 / negatives)
    model = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True)
    fitted = model.fit_transform(score, target, sample_weight=weights)
    scores, values = [], []
    for level in np.unique(fitted):
        block = fitted == level
        centre = float(np.average(score[block], weights=weights[block]))
        scores.append(round(centre, 6))
        values.append(round(float(level), 6))
    return scores, values


def rescale(human: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return (human - lo) / (hi - lo)


def fit_calibration(
    *,
    model: str,
    sha256: str,
    metric: str,
    label: str,
    kind: str,
    raw: np.ndarray,
    human: np.ndarray,
    docs: Sequence[str],
    threshold: float,
    label_range: tuple[float, float],
    source: str,
    features: tuple[list[str], np.ndarray] | None = None,
) -> CalibrationFit:
    """Fit on fold 0, check on fold 1 (both by document); with `features` (their names and
    the cases x features matrix), a head over them instead of a map of `raw`."""
    fold = stats.folds(docs)
    fit, check = fold == FIT_FOLD, fold == CHECK_FOLD
    if fit.sum() < 2 or check.sum() < 2:
        raise DataError(
            f"{metric}: --fit-calibration needs cases from at least two documents "
            "(one split to fit, one to check)"
        )
    binary = kind == "binary"
    lo, hi = label_range
    if not binary and hi <= lo:
        raise DataError(f"{metric}: every {label} label is the same; nothing to calibrate")
    target = human if binary else rescale(human, lo, hi)
    n_docs = len({d for d, f in zip(docs, fit, strict=True) if f})
    fitted_on = f"{source}: {int(fit.sum())} cases of {n_docs} documents (fold 0 of 2)"
    check_docs = [d for d, c in zip(docs, check, strict=True) if c]
    before_score = raw[check]
    entry: ScoreMap | Head
    if features is not None:
        from anvil_local.bench.fit import as_head, state_columns
        from anvil_local.bench.fit import fit as fit_head

        names, matrix = features
        fit_docs = [d for d, f in zip(docs, fit, strict=True) if f]
        if len(np.unique(target[fit])) < 2:
            raise DataError(f"{metric} on {model}: the fit split holds one label only")
        state = state_columns(names)  # a hidden state is projected first, as `anvil fit` does
        pipeline, _ = fit_head(matrix[fit], target[fit], fit_docs, binary, state)
        entry = as_head(pipeline, names, binary, sha256, label, fitted_on)
        after_score = np.asarray([entry.score(row) for row in matrix[check]])
    else:
        try:
            scores, values = fit_map(raw[fit], target[fit], binary)
        except DataError as exc:
            raise DataError(f"{metric} on {model}: {exc}") from exc
        entry = ScoreMap(tuple(scores), tuple(values), sha256, label=label, fitted_on=fitted_on)
        after_score = np.asarray([entry.apply(x) for x in before_score])
    truth = target[check]
    if binary:
        headline = "balanced_accuracy"
        before = _binary(before_score, truth, check_docs, threshold)
        after = _binary(after_score, truth, check_docs, threshold)
        stat_before = _bal_acc(before_score, truth, threshold)
        stat_after = _bal_acc(after_score, truth, threshold)
    else:
        headline = "mae"
        before = _graded(before_score, truth, check_docs)
        after = _graded(after_score, truth, check_docs)

        def stat_before(i: np.ndarray) -> float:
            return float(np.mean(np.abs(before_score[i] - truth[i])))

        def stat_after(i: np.ndarray) -> float:
            return float(np.mean(np.abs(after_score[i] - truth[i])))

    difference = stats.paired_difference(stat_before, stat_after, check_docs, len(truth))
    return CalibrationFit(
        model,
        metric,
        label,
        kind,
        int(fit.sum()),
        int(check.sum()),
        entry,
        before,
        after,
        headline,
        difference,
    )


def _bal_acc(score: np.ndarray, truth: np.ndarray, threshold: float):
    passed = (score >= threshold).astype(int)
    label = truth.astype(int)
    return lambda i: stats.balanced_accuracy(passed[i], label[i])


def _binary(score: np.ndarray, truth: np.ndarray, docs: Sequence[str], threshold: float):
    groups = stats.doc_groups(docs)
    n = len(score)
    label = truth.astype(int)
    out = {
        "balanced_accuracy": stats.estimate(_bal_acc(score, truth, threshold), groups, n),
        "auroc": stats.estimate(lambda i: stats.auroc(score[i], label[i]), groups, n),
    }
    if np.all((score >= 0) & (score <= 1)):
        out["ece"] = stats.estimate(lambda i: stats.calibration(score[i], label[i])[0], groups, n)
    return out


def _graded(score: np.ndarray, truth: np.ndarray, docs: Sequence[str]):
    groups = stats.doc_groups(docs)
    n = len(score)
    out = {
        "spearman": stats.estimate(
            lambda i: stats.correlation("spearman", score[i], truth[i]), groups, n
        ),
        "mae": stats.estimate(lambda i: float(np.mean(np.abs(score[i] - truth[i]))), groups, n),
    }
    return out


def markdown(fits: Sequence[CalibrationFit]) -> str:
    """The before/after table of every fitted map."""
    if not fits:
        return ""
    lines = [
        f"Fitted calibration: each map is fitted on fold {FIT_FOLD} and checked on fold "
        f"{CHECK_FOLD} (documents "
        "alternate between the folds). Binary labels: balanced accuracy at the metric's "
        "threshold, AUROC, expected calibration error. Graded labels: Spearman, and the mean "
        "absolute error against the label rescaled to 0..1.",
        "",
        "| model | metric | label | fit / check cases | statistic | before | after "
        "| after - before |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fit in fits:
        for name in fit.before:
            change = fit.difference.text() if name == fit.headline else ""
            lines.append(
                f"| {fit.model} | {fit.metric} | {fit.label} | {fit.fit_cases} / "
                f"{fit.check_cases} | {name} | {fit.before[name].text()} | "
                f"{fit.after[name].text()} | {change} |"
            )
    return "\n".join(lines) + "\n"

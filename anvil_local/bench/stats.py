"""Agreement between judge scores and human labels: plain functions over arrays, no I/O.

Correlations and the bootstrap come from scipy.stats, classification scores from scikit-learn;
this module only decides what is compared with what:

- graded labels: Spearman, Kendall tau-b and Pearson, pooled over all cases and per document
  (the G-Eval paper's protocol: one correlation per document, averaged; documents whose labels
  or scores are constant have no correlation and are skipped and counted);
- binary labels: AUROC of the continuous score; balanced accuracy and Cohen's kappa at the
  metric's own threshold and at a threshold chosen on the other half of the documents (two
  folds, so no case is scored with a threshold fitted on it); calibration of the score read
  as the probability of label 1 (expected calibration error and a reliability table);
- 95% intervals from a bootstrap that resamples documents (fixed seed), and paired
  differences between two metrics over the same resampled documents.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

SEED = 20261130
RESAMPLES = 1000

Stat = Callable[[np.ndarray], float]  # case indices -> statistic


@dataclass(frozen=True)
class Estimate:
    """A statistic with its 95% bootstrap interval (nan where undefined)."""

    value: float
    low: float = math.nan
    high: float = math.nan

    def to_dict(self) -> dict[str, float | None]:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else round(float(x), 4)

        return {"value": clean(self.value), "low": clean(self.low), "high": clean(self.high)}

    def text(self) -> str:
        """ "0.412 [0.31, 0.52]", the value alone without an interval, "-" when undefined."""
        if math.isnan(self.value):
            return "-"
        if math.isnan(self.low):
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.2f}, {self.high:.2f}]"


def _quiet(fn: Callable[[], float]) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns nan
        value = fn()
    return float(value) if value is not None else math.nan


def correlation(kind: str, x: np.ndarray, y: np.ndarray) -> float:
    """Spearman, Kendall tau-b or Pearson; nan when either side is constant or too short."""
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    if kind == "spearman":
        return _quiet(lambda: stats.spearmanr(x, y).statistic)
    if kind == "kendall":
        return _quiet(lambda: stats.kendalltau(x, y, variant="b").statistic)
    if kind == "pearson":
        return _quiet(lambda: stats.pearsonr(x, y).statistic)
    raise ValueError(f"unknown correlation {kind!r}")


def doc_groups(docs: Sequence[str]) -> list[np.ndarray]:
    """Case indices per document, documents in order of first appearance."""
    order: dict[str, list[int]] = {}
    for index, doc in enumerate(docs):
        order.setdefault(doc, []).append(index)
    return [np.asarray(v) for v in order.values()]


def per_document(
    kind: str, x: np.ndarray, y: np.ndarray, groups: Sequence[np.ndarray]
) -> tuple[float, int, int]:
    """(mean of per-document correlations, documents used, documents skipped)."""
    values = [correlation(kind, x[g], y[g]) for g in groups]
    used = [v for v in values if not math.isnan(v)]
    mean = float(np.mean(used)) if used else math.nan
    return mean, len(used), len(values) - len(used)


def bootstrap(
    statistic: Stat, groups: Sequence[np.ndarray], seed: int = SEED, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """95% percentile interval of `statistic` over resampled documents (whole documents are
    drawn with replacement; a resample keeps every case of each drawn document)."""
    if len(groups) < 2:
        return math.nan, math.nan

    def over_docs(doc_indices: np.ndarray) -> float:
        cases = np.concatenate([groups[int(d)] for d in doc_indices])
        return statistic(cases)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples are handled below
        result = stats.bootstrap(
            (np.arange(len(groups)),),
            over_docs,
            vectorized=False,
            n_resamples=resamples,
            method="percentile",
            random_state=np.random.default_rng(seed),
        )
    values = np.asarray(result.bootstrap_distribution, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < resamples // 2:  # mostly undefined: no honest interval
        return math.nan, math.nan
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def estimate(statistic: Stat, groups: Sequence[np.ndarray], n: int) -> Estimate:
    value = statistic(np.arange(n))
    low, high = bootstrap(statistic, groups)
    return Estimate(value, low, high)


# -- graded labels ------------------------------------------------------------------------


def document_mean(
    kind: str, pred: np.ndarray, human: np.ndarray, groups: Sequence[np.ndarray]
) -> Stat:
    """The per-document mean correlation as a statistic of resampled case indices. Per-document
    values do not change under resampling, so a resample is a weighted mean of them (a
    document drawn twice counts twice)."""
    by_first = {int(g[0]): correlation(kind, pred[g], human[g]) for g in groups}

    def stat(i: np.ndarray) -> float:
        vals = [by_first[int(c)] for c in i if int(c) in by_first]
        vals = [v for v in vals if not math.isnan(v)]
        return float(np.mean(vals)) if vals else math.nan

    return stat


def graded(pred: np.ndarray, human: np.ndarray, docs: Sequence[str]) -> dict:
    """Pooled and per-document correlations with intervals."""
    groups = doc_groups(docs)
    out: dict = {}
    for kind in ("spearman", "kendall", "pearson"):
        out[kind] = estimate(lambda i, k=kind: correlation(k, pred[i], human[i]), groups, len(pred))

    for kind in ("spearman", "kendall", "pearson"):
        mean, used, skipped = per_document(kind, pred, human, groups)
        doc_mean = document_mean(kind, pred, human, groups)
        low, high = bootstrap(doc_mean, groups)
        out[f"doc_{kind}"] = Estimate(mean, low, high)
        out["docs_used"], out["docs_skipped"] = used, skipped
    return out


# -- binary labels -------------------------------------------------------------------------


def auroc(score: np.ndarray, label: np.ndarray) -> float:
    """Area under the ROC curve (ties count half); nan with a single class. The Mann-Whitney
    form (average ranks), the same number as scikit-learn's roc_auc_score, computed directly:
    a bootstrap asks for it thousands of times."""
    positive = np.asarray(label) == 1
    n_pos = int(positive.sum())
    n_neg = len(positive) - n_pos
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks = stats.rankdata(score)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def balanced_accuracy(pred: np.ndarray, label: np.ndarray) -> float:
    """The mean of the two classes' recalls (labels 0 and 1); nan with a single class."""
    label = np.asarray(label)
    positive, negative = label == 1, label == 0
    if not positive.any() or not negative.any():
        return math.nan
    pred = np.asarray(pred)
    return float(((pred[positive] == 1).mean() + (pred[negative] == 0).mean()) / 2)


def kappa(pred: np.ndarray, label: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score

    return _quiet(lambda: cohen_kappa_score(label, pred))


def choose_threshold(score: np.ndarray, label: np.ndarray) -> float:
    """The cut (pass when score >= cut) with the best balanced accuracy on these cases;
    candidates are midpoints between distinct scores; ties go to the lowest cut."""
    values = np.unique(score)
    if len(values) == 1:
        return float(values[0])
    candidates = np.concatenate([[values[0]], (values[:-1] + values[1:]) / 2])
    best, best_cut = -1.0, float(candidates[0])
    for cut in candidates:
        value = balanced_accuracy((score >= cut).astype(int), label)
        if not math.isnan(value) and value > best + 1e-12:
            best, best_cut = value, float(cut)
    return best_cut


def folds(docs: Sequence[str]) -> np.ndarray:
    """Fold 0 or 1 per case: documents in sorted order alternate between the two folds, so a
    document's cases are always in the same fold."""
    names = sorted(set(docs))
    fold_of = {doc: i % 2 for i, doc in enumerate(names)}
    return np.asarray([fold_of[d] for d in docs])


def cross_fitted_predictions(score: np.ndarray, label: np.ndarray, docs: Sequence[str]):
    """Pass/fail per case with the threshold chosen on the other fold; (predictions, the two
    thresholds)."""
    fold = folds(docs)
    pred = np.zeros(len(score), dtype=int)
    cuts = []
    for k in (0, 1):
        train, test = fold != k, fold == k
        if not train.any() or not test.any():
            return None, []
        cut = choose_threshold(score[train], label[train])
        cuts.append(cut)
        pred[test] = (score[test] >= cut).astype(int)
    return pred, cuts


def calibration(prob: np.ndarray, label: np.ndarray, bins: int = 10) -> tuple[float, list[dict]]:
    """Expected calibration error over equal-width bins, and the reliability table."""
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(prob, edges[1:-1], right=False), 0, bins - 1)
    table, ece = [], 0.0
    for b in range(bins):
        mask = which == b
        if not mask.any():
            continue
        confidence, observed = float(prob[mask].mean()), float(label[mask].mean())
        ece += mask.sum() / len(prob) * abs(confidence - observed)
        table.append(
            {
                "bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}",
                "cases": int(mask.sum()),
                "mean_probability": round(confidence, 4),
                "observed_rate": round(observed, 4),
            }
        )
    return float(ece), table


def binary(score: np.ndarray, label: np.ndarray, docs: Sequence[str], threshold: float) -> dict:
    """AUROC, accuracy measures at the metric's threshold and cross-fitted, calibration."""
    groups = doc_groups(docs)
    n = len(score)
    label = label.astype(int)
    own = (score >= threshold).astype(int)
    out: dict = {
        "auroc": estimate(lambda i: auroc(score[i], label[i]), groups, n),
        "balanced_accuracy": estimate(lambda i: balanced_accuracy(own[i], label[i]), groups, n),
        "kappa": estimate(lambda i: kappa(own[i], label[i]), groups, n),
        "positive_rate": float(label.mean()),
        "predicted_positive_rate": float(own.mean()),
    }
    fitted, cuts = cross_fitted_predictions(score, label, docs)
    if fitted is not None:
        out["balanced_accuracy_fitted"] = estimate(
            lambda i: balanced_accuracy(fitted[i], label[i]), groups, n
        )
        out["kappa_fitted"] = estimate(lambda i: kappa(fitted[i], label[i]), groups, n)
        out["fitted_thresholds"] = [round(c, 4) for c in cuts]
    if np.all((score >= 0) & (score <= 1)):
        ece, table = calibration(score, label)
        out["ece"], out["reliability"] = ece, table
    return out


# -- paired comparison ---------------------------------------------------------------------


def paired_difference(stat_a: Stat, stat_b: Stat, docs: Sequence[str], n: int) -> Estimate:
    """stat_b - stat_a on the same cases, with an interval from the same resampled documents."""
    groups = doc_groups(docs)
    return estimate(lambda i: stat_b(i) - stat_a(i), groups, n)

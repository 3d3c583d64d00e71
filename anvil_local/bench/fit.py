"""`anvil fit`: fit a head (`anvil_local.metrics.heads`) to labelled cases, and say how well
it does on documents it was not fitted on.

- The head is a standardised logistic regression (binary labels; both classes weighted
  equally) or ridge regression (graded labels, rescaled to 0..1) over the features a metric's
  results carry (`heads.features_of`). Its one setting (the regularisation) is chosen by
  cross-validation grouped by document (`INNER_FOLDS`), among a fixed grid.
- The figures are out-of-fold: the documents are split into `folds` groups; each group is
  predicted by a head fitted (setting chosen included) on the others only. AUROC and balanced
  accuracy at 0.5 (binary), or Spearman pooled and per document (graded), with 95% intervals
  from resampled documents; beside them each single feature as it is, and the paired
  difference between the head and the best single feature, so a head that only matches its
  best input says so.
- The label-efficiency table repeats the out-of-fold figure with 25, 50, 100 labelled cases
  drawn from each training split (five seeded draws each), and all of them.
- The head written into the metric file is fitted on every case (the setting chosen by the
  same grouped cross-validation).
- A hidden-state member's dimensions (`<name>.h<index>`) are first reduced to
  `STATE_COMPONENTS` principal components, fitted without labels on the training cases only;
  the kept head folds that projection into its weights, so it is written (and applied) over
  the raw dimensions like any other feature.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from anvil_local.bench import stats
from anvil_local.errors import DataError
from anvil_local.metrics.heads import Head, is_dimension

#: Inverse regularisation strengths (logistic) / penalties (ridge) tried.
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 10.0)
ALPHA_GRID = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0)
#: Folds of the search for the setting, inside each training split.
INNER_FOLDS = 3
EFFICIENCY_SIZES = (25, 50, 100)
EFFICIENCY_DRAWS = 5
#: Principal components a hidden state is reduced to before the head reads it.
STATE_COMPONENTS = 8
SEED = 20261202


@dataclass
class Design:
    """The feature matrix of a metric's results against a label."""

    names: list[str]
    x: np.ndarray  # cases x features
    y: np.ndarray  # the label (binary 0/1, or graded as given)
    docs: list[str]
    binary: bool
    label_range: tuple[float, float]

    @property
    def target(self) -> np.ndarray:
        """What the head predicts: the label, graded ones rescaled to 0..1."""
        if self.binary:
            return self.y
        lo, hi = self.label_range
        return (self.y - lo) / (hi - lo)


@dataclass
class FitReport:
    model: str
    metric: str
    label: str
    design: Design
    head: Head
    setting: float
    head_stats: dict[str, Any]
    feature_stats: dict[str, dict[str, Any]]
    best_feature: str
    difference: stats.Estimate  # head - best single feature, the headline statistic
    efficiency: list[tuple[str, float, float, float]] = field(default_factory=list)

    @property
    def headline(self) -> str:
        return "auroc" if self.design.binary else "doc_spearman"


def design(
    names_and_values: Sequence[dict[str, float]],
    y: np.ndarray,
    docs: Sequence[str],
    what: str,
) -> Design:
    """The matrix of each case's features (every case must carry the same ones)."""
    if len(names_and_values) < 4:
        raise DataError(f"{what}: a head needs at least 4 labelled cases, got {len(y)}")
    names = list(names_and_values[0])
    if not names:
        raise DataError(f"{what}: its results carry no features")
    for index, found in enumerate(names_and_values):
        if list(found) != names:
            raise DataError(
                f"{what}: case {index + 1} carries the features {list(found)}, "
                f"the first case {names}"
            )
    x = np.asarray([[found[n] for n in names] for found in names_and_values], dtype=float)
    binary = set(np.unique(y).tolist()) <= {0.0, 1.0}
    lo, hi = float(np.min(y)), float(np.max(y))
    if hi <= lo:
        raise DataError(f"{what}: every label is the same; nothing to fit")
    return Design(names, x, np.asarray(y, dtype=float), list(docs), binary, (lo, hi))


# -- fitting -------------------------------------------------------------------------------


def state_columns(names: Sequence[str]) -> tuple[int, ...]:
    """The indices of the hidden-state dimensions among a design's features."""
    return tuple(j for j, name in enumerate(names) if is_dimension(name))


def _model(binary: bool, setting: float, state: Sequence[int] = (), n: int = 0) -> Any:
    """Standardise, then logistic or ridge; with `state` columns (and `n` training cases)
    those columns are first projected on their principal components, the rest kept."""
    from sklearn.compose import ColumnTransformer
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if binary:
        estimator = LogisticRegression(C=setting, class_weight="balanced", max_iter=5000)
    else:
        estimator = Ridge(alpha=setting)
    if not state:
        return make_pipeline(StandardScaler(), estimator)
    components = max(1, min(STATE_COMPONENTS, len(state), n - 1))
    project = ColumnTransformer(
        [("state", PCA(n_components=components, random_state=0), list(state))],
        remainder="passthrough",
    )
    return make_pipeline(project, StandardScaler(), estimator)


def _predict(model: Any, x: np.ndarray, binary: bool) -> np.ndarray:
    if binary:
        return model.predict_proba(x)[:, 1]
    return np.clip(model.predict(x), 0.0, 1.0)


def _score(pred: np.ndarray, target: np.ndarray, docs: Sequence[str], binary: bool) -> float:
    if binary:
        return stats.auroc(pred, target.astype(int))
    return stats.per_document("spearman", pred, target, stats.doc_groups(docs))[0]


def _splits(docs: Sequence[str], folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Train/test indices, documents (sorted by name) dealt round the folds."""
    names = sorted(set(docs))
    if len(names) < 2:
        raise DataError("fitting a head needs cases from at least two documents")
    folds = min(folds, len(names))
    fold_of = {doc: i % folds for i, doc in enumerate(names)}
    fold = np.asarray([fold_of[d] for d in docs])
    return [(np.flatnonzero(fold != k), np.flatnonzero(fold == k)) for k in range(folds)]


def _usable(y: np.ndarray, binary: bool) -> bool:
    return len(np.unique(y)) >= 2 if binary else float(np.ptp(y)) > 0


def choose_setting(
    x: np.ndarray,
    target: np.ndarray,
    docs: Sequence[str],
    binary: bool,
    folds: int = INNER_FOLDS,
    state: Sequence[int] = (),
) -> float:
    """The grid setting with the best out-of-fold statistic (grouped by document); ties go to
    the stronger regularisation."""
    grid = C_GRID if binary else ALPHA_GRID
    best, best_value = grid[0] if binary else grid[-1], -math.inf
    splits = [
        (tr, te) for tr, te in _splits(docs, folds) if _usable(target[tr], binary) and len(te)
    ]
    if not splits:
        return best
    ordered = grid if binary else tuple(reversed(grid))  # strongest regularisation first
    for setting in ordered:
        pred = np.full(len(target), np.nan)
        for train, test in splits:
            model = _model(binary, setting, state, len(train)).fit(x[train], target[train])
            pred[test] = _predict(model, x[test], binary)
        seen = ~np.isnan(pred)
        value = _score(
            pred[seen], target[seen], [d for d, s in zip(docs, seen, strict=True) if s], binary
        )
        if value > best_value + 1e-9:
            best, best_value = setting, value
    return best


def fit(
    x: np.ndarray,
    target: np.ndarray,
    docs: Sequence[str],
    binary: bool,
    state: Sequence[int] = (),
) -> tuple[Any, float]:
    """A head fitted on these cases, its setting chosen by grouped cross-validation on them;
    `state`: the hidden-state columns, projected first (see the module docstring)."""
    setting = choose_setting(x, target, docs, binary, state=state)
    return _model(binary, setting, state, len(target)).fit(x, target), setting


def out_of_fold(
    x: np.ndarray,
    target: np.ndarray,
    docs: Sequence[str],
    binary: bool,
    folds: int,
    size: int | None = None,
    draw: int = 0,
    state: Sequence[int] = (),
) -> np.ndarray:
    """Each case predicted by a head fitted (setting chosen too) on the other folds only;
    `size`: on that many training cases drawn at random (seeded by `draw`)."""
    pred = np.full(len(target), np.nan)
    rng = np.random.default_rng(SEED + draw)
    for train, test in _splits(docs, folds):
        if size is not None and size < len(train):
            train = _draw(rng, train, target, size, binary)
        if not _usable(target[train], binary):
            continue
        train_docs = [docs[i] for i in train]
        model, _ = fit(x[train], target[train], train_docs, binary, state)
        pred[test] = _predict(model, x[test], binary)
    return pred


def _draw(
    rng: np.random.Generator, train: np.ndarray, target: np.ndarray, size: int, binary: bool
) -> np.ndarray:
    """`size` training cases at random; for a binary label at least two of each class."""
    for _ in range(100):
        chosen = np.sort(rng.choice(train, size=size, replace=False))
        if not binary or min(int(target[chosen].sum()), size - int(target[chosen].sum())) >= 2:
            return chosen
    return chosen


def as_head(
    model: Any, names: Sequence[str], binary: bool, sha256: str, label: str, fitted_on: str
) -> Head:
    """The fitted scikit-learn pipeline as plain numbers. A projection of hidden-state columns
    is folded in: a state dimension d gets mean mu_d (the projection's centre), scale 1 and
    the weight sum_i w_i V_id / s_i over the components i (V the projection, s and w the
    components' scale and weight), and the components' own means move into the intercept."""
    scaler, estimator = model[-2], model[-1]
    scale = [float(s) if s > 0 else 1.0 for s in scaler.scale_]
    coef = np.ravel(estimator.coef_)
    intercept = float(np.ravel([estimator.intercept_])[0])
    means, scales, weights = list(scaler.mean_), scale, list(coef)
    if len(model) == 3:  # [projection, scaler, estimator]
        project = model[0]
        state = list(project.transformers_[0][2])
        pca = project.named_transformers_["state"]
        k = pca.n_components_
        folded = (np.asarray(coef[:k]) / np.asarray(scale[:k])) @ pca.components_
        intercept -= float(np.sum(coef[:k] * np.asarray(scaler.mean_[:k]) / np.asarray(scale[:k])))
        rest = [j for j in range(len(names)) if j not in set(state)]
        by_column: dict[int, tuple[float, float, float]] = {}
        for i, j in enumerate(state):
            by_column[j] = (float(pca.mean_[i]), 1.0, float(folded[i]))
        for i, j in enumerate(rest):
            by_column[j] = (float(scaler.mean_[k + i]), scale[k + i], float(coef[k + i]))
        means = [by_column[j][0] for j in range(len(names))]
        scales = [by_column[j][1] for j in range(len(names))]
        weights = [by_column[j][2] for j in range(len(names))]
    return Head(
        kind="logistic" if binary else "linear",
        features=tuple(names),
        mean=tuple(_kept(m) for m in means),
        scale=tuple(_kept(s) for s in scales),
        coef=tuple(_kept(c) for c in weights),
        intercept=round(intercept, 8),
        sha256=sha256,
        label=label,
        fitted_on=fitted_on,
    )


def _kept(value: float) -> float:
    """A head's number as written: 8 decimals, or 10 significant digits for a small one (a
    hidden state's folded weights are small and many)."""
    value = float(value)
    return round(value, 8) if abs(value) >= 1e-2 else float(f"{value:.10g}")


# -- the report ----------------------------------------------------------------------------


def _statistics(pred: np.ndarray, d: Design) -> dict[str, stats.Estimate]:
    """Binary: AUROC, balanced accuracy at 0.5 and at a cut chosen on the other half of the
    documents; graded: Spearman pooled and per document. Each with its interval."""
    groups, n = stats.doc_groups(d.docs), len(pred)
    if d.binary:
        label = d.y.astype(int)
        own = (pred >= 0.5).astype(int)
        fitted, _ = stats.cross_fitted_predictions(pred, label, d.docs)
        found = {
            "auroc": stats.estimate(lambda i: stats.auroc(pred[i], label[i]), groups, n),
            "balanced_accuracy": stats.estimate(
                lambda i: stats.balanced_accuracy(own[i], label[i]), groups, n
            ),
        }
        if fitted is not None:
            found["balanced_accuracy_fitted"] = stats.estimate(
                lambda i: stats.balanced_accuracy(fitted[i], label[i]), groups, n
            )
        else:
            found["balanced_accuracy_fitted"] = stats.Estimate(math.nan)
        return found
    target = d.target
    doc_mean = stats.document_mean("spearman", pred, target, groups)
    return {
        "spearman": stats.estimate(
            lambda i: stats.correlation("spearman", pred[i], target[i]), groups, n
        ),
        "doc_spearman": stats.Estimate(doc_mean(np.arange(n)), *stats.bootstrap(doc_mean, groups)),
    }


def _headline_stat(pred: np.ndarray, d: Design):
    if d.binary:
        label = d.y.astype(int)
        return lambda i: stats.auroc(pred[i], label[i])
    return stats.document_mean("spearman", pred, d.target, stats.doc_groups(d.docs))


def fit_report(
    d: Design,
    *,
    model: str,
    sha256: str,
    metric: str,
    label: str,
    source: str,
    folds: int = 5,
    efficiency: bool = True,
) -> FitReport:
    """Cross-validate, measure, and fit the head to keep (see the module docstring)."""
    target = d.target
    state = state_columns(d.names)
    pred = out_of_fold(d.x, target, d.docs, d.binary, folds, state=state)
    if np.isnan(pred).any():
        raise DataError(f"{metric}: a fold's training documents hold one label only")
    head_stats = _statistics(pred, d)
    headline = "auroc" if d.binary else "doc_spearman"
    feature_stats = {  # a hidden state's dimensions are read together, not one by one
        name: _statistics(d.x[:, j], d) for j, name in enumerate(d.names) if j not in state
    }
    if not feature_stats:
        raise DataError(f"{metric}: a head needs a feature besides the hidden state")
    best = max(feature_stats, key=lambda n: feature_stats[n][headline].value)
    best_values = d.x[:, d.names.index(best)]
    difference = stats.paired_difference(
        _headline_stat(best_values, d), _headline_stat(pred, d), d.docs, len(pred)
    )
    rows: list[tuple[str, float, float, float]] = []
    if efficiency:
        for size in EFFICIENCY_SIZES:
            if size >= len(target) * (folds - 1) / folds:
                continue
            values = []
            for draw in range(EFFICIENCY_DRAWS):
                drawn = out_of_fold(d.x, target, d.docs, d.binary, folds, size, draw, state)
                seen = ~np.isnan(drawn)
                docs = [x for x, s in zip(d.docs, seen, strict=True) if s]
                values.append(_score(drawn[seen], target[seen], docs, d.binary))
            rows.append((str(size), float(np.mean(values)), min(values), max(values)))
        value = head_stats[headline].value
        rows.append((f"all ({int(len(target) * (folds - 1) / folds)})", value, value, value))
    model_all, setting = fit(d.x, target, d.docs, d.binary, state)
    n_docs = len(set(d.docs))
    fitted_on = (
        f"{source}: {len(target)} cases of {n_docs} documents; "
        f"{'C' if d.binary else 'alpha'} = {setting} by {INNER_FOLDS}-fold cross-validation "
        "grouped by document"
    )
    head = as_head(model_all, d.names, d.binary, sha256, label, fitted_on)
    return FitReport(
        model, metric, label, d, head, setting, head_stats, feature_stats, best, difference, rows
    )


def markdown(report: FitReport) -> str:
    d = report.design
    folds_note = "out of fold (each document predicted by a head fitted on the others)"
    cols = (
        ["auroc", "balanced_accuracy", "balanced_accuracy_fitted"]
        if d.binary
        else [
            "spearman",
            "doc_spearman",
        ]
    )
    lines = [
        f"Head for {report.metric!r} on {report.model}, label {report.label} "
        f"({'binary' if d.binary else 'graded'}; {len(d.y)} cases of {len(set(d.docs))} "
        f"documents), {folds_note}:",
        "",
        "| reads | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ]
    rows = [("**head**", report.head_stats), *report.feature_stats.items()]
    for name, found in rows:
        lines.append(f"| {name} | " + " | ".join(found[c].text() for c in cols) + " |")
    lines += [
        "",
        f"Head minus the best single feature ({report.best_feature}), {report.headline}: "
        f"{report.difference.text()}.",
    ]
    if report.efficiency:
        lines += [
            "",
            f"Label efficiency ({report.headline}, out of fold; mean of "
            f"{EFFICIENCY_DRAWS} draws, min to max):",
            "",
            "| labelled cases | " + report.headline + " | range |",
            "|---|---|---|",
        ]
        for size, mean, low, high in report.efficiency:
            lines.append(f"| {size} | {mean:.3f} | {low:.3f} to {high:.3f} |")
    state = set(state_columns(report.head.features))
    weights = ", ".join(
        f"{n} {w:+.3f}"
        for j, (n, w) in enumerate(zip(report.head.features, report.head.coef, strict=True))
        if j not in state
    )
    if state:
        weights += f", and the hidden state's {len(state)} dimensions through {STATE_COMPONENTS}"
        weights += " principal components"
    lines += ["", f"Kept head (fitted on every case): {report.head.fitted_on}; weights {weights}."]
    return "\n".join(lines) + "\n"

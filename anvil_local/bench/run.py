"""`anvil bench`: score labelled cases through the same runner as `anvil eval` (so results are
cached and a repeated bench costs nothing), then measure agreement with the labels and cost."""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from anvil_local.bench import abstention, pairwise, stats
from anvil_local.bench.abstention import AbstentionReport
from anvil_local.bench.calibrate import CalibrationFit, fit_calibration
from anvil_local.bench.pairwise import is_pairwise, preferences
from anvil_local.bench.suite import MetricSpec, document_of, label_name, labels_of
from anvil_local.errors import DataError
from anvil_local.metrics.abstain import confidence
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.calibration import score_input
from anvil_local.metrics.features import FeaturesMetric
from anvil_local.metrics.heads import features_of
from anvil_local.run.dataset import CaseRow
from anvil_local.run.records import ResultLine
from anvil_local.signals import Interrupted

log = logging.getLogger(__name__)

#: The statistic that ranks metrics: per-document Spearman where documents hold several cases
#: (the G-Eval paper's protocol), pooled Spearman otherwise; AUROC for binary labels.
HEADLINE = {
    "graded": ("doc_spearman", "spearman"),
    "binary": ("auroc", "auroc"),
    "pairwise": ("agreement", "agreement"),  # the judge's winner is the one people preferred
}


@dataclass
class MetricOutcome:
    """One metric on one model: agreement with its label, and cost."""

    model: str
    metric: str
    label: str
    kind: str  # graded | binary
    cases: int
    errors: int
    agreement: dict[str, Any]
    cost: dict[str, float]
    threshold: float
    points: list[tuple[float, float]] = field(default_factory=list)  # (judge, human)
    abstention: AbstentionReport | None = None

    @property
    def headline(self) -> tuple[str, stats.Estimate]:
        name = headline_name(self.kind, self.agreement)
        return name, self.agreement[name]

    def to_dict(self) -> dict[str, Any]:
        agreement = {
            k: (v.to_dict() if isinstance(v, stats.Estimate) else v)
            for k, v in self.agreement.items()
        }
        return {
            "model": self.model,
            "metric": self.metric,
            "label": self.label,
            "kind": self.kind,
            "cases": self.cases,
            "errors": self.errors,
            "threshold": self.threshold,
            "agreement": agreement,
            "headline": self.headline[0],
            "cost": self.cost,
            **({"abstention": self.abstention.to_dict()} if self.abstention else {}),
        }


def headline_name(kind: str, agreement: dict[str, Any]) -> str:
    first, fallback = HEADLINE[kind]
    value = agreement.get(first)
    if isinstance(value, stats.Estimate) and not math.isnan(value.value):
        return first
    return fallback


@dataclass
class Comparison:
    model: str
    a: str
    b: str
    statistic: str
    difference: stats.Estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "a": self.a,
            "b": self.b,
            "statistic": self.statistic,
            "difference_b_minus_a": self.difference.to_dict(),
        }


@dataclass
class ModelComparison:
    """One metric against one label on two models (B - A), paired on the same cases: does
    another file of a judge (a converted format, say) agree with people as well?"""

    metric: str
    label: str
    a: str
    b: str
    statistic: str
    difference: stats.Estimate

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "label": self.label,
            "a": self.a,
            "b": self.b,
            "statistic": self.statistic,
            "difference_b_minus_a": self.difference.to_dict(),
        }


@dataclass(frozen=True)
class RunCount:
    """How one model's scores were obtained: judged now, from the cache, or resumed."""

    model: str
    judged: int
    cached: int
    resumed: int
    wall_seconds: float


@dataclass
class BenchResult:
    suite: str
    data: str
    cases: int
    docs: int
    outcomes: list[MetricOutcome]
    comparisons: list[Comparison]
    runs: list[RunCount] = field(default_factory=list)
    calibrations: list[CalibrationFit] = field(default_factory=list)
    model_comparisons: list[ModelComparison] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "data": self.data,
            "cases": self.cases,
            "docs": self.docs,
            "seed": stats.SEED,
            "resamples": stats.RESAMPLES,
            "metrics": [o.to_dict() for o in self.outcomes],
            "comparisons": [c.to_dict() for c in self.comparisons],
            "runs": [vars(r) for r in self.runs],
            "calibrations": [c.to_dict() for c in self.calibrations],
            "model_comparisons": [c.to_dict() for c in self.model_comparisons],
        }


def continuous_score(line: ResultLine) -> float | None:
    """The judge's score as a number: a calibrated score, else a soft DAG's expected score,
    else the score."""
    if line.result.raw_score is not None:
        return line.result.score
    return score_input(line.result)


def label_kind(values: np.ndarray) -> str:
    return "binary" if set(np.unique(values).tolist()) <= {0.0, 1.0} else "graded"


def _cost(lines: Sequence[ResultLine]) -> dict[str, float]:
    n = max(1, len(lines))
    return {
        "evaluated_tokens_per_case": round(
            sum(x.result.usage.evaluated_tokens for x in lines) / n, 1
        ),
        "prompt_tokens_per_case": round(sum(x.result.usage.prompt_tokens for x in lines) / n, 1),
        "seconds_per_case": round(sum(x.result.seconds for x in lines) / n, 3),
    }


def measure(
    model: str,
    metric: BaseMetric,
    label: str,
    rows: list[CaseRow],
    lines: dict[str, ResultLine],
    source: str,
) -> tuple[MetricOutcome, np.ndarray, np.ndarray, list[str]]:
    """Agreement of one metric's results with one label (errored cases left out, counted)."""
    human_all = labels_of(rows, label, source)
    kept = [
        (row, human)
        for row, human in zip(rows, human_all, strict=True)
        if row.case_id in lines and continuous_score(lines[row.case_id]) is not None
    ]
    if len(kept) < 2:
        raise DataError(f"metric {metric.name!r} scored fewer than 2 cases; nothing to compare")
    pred = np.asarray([continuous_score(lines[r.case_id]) for r, _ in kept], dtype=float)
    human = np.asarray([h for _, h in kept])
    docs = [document_of(r) for r, _ in kept]
    kind = label_kind(human_all)
    if kind == "graded":
        agreement = stats.graded(pred, human, docs)
    else:
        agreement = stats.binary(pred, human, docs, metric.threshold)
    outcome = MetricOutcome(
        model=model,
        metric=metric.name,
        label=label_name(label),
        kind=kind,
        cases=len(kept),
        errors=len(rows) - len(kept),
        agreement=agreement,
        cost=_cost([lines[r.case_id] for r, _ in kept]),
        threshold=metric.threshold,
        points=list(zip(pred.tolist(), human.tolist(), strict=True)),
    )
    return outcome, pred, human, docs


def measure_pairwise(
    model: str,
    metric: BaseMetric,
    label: str,
    rows: list[CaseRow],
    lines: dict[str, ResultLine],
    source: str,
) -> tuple[MetricOutcome, np.ndarray, np.ndarray, list[str]]:
    """Agreement of a pairwise metric's winners with a preference label (bench.pairwise)."""
    agreement, pred, human, docs, kept = pairwise.measure_pairwise(
        metric, label, rows, lines, source
    )
    judged = [lines[r.case_id] for r in rows if r.case_id in lines]
    outcome = MetricOutcome(
        model=model,
        metric=metric.name,
        label=label_name(label),
        kind="pairwise",
        cases=kept,
        errors=len(rows) - kept,
        agreement=agreement,
        cost=_cost([x for x in judged if x.result.error is None]),
        threshold=metric.threshold,
        points=list(zip(pred.tolist(), human.tolist(), strict=True)),
    )
    return outcome, pred, human, docs


def _statistic(name: str, pred: np.ndarray, human: np.ndarray, docs: list[str]):
    """The headline statistic as a function of case indices, for paired bootstraps."""
    groups = stats.doc_groups(docs)
    if name == "agreement":  # pairwise: `pred` holds each case's credit (1: the preferred won)
        return lambda i: float(np.mean(pred[i]))
    if name == "auroc":
        return lambda i: stats.auroc(pred[i], human[i])
    if name == "doc_spearman":
        return stats.document_mean("spearman", pred, human, groups)
    return lambda i: stats.correlation("spearman", pred[i], human[i])


def bench(
    rows: list[CaseRow],
    specs: Sequence[tuple[BaseMetric, MetricSpec]],
    models: Sequence[str | None],
    evaluate_fn: Callable[..., Any],
    suite: str = "",
    source: str = "",
    results_dir: Path | None = None,
    on_line: Callable[..., None] | None = None,
    fit_calibration: bool = False,
    abstain_precision: float | None = None,
) -> BenchResult:
    """Score `rows` with every metric on every model, then measure agreement and cost; with
    `fit_calibration`, also fit each metric's score -> label map (see bench.calibrate); with
    `abstain_precision`, each binary metric's abstention level (see bench.abstention)."""
    metrics = _distinct(m for m, _ in specs)  # a metric compared with several labels runs once
    for metric, spec in specs:  # every label is there before any model work
        if not is_pairwise(metric):
            labels_of(rows, spec.label, source)
            continue
        if fit_calibration:
            raise DataError(
                f"metric {metric.name!r} picks a winner: --fit-calibration fits maps for "
                "scored metrics only"
            )
        preferences(rows, spec.label, source)
    outcomes: list[MetricOutcome] = []
    comparisons: list[Comparison] = []
    runs: list[RunCount] = []
    fits: list[CalibrationFit] = []
    per_model: list[tuple[str, dict[tuple[str, str], tuple]]] = []
    for model in models:
        out = None
        if results_dir is not None:
            results_dir.mkdir(parents=True, exist_ok=True)
            out = results_dir / f"results-{_slug(model or 'default')}.jsonl"
        result = evaluate_fn(
            rows,
            metrics,
            model=model,
            include_reason=False,
            out=out,
            on_line=on_line,
            source=source,
        )
        if result.interrupted:
            judged = len(result.lines) - result.cached - result.resumed
            kept = (
                f"; the results in {results_dir} are kept, and the same command resumes after them"
                if results_dir is not None
                else "; --report DIR keeps results for a re-run to resume"
            )
            raise Interrupted(
                f"Interrupted: {judged} pairs judged on {model or 'the default judge'}{kept}."
            )
        model_name = result.lines[0].model if result.lines else str(model)
        judged = len(result.lines) - result.cached - result.resumed
        runs.append(
            RunCount(model_name, judged, result.cached, result.resumed, result.wall_seconds)
        )
        by_metric: dict[str, dict[str, ResultLine]] = {}
        for line in result.lines:
            by_metric.setdefault(line.metric, {})[line.case_id] = line
        series = {}
        for metric, spec in specs:
            measured = measure_pairwise if is_pairwise(metric) else measure
            outcome, pred, human, docs = measured(
                model_name, metric, spec.label, rows, by_metric.get(metric.name, {}), source
            )
            if abstain_precision is not None and outcome.kind == "binary":
                outcome.abstention = _abstention(
                    metric,
                    spec.label,
                    rows,
                    by_metric.get(metric.name, {}),
                    source,
                    abstain_precision,
                )
            outcomes.append(outcome)
            series[(metric.name, spec.label)] = (outcome, pred, human, docs)
            if fit_calibration:
                fits.append(
                    _fit(outcome, metric, rows, by_metric.get(metric.name, {}), suite or source)
                )
        comparisons += _compare(model_name, series)
        per_model.append((model_name, series))
    docs = {document_of(r) for r in rows}
    return BenchResult(
        suite,
        source,
        len(rows),
        len(docs),
        outcomes,
        comparisons,
        runs,
        fits,
        _compare_models(per_model),
    )


def _abstention(
    metric: BaseMetric,
    label: str,
    rows: list[CaseRow],
    lines: dict[str, ResultLine],
    source: str,
    target: float,
) -> AbstentionReport | None:
    """Each verdict's confidence and whether it matches the label, then the report."""
    confident, correct, docs = [], [], []
    for row, human in zip(rows, labels_of(rows, label, source), strict=True):
        line = lines.get(row.case_id)
        if line is None or line.result.success is None:
            continue
        sure = confidence(line.result)
        if sure is None:
            continue
        confident.append(sure)
        correct.append(float(bool(line.result.success) == bool(human)))
        docs.append(document_of(row))
    if len(confident) < 2:
        return None
    return abstention.report(np.asarray(confident), np.asarray(correct), docs, target)


def _fit(
    outcome: MetricOutcome,
    metric: BaseMetric,
    rows: list[CaseRow],
    lines: dict[str, ResultLine],
    source: str,
) -> CalibrationFit:
    """The metric's map fitted on one fold of its raw scores, checked on the other."""
    all_labels = labels_of(rows, outcome.label, source)
    kept = [(row, h) for row, h in zip(rows, all_labels, strict=True) if row.case_id in lines]
    kept = [(row, h) for row, h in kept if score_input(lines[row.case_id].result) is not None]
    raw = np.asarray([score_input(lines[row.case_id].result) for row, _ in kept], dtype=float)
    first = lines[kept[0][0].case_id]
    features = None
    if isinstance(metric, FeaturesMetric):  # a head over its readings, not a map of their mean
        found = [features_of(lines[row.case_id].result) for row, _ in kept]
        names = list(found[0])
        features = (names, np.asarray([[f[n] for n in names] for f in found], dtype=float))
    return fit_calibration(
        model=outcome.model,
        sha256=first.model_sha256,
        metric=metric.name,
        label=outcome.label,
        kind=outcome.kind,
        raw=raw,
        human=np.asarray([h for _, h in kept]),
        docs=[document_of(row) for row, _ in kept],
        threshold=metric.threshold,
        label_range=(float(all_labels.min()), float(all_labels.max())),
        source=Path(source).name if source else "",
        features=features,
    )


def _compare(model: str, series: dict[tuple[str, str], tuple]) -> list[Comparison]:
    """Paired differences of the headline statistic between metrics that share a label and
    scored the same cases."""
    found = []
    for ((name_a, _), sa), ((name_b, _), sb) in itertools.combinations(series.items(), 2):
        oa, pa, ha, da = sa
        ob, pb, hb, db = sb
        if oa.label != ob.label or oa.kind != ob.kind or da != db or not np.array_equal(ha, hb):
            continue
        statistic = headline_name(oa.kind, oa.agreement)
        stat_a = _statistic(statistic, pa, ha, da)
        stat_b = _statistic(statistic, pb, hb, db)
        diff = stats.paired_difference(stat_a, stat_b, da, len(pa))
        found.append(Comparison(model, name_a, name_b, statistic, diff))
    return found


def _compare_models(
    per_model: Sequence[tuple[str, dict[tuple[str, str], tuple]]],
) -> list[ModelComparison]:
    """Paired differences of each metric's headline statistic between the first model and
    every other one, where both scored the same cases."""
    if len(per_model) < 2:
        return []
    found = []
    name_a, series_a = per_model[0]
    for name_b, series_b in per_model[1:]:
        for key, (oa, pa, ha, da) in series_a.items():
            if key not in series_b:
                continue
            ob, pb, hb, db = series_b[key]
            if oa.kind != ob.kind or da != db or not np.array_equal(ha, hb):
                continue
            statistic = headline_name(oa.kind, oa.agreement)
            diff = stats.paired_difference(
                _statistic(statistic, pa, ha, da), _statistic(statistic, pb, hb, db), da, len(pa)
            )
            found.append(ModelComparison(key[0], key[1], name_a, name_b, statistic, diff))
    return found


def _distinct(metrics: Any) -> list[BaseMetric]:
    """Metrics by name, first occurrence kept; one name for two definitions is an error."""
    found: dict[str, BaseMetric] = {}
    for metric in metrics:
        seen = found.get(metric.name)
        if seen is None:
            found[metric.name] = metric
        elif seen.to_dict() != metric.to_dict():
            raise DataError(f"two different metrics are named {metric.name!r}")
    return list(found.values())


def _slug(text: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in Path(text).name)
    return keep.strip("-") or "model"

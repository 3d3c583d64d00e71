"""Fitted heads against human labels, per task: what a head over the judge's readings adds,
against a head over code alone, the previous shipped metric, and a head fitted with no human
label at all (on cases `anvil perturb` made from the task's own documents).

    python benchmarks/heads.py --task qags_xsum
    python benchmarks/heads.py --task summedits
    python benchmarks/heads.py --task summeval

Every head figure is out of fold (`anvil_local.bench.fit`: documents dealt into 5 folds, each
predicted by a head fitted on the others, its setting chosen inside that training split); the
head fitted on made cases never sees a human label, so it is measured on all of them. 95%
intervals resample documents. The judge's readings come through the result cache, so a
second run costs only the fitting.

Figures: benchmarks/results/heads_<task>.json.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from harness import DATA_DIR, ROOT, SHIPPED_MODEL, add_out, write_figures

from anvil_local import evaluate
from anvil_local.bench import stats
from anvil_local.bench.fit import EFFICIENCY_SIZES, design, fit, fit_report, out_of_fold
from anvil_local.bench.perturb import make_cases
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.metrics.calibration import score_input
from anvil_local.metrics.heads import features_of
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

TASKS = {
    "qags_xsum": ("qags_xsum.jsonl", "labels.consistent"),
    "summedits": ("summedits_news.jsonl", "labels.consistent"),
    "summeval": ("summeval.jsonl", "labels.consistency"),
}
JUDGE = ROOT / "examples" / "small_judge" / "consistency_features.toml"
CODE = ROOT / "benchmarks" / "metrics" / "overlap_features.toml"
SHIPPED = ROOT / "examples" / "small_judge" / "consistency_check.toml"
FOLDS = 5


def readings(metric: Any, rows: list, model: Any) -> tuple[list[dict[str, float]], list]:
    """Each case's features (cases that errored are left out) and the results."""
    outcome = evaluate(rows, [metric], model=model, include_reason=False)
    by_case = {line.case_id: line for line in outcome.lines}
    kept = [r for r in rows if by_case[r.case_id].result.error is None]
    return [features_of(by_case[r.case_id].result) for r in kept], [
        by_case[r.case_id] for r in kept
    ]


def headline(binary: bool):
    return "auroc" if binary else "doc_spearman"


def statistic(pred: np.ndarray, d: Any):
    if d.binary:
        label = d.y.astype(int)
        return lambda i: stats.auroc(pred[i], label[i])
    return stats.document_mean("spearman", pred, d.target, stats.doc_groups(d.docs))


def cells(found: dict[str, Any], binary: bool) -> list[Any]:
    keys = (
        ("auroc", "balanced_accuracy", "balanced_accuracy_fitted")
        if binary
        else (
            "doc_spearman",
            "spearman",
        )
    )
    return [est(found.get(k)) for k in keys]


def est(value: Any) -> Any:
    if value is None:
        return None
    return {"value": value.value, "low": value.low, "high": value.high}


def cost(lines: list) -> list[float]:
    """Tokens llama.cpp evaluated and seconds, per case, as the lines were judged."""
    n = max(1, len(lines))
    tokens = sum(x.result.usage.evaluated_tokens for x in lines) / n
    return [round(tokens, 1), round(sum(x.result.seconds for x in lines) / n, 3)]


def measured(pred: np.ndarray, d: Any) -> dict[str, Any]:
    """The head statistics of `bench.fit` for predictions made elsewhere."""
    from anvil_local.bench.fit import _statistics

    return _statistics(pred, d)


def synthetic_head(rows: list, metric: Any, model: Any, label: str, binary: bool) -> Any:
    """A head fitted on cases made from the rows' own documents (no human label), as a
    fitted scikit-learn pipeline over the metric's features."""
    documents: dict[str, str] = {}
    for row in rows:
        documents.setdefault(document_of(row), row.case.input)
    # about as many made cases as labelled ones: a sentence pair per labelled case's document
    per_document = max(1, round(len(rows) / (2 * len(documents))))
    made = make_cases(documents.items(), per_document=per_document, seed=0)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "made.jsonl"
        path.write_text("".join(json.dumps(m.to_row(i)) + "\n" for i, m in enumerate(made)))
        made_rows = read_cases(path)
    found, _ = readings(metric, made_rows, model)
    y = labels_of(made_rows, "labels.consistent", "made")
    d = design(found, y[: len(found)], [document_of(r) for r in made_rows][: len(found)], "made")
    pipeline, _ = fit(d.x, d.target, d.docs, True)
    return pipeline, len(made)


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model_default=SHIPPED_MODEL, out=False)
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    p.add_argument("--docs", type=int, default=None, help="the first N documents only")
    add_out(p)
    args = p.parse_args()
    data_name, label = TASKS[args.task]
    rows = read_cases(DATA_DIR / data_name)
    if args.docs:
        keep = list(dict.fromkeys(document_of(r) for r in rows))[: args.docs]
        rows = [r for r in rows if document_of(r) in keep]
    model = resolve_model(args.model)
    human = labels_of(rows, label, data_name)
    judge_metric, code_metric = load_metric(JUDGE), load_metric(CODE)
    judge_found, judge_lines = readings(judge_metric, rows, model)
    code_found, code_lines = readings(code_metric, rows, model)
    docs = [document_of(r) for r in rows]
    judge = design(judge_found, human, docs, str(JUDGE))
    code = design(code_found, human, docs, str(CODE))
    binary = judge.binary
    report = fit_report(
        judge,
        model=model.name,
        sha256=model.sha256,
        metric=judge_metric.name,
        label=label,
        source=data_name,
        folds=FOLDS,
    )
    code_report = fit_report(
        code,
        model=model.name,
        sha256=model.sha256,
        metric=code_metric.name,
        label=label,
        source=data_name,
        folds=FOLDS,
        efficiency=False,
    )
    judge_pred = out_of_fold(judge.x, judge.target, judge.docs, binary, FOLDS)
    code_pred = out_of_fold(code.x, code.target, code.docs, binary, FOLDS)
    name = headline(binary)
    versus_code = stats.paired_difference(
        statistic(code_pred, judge), statistic(judge_pred, judge), judge.docs, len(judge_pred)
    )
    shipped_metric = load_metric(SHIPPED)
    shipped_out = evaluate(rows, [shipped_metric], model=model, include_reason=False)
    shipped_by = {x.case_id: x for x in shipped_out.lines}
    shipped_pred = np.asarray(
        [
            shipped_by[r.case_id].result.score
            if shipped_by[r.case_id].result.score is not None
            else score_input(shipped_by[r.case_id].result) or 0.0
            for r in rows
        ]
    )
    versus_shipped = stats.paired_difference(
        statistic(shipped_pred, judge), statistic(judge_pred, judge), judge.docs, len(judge_pred)
    )
    judge_cost, code_cost = cost(judge_lines), cost(code_lines)
    rows_out = [
        [
            "head over the judge's readings (out of fold)",
            *cells(report.head_stats, binary),
            *judge_cost,
        ],
        ["head over code alone (out of fold)", *cells(code_report.head_stats, binary), *code_cost],
        [
            f"best single reading: {report.best_feature}",
            *cells(report.feature_stats[report.best_feature], binary),
            None,
            None,
        ],
        [
            f"best single code reading: {code_report.best_feature}",
            *cells(code_report.feature_stats[code_report.best_feature], binary),
            None,
            None,
        ],
        [
            "previous shipped: consistency_check.toml",
            *cells(measured(shipped_pred, judge), binary),
            *cost(shipped_out.lines),
        ],
    ]
    notes = [
        f"Head minus code-only head, {name}: {versus_code.text()} (paired, same cases).",
        f"Head minus the previous shipped metric, {name}: {versus_shipped.text()}.",
    ]
    if binary:
        pipeline, n_made = synthetic_head(rows, judge_metric, model, label, binary)
        made_pred = pipeline.predict_proba(judge.x)[:, 1]
        rows_out.append(
            [
                f"head fitted on {n_made} made cases, no human label",
                *cells(measured(made_pred, judge), binary),
                *judge_cost,
            ]
        )
    columns = (
        ["reads", "AUROC", "bal. acc. at 0.5", "bal. acc. (fitted cut)"]
        if binary
        else [
            "reads",
            "doc Spearman",
            "Spearman",
        ]
    ) + ["tokens evaluated/case", "s/case"]
    efficiency = ", ".join(f"{size}: {mean:.3f}" for size, mean, _, _ in report.efficiency)
    notes.append(f"Label efficiency ({name}, out of fold, mean of 5 draws): {efficiency}.")
    notes.append(f"Kept head weights: {report.head.fitted_on}.")
    write_figures(
        args,
        f"heads_{args.task}",
        f"{args.task}: fitted heads against human labels ({len(rows)} cases, "
        f"{len(set(docs))} documents, {model.name})",
        columns,
        rows_out,
        notes=notes,
        models=[model],
        settings={"folds": FOLDS, "label": label, "efficiency sizes": list(EFFICIENCY_SIZES)},
    )
    print(json.dumps(rows_out, default=str, indent=1))
    print("\n".join(notes))


if __name__ == "__main__":
    main()

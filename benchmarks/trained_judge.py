"""The trained judge against human labels, per task: the faithfulness question asked of the
untrained default judge and of the same judge with the trained adapter (no dev label: the
adapter never saw these documents), a head over the adapter's P(Yes) and code fitted with
the dev labels (out of fold), and the code head the judge must beat (uni/bi/trigram overlap,
fitted out of fold on the same half). Beside them, the shipped heads' design (a head over
the untrained judge's readings, `consistency_features.toml`) and the same readings plus
P(Yes) read by the trained judge (`benchmarks/metrics/consistency_trained_features.toml`),
both fitted out of fold: whether the adapter earns a place in the shipped heads.

    python benchmarks/trained_judge.py --task qags_xsum
    python benchmarks/trained_judge.py --task summedits
    python benchmarks/trained_judge.py --task summeval

Out of fold: documents dealt into 5 folds, each predicted by a head fitted (its setting chosen
too) on the other four. Balanced accuracy "fitted cut": the cut chosen on the other half of the
documents. 95% intervals resample documents; paired differences resample the same documents
for both sides. Figures: benchmarks/results/trained_judge_<task>.json.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from harness import DATA_DIR, ROOT, add_out, write_figures
from heads import est, measured, statistic

from anvil_local import evaluate
from anvil_local.bench import stats
from anvil_local.bench.fit import design, out_of_fold
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
QUESTION = ROOT / "examples" / "small_judge" / "faithfulness.toml"
CODE = ROOT / "benchmarks" / "metrics" / "overlap_features.toml"
# the shipped heads' design (benchmarks/heads.py) on the untrained judge, and the same
# readings plus P(Yes) on the trained one
READINGS = ROOT / "examples" / "small_judge" / "consistency_features.toml"
TRAINED_READINGS = ROOT / "benchmarks" / "metrics" / "consistency_trained_features.toml"
BASE, TRAINED = "smollm2-135m-instruct", "smollm2-135m-faithful"
FOLDS = 5


def scores(
    metric: Any, rows: list, model: Any, use_cache: bool = True
) -> tuple[np.ndarray, dict[str, float]]:
    """Each case's P(Yes) (the soft DAG's expected score; its verdict score is 0 or 1), and
    tokens evaluated and seconds per case (as judged: a cached run costs nothing)."""
    outcome = evaluate(rows, [metric], model=model, include_reason=False, use_cache=use_cache)
    by_case = {line.case_id: line.result for line in outcome.lines}
    results = [by_case[r.case_id] for r in rows]
    n = max(1, len(results))
    cost = {
        "prompt_tokens": sum(x.usage.prompt_tokens for x in results) / n,
        "evaluated_tokens": sum(x.usage.evaluated_tokens for x in results) / n,
        "seconds": sum(x.seconds for x in results) / n,
    }
    found = [score_input(x) for x in results]  # a soft DAG's expected score: P(Yes)
    return np.asarray([np.nan if v is None else v for v in found]), cost


def code_features(rows: list) -> list[dict[str, float]]:
    return features(load_metric(CODE), rows, None)


def features(metric: Any, rows: list, model: Any) -> list[dict[str, float]]:
    """Each case's features under one metric (a run with no model for code alone)."""
    outcome = evaluate(rows, [metric], model=model, include_reason=False)
    by_case = {line.case_id: line.result for line in outcome.lines}
    missing = [r.case_id for r in rows if by_case[r.case_id].error is not None]
    if missing:
        raise SystemExit(f"{metric.name}: {len(missing)} case(s) errored, first {missing[0]}")
    return [features_of(by_case[r.case_id]) for r in rows]


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--task", choices=sorted(TASKS), required=True)
    p.add_argument("--docs", type=int, default=None, help="the first N documents only")
    add_out(p)
    args = p.parse_args()
    data_name, label = TASKS[args.task]
    rows = read_cases(DATA_DIR / data_name)
    if args.docs:
        keep = list(dict.fromkeys(document_of(r) for r in rows))[: args.docs]
        rows = [r for r in rows if document_of(r) in keep]
    human = labels_of(rows, label, data_name)
    docs = [document_of(r) for r in rows]
    question = load_metric(QUESTION)
    base_model, trained_model = resolve_model(BASE), resolve_model(TRAINED)
    base, base_cost = scores(question, rows, base_model)
    trained, trained_cost = scores(question, rows, trained_model)
    code_found = code_features(rows)
    code = design(code_found, human, docs, str(CODE))
    both = design(
        [{"trained P(Yes)": float(t), **c} for t, c in zip(trained, code_found, strict=True)],
        human,
        docs,
        "trained + code",
    )
    readings = design(features(load_metric(READINGS), rows, base_model), human, docs, "untrained")
    trained_readings = design(
        features(load_metric(TRAINED_READINGS), rows, trained_model), human, docs, "trained"
    )
    binary = code.binary
    code_pred = out_of_fold(code.x, code.target, code.docs, binary, FOLDS)
    both_pred = out_of_fold(both.x, both.target, both.docs, binary, FOLDS)
    readings_pred = out_of_fold(readings.x, readings.target, readings.docs, binary, FOLDS)
    trained_readings_pred = out_of_fold(
        trained_readings.x, trained_readings.target, trained_readings.docs, binary, FOLDS
    )
    table = [
        ("untrained judge: the faithfulness question's P(Yes)", base),
        ("trained judge (adapter, no dev label): P(Yes)", trained),
        ("head over the trained P(Yes) and code, dev labels (out of fold)", both_pred),
        ("head over code alone, dev labels (out of fold)", code_pred),
        ("shipped design: head over the untrained judge's readings (out of fold)", readings_pred),
        (
            "head over the trained judge's readings and P(Yes) (out of fold)",
            trained_readings_pred,
        ),
    ]
    keys = (
        ("auroc", "balanced_accuracy", "balanced_accuracy_fitted")
        if binary
        else ("doc_spearman", "spearman")
    )
    out_rows = []
    for name, pred in table:
        found = measured(pred, code)
        out_rows.append([name, *(est(found.get(k)) for k in keys)])
    n = len(rows)
    notes = []
    pairs = [
        (name, pred, other_name, other)
        for name, pred in (("trained judge", trained), ("trained head", both_pred))
        for other_name, other in (("code head", code_pred), ("untrained judge", base))
    ]
    pairs += [
        ("trained readings head", trained_readings_pred, "code head", code_pred),
        ("trained readings head", trained_readings_pred, "shipped design", readings_pred),
    ]
    for name, pred, other_name, other in pairs:
        diff = stats.paired_difference(statistic(other, code), statistic(pred, code), docs, n)
        notes.append(
            f"{name} minus {other_name}, {keys[0]}: {diff.value:.3f} "
            f"[{diff.low:.2f}, {diff.high:.2f}] (paired, same documents)"
        )
    for name, cost in (("untrained", base_cost), ("trained", trained_cost)):
        notes.append(
            f"{name} judge per case: {cost['prompt_tokens']:.0f} prompt tokens, "
            f"{cost['evaluated_tokens']:.0f} evaluated, {cost['seconds']:.3f} s"
        )
    columns = (
        ["reads", "AUROC", "bal. acc. at 0.5", "bal. acc. (fitted cut)"]
        if binary
        else ["reads", "per-document Spearman", "pooled Spearman"]
    )
    title = (
        f"{args.task}: the trained judge against human labels ({n} cases, "
        f"{len(set(docs))} documents)"
    )
    write_figures(
        args,
        f"trained_judge_{args.task}",
        title,
        columns,
        out_rows,
        notes=notes,
        models=[base_model, trained_model],
    )


if __name__ == "__main__":
    main()

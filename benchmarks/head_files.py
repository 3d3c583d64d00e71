"""Does a shipped head (or score map) hold on the file `anvil models tune` picks? Each head in
`examples/small_judge/` was fitted on the readings of the shipped Q4_1 file; a Q8_0
conversion of it reads almost the same logits, and the engine applies the Q4_1 head to it.
This measures, per head, its figure against the human labels on both files, the paired
difference (same cases, same resampled documents) and how far the calibrated score of a case
moves between the two files.

    anvil models convert smollm2-135m-instruct --format Q8_0   # once; `anvil models tune` does it
    python benchmarks/head_files.py [--record]

A head holds on the conversion when the paired difference's 95% interval holds 0 and its
size is under 0.03 (`HOLDS`); `--record` writes that verdict, with its figures, into the
metric file as `holds_on`, the evidence the engine needs before it applies a head to a
conversion (`anvil doctor` lists it). The figures are in sample for Q4_1 (each head
was fitted on these dev labels); the question here is only how far they move. Kernel families
(AVX2 against AVX-512) are not measured: one host runs one family.

Figures: benchmarks/results/head_files.json.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np
from harness import DATA_DIR, ROOT, add_out, write_figures

from anvil_local import evaluate
from anvil_local.bench import stats
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.metrics.calibration import calibrate, uncalibrated
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric
from anvil_local.spec.files import write_calibration

HEADS = ROOT / "examples" / "small_judge"
# head file -> (data file, label)
SHIPPED = {
    "consistency_head_xsum.toml": ("qags_xsum.jsonl", "labels.consistent"),
    "consistency_head_summedits.toml": ("summedits_news.jsonl", "labels.consistent"),
    "consistency_head_summeval.toml": ("summeval.jsonl", "labels.consistency"),
    "coherence_head_summeval.toml": ("summeval.jsonl", "labels.coherence"),
    "fluency_head_summeval.toml": ("summeval.jsonl", "labels.fluency"),
    "relevance_head_summeval.toml": ("summeval.jsonl", "labels.relevance"),
    # score maps (one reading through a fitted curve) are measured the same way
    "consistency_check.toml": ("qags_xsum.jsonl", "labels.consistent"),
    "least_supported_token.toml": ("summedits_news.jsonl", "labels.consistent"),
}
FITTED, CONVERTED = "smollm2-135m-instruct", "smollm2-135m-instruct-q8_0"
HOLDS = 0.03


def calibrated(metric: Any, rows: list, model: Any, fitted: Any) -> np.ndarray:
    """Each case's score on `model` with the head fitted on `fitted` applied to it, whether
    or not the engine would apply it there (that is what is being decided)."""
    outcome = evaluate(rows, [metric], model=model, include_reason=False)
    by_case = {line.case_id: line.result for line in outcome.lines}
    found = []
    for row in rows:
        raw = uncalibrated(by_case[row.case_id])
        result = calibrate(metric, raw, fitted.name, fitted.sha256)
        if result.raw_score is None:
            raise SystemExit(f"{metric.name}: no head for {fitted.name} ({row.case_id})")
        found.append(result.score)
    return np.asarray(found, dtype=float)


def figure(pred: np.ndarray, human: np.ndarray, docs: list[str]):
    """AUROC for a yes/no label, else the per-document Spearman, as a statistic of cases."""
    if set(np.unique(human)) <= {0.0, 1.0}:
        label = human.astype(int)
        return "AUROC", lambda i: stats.auroc(pred[i], label[i])
    return "per-document Spearman", stats.document_mean(
        "spearman", pred, human, stats.doc_groups(docs)
    )


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument(
        "--record",
        action="store_true",
        help="write `holds_on` (with its evidence) into the metric file of every head that holds",
    )
    add_out(p)
    args = p.parse_args()
    fitted, converted = resolve_model(FITTED), resolve_model(CONVERTED)
    out_rows, notes = [], []
    for head, (data_name, label) in SHIPPED.items():
        rows = read_cases(DATA_DIR / data_name)
        human = labels_of(rows, label, data_name)
        docs = [document_of(r) for r in rows]
        metric = load_metric(HEADS / head)
        a = calibrated(metric, rows, fitted, fitted)
        b = calibrated(metric, rows, converted, fitted)
        name, stat_a = figure(a, human, docs)
        _, stat_b = figure(b, human, docs)
        groups = stats.doc_groups(docs)
        one, two = (stats.estimate(s, groups, len(rows)) for s in (stat_a, stat_b))
        diff = stats.paired_difference(stat_a, stat_b, docs, len(rows))
        holds = diff.low <= 0.0 <= diff.high and abs(diff.value) < HOLDS
        moved = np.abs(b - a)
        out_rows.append(
            [
                head,
                name,
                {"value": one.value, "low": one.low, "high": one.high},
                {"value": two.value, "low": two.low, "high": two.high},
                {"value": diff.value, "low": diff.low, "high": diff.high},
                float(moved.mean()),
                float(moved.max()),
                "holds" if holds else "does not hold",
            ]
        )
        notes.append(f"{head}: {len(rows)} cases of {len(set(docs))} documents, label {label}")
        if args.record and holds:
            evidence = (
                f"benchmarks/head_files.py, {date.today().isoformat()}: {name} {one.value:.3f} "
                f"on {FITTED}, {two.value:.3f} on {CONVERTED}, paired difference "
                f"{diff.value:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}]; mean |score moved| "
                f"{moved.mean():.3f}"
            )
            entry = metric.calibration.maps[FITTED].to_dict()
            entry["holds_on"] = {**entry.get("holds_on", {}), converted.format: evidence}
            write_calibration(HEADS / head, FITTED, entry)
    write_figures(
        args,
        "head_files",
        f"The shipped heads (fitted on {FITTED}) on the file tuning picks ({CONVERTED})",
        [
            "head",
            "figure",
            f"on {FITTED}",
            f"on {CONVERTED}",
            "difference (paired)",
            "mean |score moved|",
            "max |score moved|",
            "verdict",
        ],
        out_rows,
        formats={"mean |score moved|": ".3f", "max |score moved|": ".3f"},
        notes=notes,
        models=[fitted, converted],
    )


if __name__ == "__main__":
    main()

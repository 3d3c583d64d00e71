"""Stage 1 of teaching the judge, forward only: the shipped heads' design (a head over the
untrained judge's readings, `examples/small_judge/consistency_features.toml`) fitted on
public training pairs instead of dev labels. "Transfer": fitted on the training pairs alone
(no dev label), measured on every dev case. "Transfer + dev": each dev fold predicted by a
head fitted on the training pairs and the other dev folds (5 folds by document), against the
head fitted on the other dev folds alone (the shipped design, out of fold).

    anvil train data --sources DIR --exclude benchmarks/data/eval_ngrams.txt --out rows.jsonl
    python benchmarks/transfer_heads.py --rows rows.jsonl [--pairs 1200]

The training pairs are the training split of `anvil train data`'s rows (evaluation documents
already dropped), drawn balanced per source and label with a fixed seed. Graded SummEval
ratings cannot be pooled with yes/no pairs, so SummEval gets the transfer row only.
95% intervals resample documents. Figures: benchmarks/results/transfer_heads.json.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from harness import DATA_DIR, ROOT, SHIPPED_MODEL, add_out, write_figures
from heads import est, measured, readings

from anvil_local.bench.fit import _predict, _splits, design, fit, out_of_fold
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

TASKS = {
    "qags_xsum": ("qags_xsum.jsonl", "labels.consistent"),
    "summedits": ("summedits_news.jsonl", "labels.consistent"),
    "summeval": ("summeval.jsonl", "labels.consistency"),
}
JUDGE = ROOT / "examples" / "small_judge" / "consistency_features.toml"
FOLDS = 5
SEED = 0


def training_pairs(path: Path, count: int) -> list[dict[str, Any]]:
    """`count` training rows, balanced over (source, label), drawn with a fixed seed."""
    cells: dict[tuple[str, bool], list[dict[str, Any]]] = defaultdict(list)
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["split"] == "train":
                cells[(row["source"], bool(row["supported"]))].append(row)
    rng = np.random.default_rng(SEED)
    each = count // max(1, len(cells))
    chosen = []
    for key in sorted(cells):
        rows = cells[key]
        picked = rng.choice(len(rows), size=min(each, len(rows)), replace=False)
        chosen += [rows[int(i)] for i in sorted(picked)]
    return chosen


def pair_readings(pairs: list[dict[str, Any]], metric: Any, model: Any):
    """The judge's readings of each training pair, as cases of a JSONL file."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pairs.jsonl"
        lines = [
            {
                "id": p["id"],
                "input": p["input"],
                "actual_output": p["actual_output"],
                "metadata": {"labels": {"consistent": int(p["supported"])}},
            }
            for p in pairs
        ]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        rows = read_cases(path)
    found, lines_ = readings(metric, rows, model)
    kept = {line.case_id for line in lines_}
    kept_rows = [r for r in rows if r.case_id in kept]
    y = labels_of(kept_rows, "labels.consistent", "training pairs")
    docs = [f"train:{r.case.input[:200]}" for r in kept_rows]
    return design(found, y, docs, "training pairs")


def with_training(train: Any, dev: Any) -> np.ndarray:
    """Each dev fold predicted by a head fitted on the training pairs and the other folds."""
    pred = np.full(len(dev.target), np.nan)
    for fold_train, fold_test in _splits(dev.docs, FOLDS):
        x = np.vstack([train.x, dev.x[fold_train]])
        y = np.concatenate([train.target, dev.target[fold_train]])
        docs = list(train.docs) + [dev.docs[i] for i in fold_train]
        model, _ = fit(x, y, docs, True)
        pred[fold_test] = _predict(model, dev.x[fold_test], True)
    return pred


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model_default=SHIPPED_MODEL, out=False)
    p.add_argument("--rows", type=Path, required=True, help="`anvil train data` JSONL")
    p.add_argument("--pairs", type=int, default=1200, help="training pairs to read")
    add_out(p)
    args = p.parse_args()
    model = resolve_model(args.model)
    metric = load_metric(JUDGE)
    pairs = training_pairs(args.rows, args.pairs)
    train = pair_readings(pairs, metric, model)
    transfer, setting = fit(train.x, train.target, train.docs, True)
    out_rows, notes = [], []
    for task, (data_name, label) in TASKS.items():
        rows = read_cases(DATA_DIR / data_name)
        found, lines = readings(metric, rows, model)
        kept = {line.case_id for line in lines}
        rows = [r for r in rows if r.case_id in kept]
        dev = design(found, labels_of(rows, label, data_name), [document_of(r) for r in rows], task)
        if dev.names != train.names:
            raise SystemExit(f"{task}: its cases carry other features than the training pairs")
        key = "auroc" if dev.binary else "doc_spearman"
        shipped = out_of_fold(dev.x, dev.target, dev.docs, dev.binary, FOLDS)
        candidates = [
            ("transfer: fitted on the training pairs alone", _predict(transfer, dev.x, True)),
            ("shipped design: fitted on the other dev folds", shipped),
        ]
        if dev.binary:
            candidates.append(
                ("transfer + dev: pairs and the other dev folds", with_training(train, dev))
            )
        for name, pred in candidates:
            found_stats = measured(pred, dev)
            out_rows.append([task, name, key, est(found_stats.get(key))])
    notes.append(
        f"{len(train.target)} training pairs read ({int(train.target.sum())} supported), "
        f"balanced over source and label; the transfer head's setting {setting} chosen by "
        "grouped cross-validation on them"
    )
    write_figures(
        args,
        "transfer_heads",
        "Stage 1: the shipped heads' design fitted on public training pairs",
        ["task", "head", "figure", "value"],
        out_rows,
        notes=notes,
        models=[model],
    )


if __name__ == "__main__":
    main()

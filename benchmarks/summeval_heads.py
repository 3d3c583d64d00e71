"""SummEval's four ratings: a head per rating over the judge's readings and the summary's
shape (`examples/small_judge/summary_features.toml`), against the same head without the
shape (`consistency_features.toml`, the previous design), a head over code alone with the
same shape (`benchmarks/metrics/summary_code_features.toml`) and the likelihood contrast read
alone.

    python benchmarks/summeval_heads.py

Every head figure is out of fold (documents dealt into 5 folds, each predicted by a head
fitted, its setting chosen too, on the other four); 95% intervals resample documents, and
the differences are paired on the same cases. The judge's readings come through the result
cache, so a second run costs only the fitting.

Figures: benchmarks/results/summeval_heads.json.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from harness import DATA_DIR, ROOT, SHIPPED_MODEL, add_out, write_figures
from heads import est, readings

from anvil_local.bench import stats
from anvil_local.bench.fit import design, out_of_fold
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

SMALL = ROOT / "examples" / "small_judge"
HEADS = {
    "shape": SMALL / "summary_features.toml",
    "previous": SMALL / "consistency_features.toml",
    "code": ROOT / "benchmarks" / "metrics" / "summary_code_features.toml",
}
RATINGS = ("coherence", "consistency", "fluency", "relevance")
CONTRAST = "Likelihood contrast"
FOLDS = 5


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model_default=SHIPPED_MODEL, out=False)
    p.add_argument("--docs", type=int, default=None, help="the first N documents only")
    add_out(p)
    args = p.parse_args()
    rows = read_cases(DATA_DIR / "summeval.jsonl")
    if args.docs:
        keep = list(dict.fromkeys(document_of(r) for r in rows))[: args.docs]
        rows = [r for r in rows if document_of(r) in keep]
    model = resolve_model(args.model)
    docs = [document_of(r) for r in rows]
    found = {k: readings(load_metric(path), rows, model)[0] for k, path in HEADS.items()}
    if any(len(f) != len(rows) for f in found.values()):
        raise SystemExit("a case errored: every head must read every case")
    table, notes, means = [], [], {k: [] for k in ("shape", "previous", "code", "contrast")}
    for rating in RATINGS:
        human = labels_of(rows, f"labels.{rating}", "summeval.jsonl")
        pred = {}
        for key in HEADS:
            d = design(found[key], human, docs, str(HEADS[key]))
            pred[key] = out_of_fold(d.x, d.target, d.docs, False, FOLDS)
        pred["contrast"] = np.asarray([f[CONTRAST] for f in found["shape"]])
        groups = stats.doc_groups(docs)

        def stat(p: np.ndarray, human: np.ndarray = human, groups: list = groups) -> Any:
            return stats.document_mean("spearman", p, human, groups)

        n = len(rows)
        cells = {k: stats.estimate(stat(v), groups, n) for k, v in pred.items()}
        for k, v in cells.items():
            means[k].append(v.value)
        versus_previous = stats.paired_difference(
            stat(pred["previous"]), stat(pred["shape"]), docs, n
        )
        versus_code = stats.paired_difference(stat(pred["code"]), stat(pred["shape"]), docs, n)
        table.append(
            [
                rating,
                est(cells["shape"]),
                est(cells["previous"]),
                est(cells["code"]),
                est(cells["contrast"]),
                est(versus_previous),
                est(versus_code),
            ]
        )
    table.append(
        ["mean of the four", *(round(float(np.mean(means[k])), 3) for k in means), None, None]
    )
    notes.append(
        "Per-document Spearman with the experts, out of fold; the two differences are the "
        "shape head minus the other, paired on the same cases."
    )
    write_figures(
        args,
        "summeval_heads",
        f"SummEval: a head per rating over the judge's readings and the summary's shape "
        f"({len(rows)} cases, {len(set(docs))} documents, {model.name})",
        [
            "rating",
            "head: judge + shape",
            "head: judge (previous)",
            "head: code + shape",
            "likelihood contrast alone",
            "shape head minus previous",
            "shape head minus code + shape",
        ],
        table,
        notes=notes,
        models=[model],
        settings={"folds": FOLDS, "heads": {k: str(v.relative_to(ROOT)) for k, v in HEADS.items()}},
    )
    print(json.dumps(table, default=str, indent=1))


if __name__ == "__main__":
    main()

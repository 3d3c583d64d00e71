"""Is the trained judge held back by its data or by itself? Adapters trained on different data
are asked the same question (the faithfulness question on the document's 120-word pieces, no
dev label): if their readings agree and their mean ranks no better than one of them, what
the data changed is not what limits the judge (where the runs share a start, as the README's
do, only that these pairs moved it little). A second reading asks the first adapter the
same question of another case's document: the judge's P(Yes) with no support, which the
contrast (own minus other, as log-odds) removes from its P(Yes) with support. A third reading
averages the first adapter's P(Yes) with the shipped head's P(consistent) (the untrained
judge's readings, `consistency_features.toml`, fitted out of fold on the dev labels): two
readings that share no weights, with no weight fitted between them.

    python benchmarks/judge_ceiling.py --adapter smollm2-135m-faithful \
        --adapter smollm2-135m-faithful-attributes [--adapter ...] [--task qags_xsum]

The adapters past the shipped one are the runs the benchmarks README describes (rebuilt from
its recipes, registered by `anvil train convert --register`). Figures:
benchmarks/results/judge_ceiling.json (QAGS-XSum), judge_ceiling.summedits.json.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from chunked_judge import CHUNKED
from harness import DATA_DIR, add_out, write_figures
from heads import est, measured, statistic
from trained_judge import BASE, FOLDS, READINGS, TASKS, code_features, features, scores

from anvil_local.bench import stats
from anvil_local.bench.fit import design, out_of_fold
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric


def log_odds(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(q / (1 - q))


def with_other_documents(rows: list) -> list:
    """Each case asked of the next document's text (documents in their first-seen order), so
    the summary meets a real article that does not support it."""
    docs = [document_of(r) for r in rows]
    order = list(dict.fromkeys(docs))
    text: dict[str, str] = {}
    for row, doc in zip(rows, docs, strict=True):
        text.setdefault(doc, row.case.input)
    following = {doc: text[order[(i + 1) % len(order)]] for i, doc in enumerate(order)}
    return [
        dataclasses.replace(row, case=dataclasses.replace(row.case, input=following[doc]))
        for row, doc in zip(rows, docs, strict=True)
    ]


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--adapter", action="append", required=True, help="catalogue name (2 or more)")
    p.add_argument("--task", choices=["qags_xsum", "summedits"], default="qags_xsum")
    add_out(p)
    args = p.parse_args()
    if len(args.adapter) < 2:
        p.error("give two adapters or more (--adapter NAME --adapter NAME)")
    models = [resolve_model(name) for name in args.adapter]
    question = load_metric(CHUNKED)
    data_name, label = TASKS[args.task]
    rows = read_cases(DATA_DIR / data_name)
    human = labels_of(rows, label, data_name)
    docs = [document_of(r) for r in rows]
    code = design(code_features(rows), human, docs, args.task)
    n_docs = len(set(docs))

    def paired(before: np.ndarray, after: np.ndarray, what: str) -> str:
        diff = stats.paired_difference(
            statistic(before, code), statistic(after, code), docs, len(rows)
        )
        return (
            f"{what}, auroc {diff.value:+.3f} [{diff.low:+.2f}, {diff.high:+.2f}] "
            f"(paired, {n_docs} documents)"
        )

    def row(reads: str, odds: np.ndarray) -> list:
        found = measured(1 / (1 + np.exp(-odds)), code)  # balanced accuracy cut at P = 0.5
        return [reads, est(found["auroc"]), est(found["balanced_accuracy"])]

    probs = {m.name: scores(question, rows, m)[0] for m in models}
    reads = {name: log_odds(p) for name, p in probs.items()}
    first = models[0].name
    out_rows = [row(name, pred) for name, pred in reads.items()]
    mean = np.mean(list(reads.values()), axis=0)
    out_rows.append(row(f"mean log-odds of the {len(models)} adapters", mean))
    notes = [paired(reads[first], mean, f"mean of the adapters minus {first}")]
    names = list(reads)
    pairs = [
        float(np.corrcoef(reads[a], reads[b])[0, 1])
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    notes.append(
        f"correlation of the adapters' log-odds, case by case: {min(pairs):.2f} to "
        f"{max(pairs):.2f} over {len(pairs)} pairs"
    )
    other = log_odds(scores(question, with_other_documents(rows), models[0])[0])
    out_rows.append(row(f"{first}, asked of another case's document", other))
    out_rows.append(row(f"{first}, own minus other document (log-odds)", reads[first] - other))
    notes.append(paired(reads[first], reads[first] - other, "own minus other, minus own"))
    notes.append(
        f"correlation of {first}'s log-odds with and without support: "
        f"{float(np.corrcoef(reads[first], other)[0, 1]):.2f}"
    )
    readings = design(features(load_metric(READINGS), rows, resolve_model(BASE)), human, docs, "")
    shipped = out_of_fold(readings.x, readings.target, readings.docs, True, FOLDS)
    blend = (shipped + probs[first]) / 2
    out_rows.append(
        row("shipped design: head over the untrained judge's readings", log_odds(shipped))
    )
    out_rows.append(
        row(f"mean of the shipped head's P(consistent) and {first}'s P(Yes)", log_odds(blend))
    )
    notes.append(paired(shipped, blend, "the mean minus the shipped head"))
    notes.append(paired(reads[first], blend, f"the mean minus {first}"))
    notes.append(
        f"correlation of the shipped head with {first} (log-odds): "
        f"{float(np.corrcoef(log_odds(shipped), reads[first])[0, 1]):.2f}"
    )
    for note in notes:
        print(note, flush=True)
    write_figures(
        args,
        "judge_ceiling",
        f"{args.task}: adapters trained on different data, the judge without support, and "
        "beside the shipped head (120-word pieces, no dev label)",
        ["reads", "AUROC", "bal. acc. at 0.5"],
        out_rows,
        notes=notes,
        models=models,
        variant=None if args.task == "qags_xsum" else args.task,
    )


if __name__ == "__main__":
    main()

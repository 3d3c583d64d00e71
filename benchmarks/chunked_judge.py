"""The trained judge reading the whole document against reading it in pieces: the faithfulness
question (`examples/small_judge/faithfulness.toml`) and the same question asked of each piece
of the document, best piece kept (`faithfulness_chunked.toml`), both on the trained adapter
with no dev label, beside the code head fitted out of fold on the dev labels (the figure the
judge must beat), per task.

    python benchmarks/chunked_judge.py [--task qags_xsum --task summedits --task summeval]

Paired differences resample the same documents for both sides; s/case is as first judged (a
cached result keeps its time). Figures:
benchmarks/results/chunked_judge.json.
"""

from __future__ import annotations

from harness import DATA_DIR, ROOT, add_out, write_figures
from heads import est, measured, statistic
from trained_judge import FOLDS, QUESTION, TASKS, code_features, scores

from anvil_local.bench import stats
from anvil_local.bench.fit import design, out_of_fold
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

CHUNKED = ROOT / "examples" / "small_judge" / "faithfulness_chunked.toml"


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--task", action="append", choices=sorted(TASKS), help="default: all three")
    add_out(p)
    args = p.parse_args()
    whole_metric, chunked_metric = load_metric(QUESTION), load_metric(CHUNKED)
    model = resolve_model(chunked_metric.model)
    out_rows, notes = [], []
    for task in args.task or list(TASKS):
        data_name, label = TASKS[task]
        rows = read_cases(DATA_DIR / data_name)
        human = labels_of(rows, label, data_name)
        docs = [document_of(r) for r in rows]
        code = design(code_features(rows), human, docs, task)
        key = "auroc" if code.binary else "doc_spearman"
        code_pred = out_of_fold(code.x, code.target, code.docs, code.binary, FOLDS)
        whole, whole_cost = scores(whole_metric, rows, model)
        chunked, chunked_cost = scores(chunked_metric, rows, model)
        for name, pred, cost in (
            ("whole document", whole, whole_cost),
            (f"pieces of {chunked_metric.words} words, best kept", chunked, chunked_cost),
            ("code head, dev labels (out of fold)", code_pred, None),
        ):
            found = measured(pred, code)
            out_rows.append(
                [
                    task,
                    name,
                    key,
                    est(found.get(key)),
                    est(found.get("balanced_accuracy")) if code.binary else None,
                    round(cost["evaluated_tokens"], 1) if cost else None,
                    round(cost["seconds"], 3) if cost else None,
                ]
            )
        for other_name, other in (("whole document", whole), ("code head", code_pred)):
            diff = stats.paired_difference(
                statistic(other, code), statistic(chunked, code), docs, len(rows)
            )
            notes.append(
                f"{task}: pieces minus {other_name}, {key} {diff.value:+.3f} "
                f"[{diff.low:+.2f}, {diff.high:+.2f}] (paired, {len(set(docs))} documents)"
            )
            print(notes[-1], flush=True)
    write_figures(
        args,
        "chunked_judge",
        f"The trained judge ({model.name}) on the whole document and on its pieces, no dev label",
        ["task", "reads", "figure", "value", "bal. acc. at 0.5", "tokens/case", "s/case"],
        out_rows,
        formats={"s/case": ".3f"},
        notes=notes,
        models=[model],
    )


if __name__ == "__main__":
    main()

"""The trained judge reading the whole document against reading it in pieces: the faithfulness
question (`examples/small_judge/faithfulness.toml`), the same question asked of each piece
of the document, best piece kept (`faithfulness_chunked.toml`), and asked of each sentence of
the summary against each piece, least supported sentence kept (`faithfulness_sentences.toml`),
all on the trained adapter with no dev label, beside the code head fitted out of fold on the
dev labels (the figure the judge must beat), per task.

    python benchmarks/chunked_judge.py [--task qags_xsum --task summedits --task summeval]
        [--adapter NAME]

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
SENTENCES = ROOT / "examples" / "small_judge" / "faithfulness_sentences.toml"


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--task", action="append", choices=sorted(TASKS), help="default: all three")
    p.add_argument("--adapter", help="another trained judge (default: the files' own)")
    add_out(p)
    args = p.parse_args()
    whole_metric, chunked_metric = load_metric(QUESTION), load_metric(CHUNKED)
    sentence_metric = load_metric(SENTENCES)
    model = resolve_model(args.adapter or chunked_metric.model)
    out_rows, notes = [], []
    for task in args.task or list(TASKS):
        data_name, label = TASKS[task]
        rows = read_cases(DATA_DIR / data_name)
        human = labels_of(rows, label, data_name)
        docs = [document_of(r) for r in rows]
        code_found = code_features(rows)
        code = design(code_found, human, docs, task)
        key = "auroc" if code.binary else "doc_spearman"
        code_pred = out_of_fold(code.x, code.target, code.docs, code.binary, FOLDS)
        whole, whole_cost = scores(whole_metric, rows, model)
        chunked, chunked_cost = scores(chunked_metric, rows, model)
        each, each_cost = scores(sentence_metric, rows, model)
        both = design(
            [{"each sentence": float(e), **c} for e, c in zip(each, code_found, strict=True)],
            human,
            docs,
            f"{task}: sentences + code",
        )
        both_pred = out_of_fold(both.x, both.target, both.docs, both.binary, FOLDS)
        for name, pred, cost in (
            ("whole document", whole, whole_cost),
            (f"pieces of {chunked_metric.words} words, best kept", chunked, chunked_cost),
            ("each sentence against the pieces, least supported kept", each, each_cost),
            ("code head, dev labels (out of fold)", code_pred, None),
            ("head over each-sentence P(Yes) and code, dev labels (out of fold)", both_pred, None),
        ):
            found = measured(pred, code)
            out_rows.append(
                [
                    task,
                    name,
                    key,
                    est(found.get(key)),
                    est(found.get("balanced_accuracy")) if code.binary else None,
                    est(found.get("balanced_accuracy_fitted")) if code.binary else None,
                    round(cost["evaluated_tokens"], 1) if cost else None,
                    round(cost["seconds"], 3) if cost else None,
                ]
            )
        for mine_name, mine, other_name, other in (
            ("pieces", chunked, "whole document", whole),
            ("pieces", chunked, "code head", code_pred),
            ("sentences", each, "pieces", chunked),
            ("sentences", each, "code head", code_pred),
            ("sentences + code head", both_pred, "code head", code_pred),
        ):
            diff = stats.paired_difference(
                statistic(other, code), statistic(mine, code), docs, len(rows)
            )
            notes.append(
                f"{task}: {mine_name} minus {other_name}, {key} {diff.value:+.3f} "
                f"[{diff.low:+.2f}, {diff.high:+.2f}] (paired, {len(set(docs))} documents)"
            )
            print(notes[-1], flush=True)
    write_figures(
        args,
        "chunked_judge",
        f"The trained judge ({model.name}) on the whole document and on its pieces, no dev label",
        [
            "task",
            "reads",
            "figure",
            "value",
            "bal. acc. at 0.5",
            "bal. acc. (cut fitted on other documents)",
            "tokens/case",
            "s/case",
        ],
        out_rows,
        variant=args.adapter,
        formats={"s/case": ".3f"},
        notes=notes,
        models=[model],
    )


if __name__ == "__main__":
    main()

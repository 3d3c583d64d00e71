"""Two trained adapters asked the same faithfulness question on the same cases, paired: does a
cheaper or further-trained adapter judge as well as the one it would replace? Each task's
figure is the question's P(Yes) against the human labels, with no dev label (neither adapter
saw these documents); the difference resamples the same documents for both. `--pieces` asks
the question of the document's 120-word pieces (`faithfulness_chunked.toml`) instead of the
whole document.

    python benchmarks/adapter_compare.py --before smollm2-135m-faithful \
        --after smollm2-135m-faithful-lean [--task qags_xsum --task summedits --task summeval]
        [--pieces]

Figures: benchmarks/results/adapter_compare.json (with --pieces, or an --after other than
the lean run: adapter_compare.<after>[-pieces].json).
"""

from __future__ import annotations

import numpy as np
from chunked_judge import CHUNKED
from harness import DATA_DIR, add_out, write_figures
from heads import est, measured, statistic
from judge_ceiling import log_odds
from trained_judge import QUESTION, TASKS, code_features, scores

from anvil_local.bench import stats
from anvil_local.bench.fit import design
from anvil_local.bench.suite import document_of, labels_of
from anvil_local.models import resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--before", required=True, help="the adapter now shipped (catalogue name)")
    p.add_argument("--after", required=True, help="the adapter that would replace it")
    p.add_argument("--task", action="append", choices=sorted(TASKS), help="default: all three")
    p.add_argument("--pieces", action="store_true", help="ask each 120-word piece, best kept")
    add_out(p)
    args = p.parse_args()
    models = {"before": resolve_model(args.before), "after": resolve_model(args.after)}
    question = load_metric(CHUNKED if args.pieces else QUESTION)
    reads = "the faithfulness question's P(Yes)" + (" on 120-word pieces" if args.pieces else "")
    out_rows, notes = [], []
    for task in args.task or list(TASKS):
        data_name, label = TASKS[task]
        rows = read_cases(DATA_DIR / data_name)
        human = labels_of(rows, label, data_name)
        docs = [document_of(r) for r in rows]
        code = design(code_features(rows), human, docs, task)  # the labels, as the heads see them
        key = "auroc" if code.binary else "doc_spearman"
        preds = {}
        for side, model in models.items():
            preds[side], _ = scores(question, rows, model)  # cached runs: no time to report
            found = measured(preds[side], code)
            out_rows.append(
                [
                    task,
                    model.name,
                    key,
                    est(found.get(key)),
                    est(found.get("balanced_accuracy")) if code.binary else None,
                ]
            )
        diff = stats.paired_difference(
            statistic(preds["before"], code), statistic(preds["after"], code), docs, len(rows)
        )
        notes.append(
            f"{task}: {args.after} minus {args.before}, {key} {diff.value:+.3f} "
            f"[{diff.low:+.2f}, {diff.high:+.2f}] (paired, {len(set(docs))} documents)"
        )
        print(notes[-1], flush=True)
        agree = np.corrcoef(log_odds(preds["before"]), log_odds(preds["after"]))[0, 1]
        notes.append(f"{task}: the two adapters' log-odds correlate at {agree:.2f}, case by case")
        print(notes[-1], flush=True)
    write_figures(
        args,
        "adapter_compare",
        f"{args.after} against {args.before}: {reads}, no dev label",
        ["task", "adapter", "figure", "value", "bal. acc. at 0.5"],
        out_rows,
        notes=notes,
        models=list(models.values()),
        variant=variant(args.after, args.pieces),
    )


def variant(after: str, pieces: bool) -> str | None:
    """The lean-against-seven comparison the README quotes keeps the plain file."""
    if after == "smollm2-135m-faithful-lean" and not pieces:
        return None
    return after + ("-pieces" if pieces else "")


if __name__ == "__main__":
    main()

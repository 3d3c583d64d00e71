"""G-Eval panel against the same files alone: agreement with the SummEval experts, tokens, time.

    python benchmarks/panel_agreement.py --model smollm2-135m-instruct --docs 10

The four SummEval G-Eval files (`examples/geval/*.toml`) run alone, then as one panel
(`examples/geval/summeval_panel.toml`), on the same cases with the same loaded model, no cache,
no reasons. For each dimension: the per-document Spearman correlation with the expert rating
(mean over documents) of both layouts, and the paired difference (panel minus alone) with a 95%
interval from the same resampled documents. Names are shared between the two layouts, so they
cannot run in one `anvil bench`; this script pairs them instead.

Figures: benchmarks/results/panel_agreement.<model>.json (one file per model).
"""

from __future__ import annotations

import numpy as np
from harness import (
    Timer,
    fresh_cache,
    geval_files,
    geval_panel,
    parser,
    summeval_rows,
    write_figures,
)

from anvil_local import LLMTestCase, evaluate
from anvil_local.bench import stats
from anvil_local.models import get_judge

COLUMNS = [
    "dimension",
    "alone: doc Spearman",
    "panel: doc Spearman",
    "panel - alone [95% CI]",
]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=10, help="documents (16 summaries each)")
    args = p.parse_args()
    rows = summeval_rows(args.data, args.docs)
    cases = [
        LLMTestCase(input=r["input"], actual_output=r["actual_output"], id=r["id"]) for r in rows
    ]
    docs = [r["doc"] for r in rows]
    judge = get_judge(args.model)
    layouts = {"alone": geval_files(), "panel": geval_panel()}
    print(f"{len(cases)} SummEval cases of {len(set(docs))} documents, model {judge.model.name}")
    scores: dict[str, dict[tuple[str, str], float]] = {}
    notes = []
    with fresh_cache():
        for layout, metrics in layouts.items():
            judge.runtime._tokens, judge.runtime._exact = [], 0  # both start on an empty cache
            with Timer() as t:
                out = evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False)
            tokens = out.usage.evaluated_tokens / len(cases)
            line = (
                f"{layout}: {t.seconds / len(cases):.2f} s/case, {tokens:.0f} tokens evaluated/case"
            )
            print(line)
            notes.append(line)
            scores[layout] = {(x.metric, x.case_id): x.result.score for x in out.lines}
    groups = stats.doc_groups(docs)
    print("| dimension | alone: doc Spearman | panel: doc Spearman | panel - alone [95% CI] |")
    print("|---|---|---|---|")
    table = []
    for metric in layouts["alone"]:
        label = metric.name.lower()
        human = np.array([r["labels"][label] for r in rows], dtype=float)
        pred = {
            layout: np.array([scores[layout][(metric.name, c.id)] for c in cases])
            for layout in layouts
        }
        stat = {k: stats.document_mean("spearman", v, human, groups) for k, v in pred.items()}
        every = np.arange(len(cases))
        diff = stats.paired_difference(stat["alone"], stat["panel"], docs, len(cases))
        print(
            f"| {metric.name} | {stat['alone'](every):+.3f} | {stat['panel'](every):+.3f} "
            f"| {diff.value:+.3f} [{diff.low:+.2f}, {diff.high:+.2f}] |"
        )
        table.append(
            [
                metric.name,
                stat["alone"](every),
                stat["panel"](every),
                {"value": diff.value, "low": diff.low, "high": diff.high},
            ]
        )
    write_figures(
        args,
        "panel_agreement",
        f"The four SummEval G-Eval files alone and as one panel, {judge.model.name}, "
        f"{len(cases)} summaries of {len(set(docs))} documents: per-document Spearman with "
        "the experts",
        COLUMNS,
        table,
        variant=judge.model.name,
        formats={c: "+.3f" for c in COLUMNS[1:]},
        notes=notes,
        models=[judge],
        settings={"docs": args.docs, "threads": judge.runtime.llama.n_threads},
    )


if __name__ == "__main__":
    main()

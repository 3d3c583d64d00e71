"""G-Eval panel against the same files alone: agreement with the SummEval experts, tokens, time.

    python benchmarks/panel_agreement.py --model smollm2-135m-instruct --docs 10

The four SummEval G-Eval files (`examples/geval/*.toml`) run alone, then as one panel
(`examples/geval/summeval_panel.toml`), on the same cases with the same loaded model, no cache,
no reasons. For each dimension: the per-document Spearman correlation with the expert rating
(mean over documents) of both layouts, and the paired difference (panel minus alone) with a 95%
interval from the same resampled documents. Names are shared between the two layouts, so they
cannot run in one `anvil bench`; this script pairs them instead.
"""

from __future__ import annotations

import json

import numpy as np
from common import DEFAULT_DATA, ROOT, Timer, fresh_cache, parser

from anvil_local import LLMTestCase, evaluate, load_metrics
from anvil_local.bench import stats
from anvil_local.judge.session import get_judge
from anvil_local.spec import load_metric

NAMES = ("coherence", "consistency", "fluency", "relevance")


def rows_of(path, docs: int) -> list[dict]:
    chosen: list[str] = []
    rows = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["doc"] not in chosen:
            if len(chosen) == docs:
                continue
            chosen.append(row["doc"])
        rows.append(row)
    return rows


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=10, help="documents (16 summaries each)")
    args = p.parse_args()
    rows = rows_of(args.data or DEFAULT_DATA, args.docs)
    cases = [
        LLMTestCase(input=r["input"], actual_output=r["actual_output"], id=r["id"]) for r in rows
    ]
    docs = [r["doc"] for r in rows]
    judge = get_judge(args.model)
    layouts = {
        "alone": [load_metric(ROOT / "examples" / "geval" / f"{n}.toml") for n in NAMES],
        "panel": load_metrics(ROOT / "examples" / "geval" / "summeval_panel.toml"),
    }
    print(f"{len(cases)} SummEval cases of {len(set(docs))} documents, model {judge.model.name}")
    scores: dict[str, dict[tuple[str, str], float]] = {}
    with fresh_cache():
        for layout, metrics in layouts.items():
            judge.runtime._tokens, judge.runtime._exact = [], 0  # both start on an empty cache
            with Timer() as t:
                out = evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False)
            tokens = out.usage.evaluated_tokens / len(cases)
            print(
                f"{layout}: {t.seconds / len(cases):.2f} s/case, {tokens:.0f} tokens evaluated/case"
            )
            scores[layout] = {(x.metric, x.case_id): x.result.score for x in out.lines}
    groups = stats.doc_groups(docs)
    print("| dimension | alone: doc Spearman | panel: doc Spearman | panel - alone [95% CI] |")
    print("|---|---|---|---|")
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


if __name__ == "__main__":
    main()

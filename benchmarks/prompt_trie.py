"""Tokens llama.cpp evaluates against the prompt trie (the least any order could read), for
the shipped workloads, with the scheduler's order and with plain case-by-case order.

    python benchmarks/prompt_trie.py [--articles 3] [--qags 3] [--only TEXT]
                                     [--model smollm2-135m-instruct]

Workloads: the four SummEval G-Eval metrics on 16 summaries of each of `--articles`
documents; the model-at-every-node headings DAG (`examples/headings_llm.toml`, a task node
included) on the 12 meeting summaries; the likelihood contrast on the SummEval cases; the
shipped features heads (XSum consistency on the first `--qags` QAGS-XSum cases, one document
each; SummEval coherence on the SummEval cases). `--only` keeps the workloads whose label
holds TEXT. Each run starts on an empty KV cache and an empty trie, with no result cache and
no reasons.

Figures: benchmarks/results/prompt_trie.json.
"""

from __future__ import annotations

from harness import (
    DATA_DIR,
    ROOT,
    Timer,
    add_articles,
    fresh_cache,
    parser,
    speed_workloads,
    summeval_cases,
    write_figures,
)

from anvil_local import BaseMetric, evaluate, load_metric
from anvil_local.metrics.likelihood import LikelihoodMetric
from anvil_local.models import get_judge

COLUMNS = [
    "workload",
    "order",
    "cases",
    "evaluated/case",
    "trie/case",
    "evaluated/trie",
    "s/case",
]


def run(judge, cases, metrics) -> tuple[float, object]:
    judge.runtime._tokens, judge.runtime._exact = [], 0
    judge.trie.__init__()
    with fresh_cache(), Timer() as t:
        outcome = evaluate(cases, metrics, model=judge, use_cache=False, include_reason=False)
    errors = sum(1 for line in outcome.lines if line.result.error)
    if errors:
        raise SystemExit(f"{errors} pairs failed")
    return t.seconds, outcome.usage


HEADS = ROOT / "examples" / "small_judge"


def head_workloads(data, articles: int, qags: int) -> list[tuple[str, list, list]]:
    """The shipped features heads: each reads the document for two likelihood members."""
    return [
        (
            "XSum consistency head, QAGS-XSum",
            summeval_cases(DATA_DIR / "qags_xsum.jsonl", qags, per_article=1),
            [load_metric(HEADS / "consistency_head_xsum.toml")],
        ),
        (
            "SummEval coherence head, SummEval",
            summeval_cases(data, articles),
            [load_metric(HEADS / "coherence_head_summeval.toml")],
        ),
    ]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    add_articles(p, 3)
    p.add_argument("--qags", type=int, default=3, help="QAGS-XSum cases for the XSum head")
    p.add_argument("--only", default="", help="run only the workloads whose label holds this")
    args = p.parse_args()
    judge = get_judge(args.model)
    workloads = speed_workloads(args.data, args.articles)
    workloads += head_workloads(args.data, args.articles, args.qags)
    workloads = [w for w in workloads if args.only in w[0]]
    print(f"model {judge.model.name}; each run on an empty KV cache")
    print("| workload | order | cases | evaluated/case | trie/case | evaluated/trie | s/case |")
    print("|---|---|---|---|---|---|---|")
    prepare = LikelihoodMetric.prepare
    rows = []
    for label, cases, metrics in workloads:
        LikelihoodMetric.prepare = prepare  # as shipped, whatever the last row switched off
        orders = ["scheduler"]
        if any(m.metric_major or type(m).prepare is not BaseMetric.prepare for m in metrics):
            orders.append("case by case")
        layout = [m.metric_major for m in metrics]
        for order in orders:
            # case by case: no metric-major G-Eval, no prepared unconditional reads
            for metric, major in zip(metrics, layout, strict=True):
                metric.metric_major = major and order == "scheduler"
            LikelihoodMetric.prepare = prepare if order == "scheduler" else BaseMetric.prepare
            seconds, usage = run(judge, cases, metrics)
            n = len(cases)
            print(
                f"| {label} | {order} | {n} | {usage.evaluated_tokens / n:.0f} "
                f"| {usage.distinct_tokens / n:.0f} "
                f"| {usage.evaluated_tokens / usage.distinct_tokens:.3f} | {seconds / n:.2f} |",
                flush=True,
            )
            rows.append(
                [
                    label,
                    order,
                    n,
                    usage.evaluated_tokens / n,
                    usage.distinct_tokens / n,
                    usage.evaluated_tokens / usage.distinct_tokens,
                    seconds / n,
                ]
            )
    LikelihoodMetric.prepare = prepare
    write_figures(
        args,
        "prompt_trie",
        "Tokens evaluated against the prompt trie, scheduler order and case by case, "
        "from an empty KV cache",
        COLUMNS,
        rows,
        formats={
            "evaluated/case": ".0f",
            "trie/case": ".0f",
            "evaluated/trie": ".3f",
            "s/case": ".2f",
        },
        units={"evaluated/case": "tokens", "trie/case": "tokens", "s/case": "s"},
        models=[judge],
        settings={
            "articles": args.articles,
            "qags": args.qags,
            "only": args.only,
            "threads": judge.runtime.llama.n_threads,
        },
    )


if __name__ == "__main__":
    main()

"""End to end: `evaluate()` seconds per case in each weight format of one model.

    python benchmarks/format_eval.py --model smollm2-135m-instruct --formats Q8_0 Q4_0

Two workloads, no cache, no reasons: the 16 summaries of `examples/summeval_sample.jsonl` with
the four G-Eval files, and the 4 meeting summaries with the model headings graph. The formats
run in interleaved rounds (original, then each converted file, repeated), and each keeps its
best round, so a noisy neighbour slows them alike.

Figures: benchmarks/results/format_eval.json.
"""

from __future__ import annotations

from harness import ROOT, SHIPPED_MODEL, Timer, add_rounds, parser, write_figures

from anvil_local import evaluate, load_metric
from anvil_local.models import get_entry
from anvil_local.run.dataset import read_cases

WORKLOADS = {
    "SummEval, 4 G-Eval": (
        "examples/summeval_sample.jsonl",
        [f"examples/geval/{n}.toml" for n in ("coherence", "consistency", "fluency", "relevance")],
    ),
    "headings DAG (model)": ("examples/meeting_summaries.jsonl", ["examples/headings_llm.toml"]),
}
COLUMNS = ["workload", "model", "s/case", "vs the shipped file"]


def main() -> None:
    p = parser(
        __doc__.splitlines()[0],
        data=False,
        model_default=SHIPPED_MODEL,
        model_help=f"catalogue name (default: {SHIPPED_MODEL})",
    )
    p.add_argument("--formats", nargs="+", default=["Q8_0", "Q4_0"])
    add_rounds(p, 2, "interleaved rounds")
    args = p.parse_args()
    names = [args.model] + [f"{args.model}-{f.lower()}" for f in args.formats]
    entries = [get_entry(name) for name in names]  # a missing conversion fails before timing
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.rounds):
        for workload, (data, files) in WORKLOADS.items():
            rows = read_cases(ROOT / data)
            metrics = [load_metric(ROOT / f) for f in files]
            for name in names:
                with Timer() as timer:
                    evaluate(rows, metrics, model=name, use_cache=False, include_reason=False)
                per_case = timer.seconds / len(rows)
                key = (workload, name)
                best[key] = min(best.get(key, float("inf")), per_case)
    print("| workload | model | s/case | vs the shipped file |")
    print("|---|---|---|---|")
    table = []
    for workload in WORKLOADS:
        base = best[(workload, args.model)]
        for name in names:
            value = best[(workload, name)]
            print(f"| {workload} | {name} | {value:.2f} | {base / value:.2f}x faster |")
            table.append([workload, name, value, base / value])
    write_figures(
        args,
        "format_eval",
        f"evaluate() seconds per case in each format of {args.model}, best of "
        f"{args.rounds} interleaved rounds",
        COLUMNS,
        table,
        formats={"s/case": ".2f", "vs the shipped file": "{:.2f}x faster"},
        units={"s/case": "s"},
        models=entries,
        settings={"formats": args.formats, "rounds": args.rounds},
    )


if __name__ == "__main__":
    main()

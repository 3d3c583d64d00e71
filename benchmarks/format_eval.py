"""End to end: `evaluate()` seconds per case in each weight format of one model.

    python benchmarks/format_eval.py --model smollm2-135m-instruct --formats Q8_0 Q4_0

Two workloads, no cache, no reasons: the 16 summaries of `examples/summeval_sample.jsonl` with
the four G-Eval files, and the 4 meeting summaries with the model headings graph. The formats
run in interleaved rounds (original, then each converted file, repeated), and each keeps its
best round, so a noisy neighbour slows them alike.
"""

from __future__ import annotations

import argparse

from anvil_local.catalogue import get_entry
from common import ROOT, Timer

from anvil_local.run.dataset import read_cases
from anvil_local.run.evaluate import evaluate
from anvil_local.spec import load_metric

WORKLOADS = {
    "SummEval, 4 G-Eval": (
        "examples/summeval_sample.jsonl",
        [f"examples/geval/{n}.toml" for n in ("coherence", "consistency", "fluency", "relevance")],
    ),
    "headings DAG (model)": ("examples/meeting_summaries.jsonl", ["examples/headings_llm.toml"]),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m-instruct", help="catalogue name")
    p.add_argument("--formats", nargs="+", default=["Q8_0", "Q4_0"])
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    names = [args.model] + [f"{args.model}-{f.lower()}" for f in args.formats]
    for name in names:
        get_entry(name)  # a missing conversion fails before any timing
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
    for workload in WORKLOADS:
        base = best[(workload, args.model)]
        for name in names:
            value = best[(workload, name)]
            print(f"| {workload} | {name} | {value:.2f} | {base / value:.2f}x faster |")


if __name__ == "__main__":
    main()

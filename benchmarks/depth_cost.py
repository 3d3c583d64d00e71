"""What one prompt token costs where anvil reads it: milliseconds per token for the batch
shapes and depths of the shipped workloads, read through anvil's own runtime (exact calls).

    python benchmarks/depth_cost.py --model smollm2-135m-instruct

The raw ceiling that `vs_deepeval.py` prints reads 256 tokens from position 0. A G-Eval
panel member reads its 15-token cue at depth ~1,150 (the definitions, the article and the
summary before it), a summary is ~95 tokens at that depth, and a DAG node's question is
~45 tokens at depth ~100. Each shape is timed on the same loaded model, in turns, so the
ratios between rows hold on a noisy machine even when the absolute figures move.

Figures: benchmarks/results/depth_cost.<model>.json (one file per model).
"""

from __future__ import annotations

import numpy as np
from harness import Timer, add_rounds, parser, write_figures

from anvil_local.models import get_judge

# (what it stands for, depth, tokens read at that depth)
SHAPES = [
    ("the raw ceiling's probe", 0, 256),
    ("a short batch at the start", 0, 15),
    ("a DAG node's question", 100, 45),
    ("a summary in a panel prompt", 1100, 95),
    ("a panel member's cue", 1150, 15),
]
COLUMNS = ["read", "depth", "tokens", "ms/token", "against the probe"]


def main() -> None:
    p = parser(__doc__.splitlines()[0], data=False)
    add_rounds(p, 12, "timed reads of each shape")
    args = p.parse_args()
    judge = get_judge(args.model)
    runtime = judge.runtime
    rng = np.random.default_rng(0)
    base = [int(t) for t in rng.integers(1000, 20000, size=1400)]
    totals = {shape: 0.0 for shape in SHAPES}
    for turn in range(args.rounds + 1):  # the first turn warms up and is not counted
        for shape in SHAPES:
            _, depth, size = shape
            prefix = base[:depth]
            if depth:
                runtime.prefill(prefix)
            # a suffix never read before at this depth, so exactly `size` tokens are decoded
            suffix = [int(t) for t in rng.integers(1000, 20000, size=size)]
            with Timer() as t:
                _, reused, evaluated = runtime.evaluate(prefix + suffix)
            assert evaluated == size, (reused, evaluated)
            if turn:
                totals[shape] += t.seconds
    threads = runtime.llama.n_threads
    print(f"model {judge.model.name}, {threads} threads")
    print("| read | depth | tokens | ms/token | against the probe |")
    print("|---|---|---|---|---|")
    probe = totals[SHAPES[0]] / (args.rounds * SHAPES[0][2])
    rows = []
    for shape in SHAPES:
        name, depth, size = shape
        per_token = totals[shape] / (args.rounds * size)
        print(f"| {name} | {depth} | {size} | {per_token * 1000:.2f} | {per_token / probe:.2f}x |")
        rows.append([name, depth, size, per_token * 1000, per_token / probe])
    write_figures(
        args,
        "depth_cost",
        f"What a prompt token costs by depth and batch size, {judge.model.name}",
        COLUMNS,
        rows,
        variant=judge.model.name,
        formats={"ms/token": ".2f", "against the probe": "{:.2f}x"},
        units={"depth": "tokens", "tokens": "tokens", "ms/token": "ms"},
        models=[judge],
        settings={"rounds": args.rounds, "threads": threads},
    )


if __name__ == "__main__":
    main()

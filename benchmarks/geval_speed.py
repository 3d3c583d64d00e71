"""Issue: G-Eval seconds per case on 20 SummEval cases, with and without a reason; and the
tokens llama.cpp evaluates per case when the four SummEval G-Eval metrics (coherence,
consistency, fluency, relevance) run on the same case, against the case's own tokens.

    python benchmarks/geval_speed.py [--data benchmarks/data/summeval.jsonl] [--cases 20]

Figures: benchmarks/results/geval_speed.json.
"""

from __future__ import annotations

from harness import Timer, fresh_cache, geval_files, parser, summeval_cases, write_figures

from anvil_local.judge import Prompt
from anvil_local.metrics.layout import case_blocks
from anvil_local.models import get_judge


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--cases", type=int, default=20, help="SummEval cases (default: 20)")
    args = p.parse_args()
    cases = summeval_cases(args.data, articles=2)[: args.cases]
    metrics = geval_files()
    judge = get_judge(args.model)
    coherence = metrics[0]
    rows = []

    print(f"{len(cases)} SummEval cases, G-Eval coherence (1-5), model {judge.model.name}")
    for label, reason in (("without reason", False), ("with reason", True)):
        with fresh_cache(), Timer() as t:
            for case in cases:
                coherence.run(case, judge, include_reason=reason)
        print(f"  {label:<15} {t.seconds / len(cases):6.3f} s per case")
        rows.append([f"coherence alone, {label}: s per case", round(t.seconds / len(cases), 3)])

    print("four G-Eval metrics per case (no reasons), cases in file order:")
    totals = {"evaluated": 0, "prompt": 0, "case": 0, "seconds": 0.0}
    with fresh_cache():
        for case in cases:
            case_tokens = len(
                judge.prompt_tokens(Prompt(case_blocks(case, coherence.evaluation_params), ""))
            )
            with Timer() as t:
                usages = [m.run(case, judge, include_reason=False).usage for m in metrics]
            totals["evaluated"] += sum(u.evaluated_tokens for u in usages)
            totals["prompt"] += sum(u.prompt_tokens for u in usages)
            totals["case"] += case_tokens
            totals["seconds"] += t.seconds
    n = len(cases)
    print(f"  tokens evaluated per case      {totals['evaluated'] / n:8.1f}")
    print(f"  the case's own tokens          {totals['case'] / n:8.1f}  (header + input + output)")
    print(f"  prompt tokens of the 4 calls   {totals['prompt'] / n:8.1f}")
    print(f"  seconds per case (4 metrics)   {totals['seconds'] / n:8.3f}")
    rows += [
        ["4 metrics: tokens evaluated per case", round(totals["evaluated"] / n, 1)],
        ["4 metrics: the case's own tokens (header, input, output)", round(totals["case"] / n, 1)],
        ["4 metrics: prompt tokens of the 4 calls", round(totals["prompt"] / n, 1)],
        ["4 metrics: seconds per case", round(totals["seconds"] / n, 3)],
    ]
    write_figures(
        args,
        "geval_speed",
        f"G-Eval on {n} SummEval cases: coherence alone with and without a reason, then the "
        "four files on each case in turn",
        ["figure", "value"],
        rows,
        models=[judge],
        settings={"cases": n},
    )


if __name__ == "__main__":
    main()

"""Issue: `evaluate()` on 48 SummEval cases (3 articles x 16 summaries) with the four G-Eval
metrics: seconds per case with 1 and 2 worker processes, tokens evaluated against the prompts'
total tokens, and a second, fully cached run.

    python benchmarks/eval_summeval.py [--data benchmarks/data/summeval.jsonl] [--articles 3]

Figures: benchmarks/results/eval_summeval.json.
"""

from __future__ import annotations

from harness import (
    Timer,
    add_articles,
    fresh_cache,
    geval_files,
    line_models,
    parser,
    summeval_cases,
    write_figures,
)

from anvil_local import evaluate

COLUMNS = [
    "jobs",
    "s/case",
    "seconds",
    "errors",
    "tokens evaluated",
    "prompt tokens",
    "evaluated share",
    "calls",
    "second run from cache",
    "second run seconds",
]


def main() -> None:
    p = parser(__doc__)
    add_articles(p, 3)
    p.add_argument("--reason", action="store_true", help="also generate reasons")
    args = p.parse_args()
    cases = summeval_cases(args.data, articles=args.articles)
    metrics = geval_files()
    reason = None if args.reason else False
    n = len(cases)
    title = (
        f"{n} SummEval cases x {len(metrics)} G-Eval metrics, "
        f"reasons {'on' if args.reason else 'off'}"
    )
    print(title)
    rows = []
    for jobs in (1, 2):
        with fresh_cache():
            with Timer() as first:
                result = evaluate(
                    cases, metrics, model=args.model, jobs=jobs, include_reason=reason
                )
            with Timer() as second:
                cached = evaluate(
                    cases, metrics, model=args.model, jobs=jobs, include_reason=reason
                )
        u = result.usage
        errors = sum(1 for line in result.lines if line.result.error)
        print(
            f"--jobs {jobs}: {first.seconds / n:6.3f} s per case ({first.seconds:.1f} s), "
            f"{errors} errors"
        )
        print(
            f"  tokens evaluated {u.evaluated_tokens} of {u.prompt_tokens} prompt tokens "
            f"({u.evaluated_tokens / u.prompt_tokens:.1%}), {u.calls} calls"
        )
        print(
            f"  second run: {cached.cached} of {len(cached.lines)} from cache "
            f"in {second.seconds:.2f} s"
        )
        rows.append(
            [
                jobs,
                first.seconds / n,
                first.seconds,
                errors,
                u.evaluated_tokens,
                u.prompt_tokens,
                u.evaluated_tokens / u.prompt_tokens,
                u.calls,
                f"{cached.cached} of {len(cached.lines)}",
                second.seconds,
            ]
        )
    write_figures(
        args,
        "eval_summeval",
        f"evaluate() on {title}: 1 and 2 worker processes, then the same run from the cache",
        COLUMNS,
        rows,
        formats={
            "s/case": ".3f",
            "seconds": ".1f",
            "evaluated share": ".1%",
            "second run seconds": ".2f",
        },
        units={
            "s/case": "s",
            "seconds": "s",
            "tokens evaluated": "tokens",
            "prompt tokens": "tokens",
            "second run seconds": "s",
        },
        models=line_models(result),
        settings={"articles": args.articles, "reason": args.reason},
    )


if __name__ == "__main__":
    main()

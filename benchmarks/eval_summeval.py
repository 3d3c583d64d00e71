"""Issue: `evaluate()` on 48 SummEval cases (3 articles x 16 summaries) with the four G-Eval
metrics: seconds per case with 1 and 2 worker processes, tokens evaluated against the prompts'
total tokens, and a second, fully cached run.

    python benchmarks/eval_summeval.py [--data ../shared/data/summeval.jsonl] [--articles 3]
"""

from __future__ import annotations

from common import ROOT, Timer, fresh_cache, parser, summeval_cases

from anvil_local import evaluate
from anvil_local.spec import load_metric

NAMES = ("coherence", "consistency", "fluency", "relevance")


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--articles", type=int, default=3)
    p.add_argument("--reason", action="store_true", help="also generate reasons")
    args = p.parse_args()
    cases = summeval_cases(args.data, articles=args.articles)
    metrics = [load_metric(ROOT / "examples" / "geval" / f"{n}.toml") for n in NAMES]
    reason = None if args.reason else False
    n = len(cases)
    print(
        f"{n} SummEval cases x {len(metrics)} G-Eval metrics, "
        f"reasons {'on' if args.reason else 'off'}"
    )
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


if __name__ == "__main__":
    main()

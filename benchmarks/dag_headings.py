"""Issue: the summary-headings DAG on the example meeting summaries: judge calls, tokens
evaluated per case against the prompt tokens, seconds per case.

    python benchmarks/dag_headings.py

Figures: benchmarks/results/dag_headings.json.
"""

from __future__ import annotations

from harness import HEADINGS_LLM, Timer, fresh_cache, meeting_cases, parser, write_figures

from anvil_local import load_metric
from anvil_local.models import get_judge

COLUMNS = ["reason", "case", "calls", "evaluated", "prompt", "seconds", "path"]


def main() -> None:
    args = parser(__doc__, data=False).parse_args()
    cases = meeting_cases()
    metric = load_metric(HEADINGS_LLM)
    judge = get_judge(args.model)
    rows, notes = [], []
    print(f"{'case':<20}{'calls':>6}{'evaluated':>10}{'prompt':>8}{'seconds':>9}  path")
    for reason in (False, True):
        total_s = 0.0
        with fresh_cache():
            for case in cases:
                judge.runtime.evaluate(judge.runtime.tokenize("Reset.", special=False))
                with Timer() as t:
                    result = metric.run(case, judge, include_reason=reason)
                total_s += t.seconds
                u = result.usage
                path = " > ".join(
                    f"{s.node}={s.verdict}" for s in result.trace.path if hasattr(s, "verdict")
                )
                print(
                    f"{case.id:<20}{u.calls:>6}{u.evaluated_tokens:>10}{u.prompt_tokens:>8}"
                    f"{t.seconds:>9.3f}  {path} -> {result.score:.2f}"
                )
                rows.append(
                    [
                        "with" if reason else "without",
                        case.id,
                        u.calls,
                        u.evaluated_tokens,
                        u.prompt_tokens,
                        t.seconds,
                        f"{path} -> {result.score:.2f}",
                    ]
                )
        label = "with reason" if reason else "without reason"
        print(f"  {label}: {total_s / len(cases):.3f} s per case")
        notes.append(f"{label}: {total_s / len(cases):.3f} s per case")
    write_figures(
        args,
        "dag_headings",
        "The model headings DAG on the meeting summaries, each case cold: calls, tokens, seconds",
        COLUMNS,
        rows,
        formats={"seconds": ".3f"},
        units={"evaluated": "tokens", "prompt": "tokens", "seconds": "s"},
        notes=notes,
        models=[judge],
    )


if __name__ == "__main__":
    main()

"""Issue: the summary-headings DAG on the example meeting summaries: judge calls, tokens
evaluated per case against the prompt tokens, seconds per case.

    python benchmarks/dag_headings.py
"""

from __future__ import annotations

import json

from common import ROOT, Timer, fresh_cache, parser

from anvil_local import LLMTestCase
from anvil_local.judge import get_judge
from anvil_local.spec import load_metric


def main() -> None:
    args = parser(__doc__).parse_args()
    cases = [
        LLMTestCase(**json.loads(x))
        for x in (ROOT / "examples" / "meeting_summaries.jsonl").read_text().splitlines()
    ]
    metric = load_metric(ROOT / "examples" / "headings_llm.toml")
    judge = get_judge(args.model)
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
        label = "with reason" if reason else "without reason"
        print(f"  {label}: {total_s / len(cases):.3f} s per case")


if __name__ == "__main__":
    main()

"""The end-of-run summary table (a plain function of the results)."""

from __future__ import annotations

from pathlib import Path

from anvil_local.run.records import EvaluationResult


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """A text table: the first column to the left, the others to the right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]


def render_summary(outcome: EvaluationResult, out: Path | None = None) -> str:
    summaries = outcome.summaries()
    abstained = any(s.uncertain for s in summaries)
    header = ("metric", "cases", "pass rate", "mean score", "errors", "s/case")
    if abstained:
        header = (*header[:5], "uncertain", header[5])
    rows = [header]
    for s in summaries:
        cells = [
            s.metric,
            str(s.cases),
            _fmt(s.pass_rate, ".0%"),
            _fmt(s.mean_score, ".3f"),
            str(s.errors),
            _fmt(s.seconds_per_case, ".2f"),
        ]
        if abstained:
            cells.insert(5, str(s.uncertain))
        rows.append(tuple(cells))
    lines = _aligned(rows)
    new = len(outcome.lines) - outcome.resumed - outcome.cached
    usage = outcome.usage
    lines.append(
        f"{new} judged, {outcome.cached} from cache, {outcome.resumed} resumed "
        f"in {outcome.wall_seconds:.1f} s"
    )
    if usage.prompt_tokens:
        ratio = usage.evaluated_tokens / usage.prompt_tokens
        lines.append(
            f"tokens: {usage.evaluated_tokens} evaluated by llama.cpp for {usage.prompt_tokens} "
            f"prompt tokens in {usage.calls} calls ({ratio:.1%})"
        )
        if usage.distinct_tokens:
            over = usage.evaluated_tokens / usage.distinct_tokens
            capped = ""
            if usage.trie_capped:
                capped = " (counting stopped at the trie's limit: too small)"
            lines.append(
                f"prompt trie: {usage.distinct_tokens} distinct tokens{capped}; "
                f"evaluated {over:.2f}x that"
            )
    if outcome.interrupted:
        where = f" to {out}" if out else ""
        lines.append(
            f"Interrupted: {len(outcome.lines) - outcome.resumed} results written{where}; "
            "run the same command again to resume."
        )
    return "\n".join(lines)


#: Past this many cases a pair's scores are not listed case by case (the counts and the
#: disagreements still are).
PAIR_TABLE_CASES = 20


def render_pair(outcome: EvaluationResult, first: str, second: str) -> str:
    """Two metrics of a run side by side: how often they agree (the same verdict, the same
    score), their scores case by case for a small run, and one line per case where their
    scores differ."""
    scores: dict[str, dict[str, tuple[float | None, bool | None]]] = {first: {}, second: {}}
    order: list[str] = []
    for line in sorted(outcome.lines, key=lambda x: x.position):
        if line.metric in scores:
            scores[line.metric][line.case_id] = (line.result.score, line.result.success)
            if line.case_id not in order:
                order.append(line.case_id)
    both = [c for c in order if c in scores[first] and c in scores[second]]
    same_verdict = sum(1 for c in both if scores[first][c][1] == scores[second][c][1])
    differ = [c for c in both if scores[first][c][0] != scores[second][c][0]]
    lines = [
        f"{first} and {second}: the same verdict on {same_verdict} of {len(both)} cases, "
        f"the same score on {len(both) - len(differ)}"
    ]

    def cell(case: str, metric: str) -> str:
        score, success = scores[metric][case]
        verdict = "-" if success is None else ("pass" if success else "fail")
        return f"{_fmt(score, '.2f')} {verdict}"

    if len(both) <= PAIR_TABLE_CASES:
        rows = [("case", first, second)] + [(c, cell(c, first), cell(c, second)) for c in both]
        lines += _aligned(rows)
    for case in differ[:PAIR_TABLE_CASES]:
        a, b = scores[first][case][0], scores[second][case][0]
        lines.append(f"disagree: {case}: {first} {_fmt(a, '.2f')}, {second} {_fmt(b, '.2f')}")
    if len(differ) > PAIR_TABLE_CASES:
        lines.append(f"... and {len(differ) - PAIR_TABLE_CASES} more cases where they disagree")
    return "\n".join(lines)

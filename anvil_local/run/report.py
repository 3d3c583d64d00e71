"""The end-of-run summary table (a plain function of the results)."""

from __future__ import annotations

from pathlib import Path

from anvil_local.run.records import EvaluationResult


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


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
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
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

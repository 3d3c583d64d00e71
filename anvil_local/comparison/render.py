"""A comparison as Markdown for a pull-request comment (what a reviewer reads first: the
verdict, then one row per metric, then the flipped cases and why the judge said so), and as
JSON for machines."""

from __future__ import annotations

import json
import math

from anvil_local.bench.stats import RESAMPLES
from anvil_local.comparison.compare import Comparison
from anvil_local.comparison.paired import Flip, MetricComparison
from anvil_local.comparison.provenance import metadata_rows

#: Flipped cases listed per direction in the Markdown (the JSON lists all).
SHOWN_FLIPS = 20


def _cell(text: object) -> str:
    """Table-safe: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _num(value: float | None, spec: str = ".3f") -> str:
    return "-" if value is None or math.isnan(value) else format(value, spec)


def _rate(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0%}"


def _difference(m: MetricComparison) -> str:
    est = m.difference
    if math.isnan(est.value):
        return "-"
    if math.isnan(est.low):
        return f"{est.value:+.3f} (no interval)"
    return f"{est.value:+.3f} [{est.low:+.3f}, {est.high:+.3f}]"


def _pass_rates(m: MetricComparison) -> str:
    if math.isnan(m.base_pass_rate):
        return "-"
    points = (m.new_pass_rate - m.base_pass_rate) * 100
    return f"{_rate(m.base_pass_rate)} → {_rate(m.new_pass_rate)} ({points:+.0f} pts)"


def _name(m: MetricComparison) -> str:
    return m.metric if m.metric == m.new_metric else f"{m.metric} → {m.new_metric}"


def _table(headers: list[str], rows: list[list[str]], align: str = "") -> list[str]:
    marks = [("---:" if a == "r" else "---") for a in align.ljust(len(headers), "l")]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join(marks) + "|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def _headline(c: Comparison) -> str:
    if c.failed:
        return "## anvil compare: FAIL — " + "; ".join(c.reasons())
    worse_looking = sum(1 for m in c.metrics if m.difference.value < 0)
    return (
        f"## anvil compare: pass — no metric worse beyond {c.tolerance:g} with 95% "
        f"confidence ({worse_looking} of {len(c.metrics)} lower on average)"
    )


def _flip_rows(flips: list[Flip], metric: str) -> list[list[str]]:
    def side(status: str, score: float | None) -> str:
        return status if score is None else f"{score:.3f} {status}"

    return [
        [
            metric,
            f.case_id,
            side(f.base_status, f.base_score),
            side(f.new_status, f.new_score),
            _num(f.change, "+.3f"),
            f.new_why or "-",
        ]
        for f in flips
    ]


def _flips(c: Comparison, attr: str, title: str) -> list[str]:
    rows: list[list[str]] = []
    total = 0
    for m in c.metrics:
        flips = getattr(m, attr)
        total += len(flips)
        rows += _flip_rows(flips[:SHOWN_FLIPS], _name(m))
    if not rows:
        return []
    headers = ["metric", "case", "BASE", "NEW", "change", "why (NEW)"]
    out = ["", f"### {title} ({total})", "", *_table(headers, rows, "llrrrl")]
    if total > len(rows):
        out += ["", f"... and {total - len(rows)} more (`--json` lists every case)."]
    return out


def markdown(c: Comparison) -> str:
    """The comparison as a pull-request comment."""
    units = {m.resampled for m in c.metrics} or {"cases"}
    bound = f"-{c.tolerance:g}" if c.tolerance else "0"
    gate = f"a metric fails when its interval lies wholly below {bound}"
    gate += f" (`--tolerance {c.tolerance:g}`)"
    if c.fail_on_flip:
        gate += ", or when any case flips from pass to fail (`--fail-on-flip`)"
    parts = [
        _headline(c),
        "",
        f"BASE `{c.base.path}` → NEW `{c.new.path}`. Differences are NEW − BASE on the cases "
        f"scored in both, with 95% intervals from {RESAMPLES} resamples of "
        f"{' or '.join(sorted(units))} (fixed seed). Gate: {gate}.",
        "",
    ]
    headers = [
        "metric",
        "cases",
        "BASE mean",
        "NEW mean",
        "NEW − BASE [95% interval]",
        "pass rate",
        "→ fail",
        "→ pass",
        "errors",
        "verdict",
    ]
    rows = []
    for m in c.metrics:
        verdict = m.verdict(c.tolerance)
        if m.worse(c.tolerance) or (c.fail_on_flip and m.to_fail):
            verdict = f"**{verdict}**" if verdict == "worse" else f"**{verdict}, flips**"
        rows.append(
            [
                _name(m),
                f"{m.cases} ({m.units} {'document' if m.units == 1 else 'documents'})"
                if m.resampled == "documents"
                else str(m.cases),
                _num(m.base_mean),
                _num(m.new_mean),
                _difference(m),
                _pass_rates(m),
                str(len(m.to_fail)),
                str(len(m.to_pass)),
                f"{m.base_errors} → {m.new_errors}",
                verdict,
            ]
        )
    parts += _table(headers, rows, "lrrrllrrrl")
    if c.differences or c.not_compared:
        parts += ["", "### What differed", ""]
        for d in c.differences:
            allowed = f" (compared because of `{d.flag}`)" if d.flag else ""
            parts.append(f"- {d.text}{allowed}")
        for name in c.not_compared:
            parts.append(f"- not compared: {name}")
    parts += _flips(c, "to_fail", "Flipped pass → fail, worst first")
    parts += _flips(c, "to_pass", "Flipped fail → pass")
    parts += ["", "<details><summary>Run metadata</summary>", ""]
    parts += _table(["", "BASE", "NEW"], [list(r) for r in metadata_rows(c.base, c.new)])
    parts += ["", "</details>"]
    return "\n".join(parts) + "\n"


def to_json(c: Comparison) -> str:
    return json.dumps(c.to_dict(), indent=2, ensure_ascii=False) + "\n"

"""The viewer's page: one HTML file, its style and script inline, that opens offline.

A header names each file and what produced it; a summary gives each metric's pass rate and
mean per file; then one table row per (case, metric), failing first, which a click opens to
the drawings of its trace (side by side when several files are given). The page fetches
nothing: its Content-Security-Policy forbids any request, so a results file's text cannot
make it reach the network either.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib.resources import files as package_files
from typing import Any

from anvil_local.comparison.provenance import differences
from anvil_local.run.pairs import Paired
from anvil_local.run.records import ResultLine
from anvil_local.run.results import ResultsFile
from anvil_local.run.why import why
from anvil_local.view.svg import esc
from anvil_local.view.traces import result_html

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _asset(name: str) -> str:
    return package_files("anvil_local.view").joinpath(name).read_text(encoding="utf-8")


def status(line: ResultLine | None) -> str:
    if line is None:
        return "absent"
    if line.result.error is not None or line.result.score is None:
        return "error"
    return "pass" if line.result.success else "fail"


@dataclass
class Row:
    """One (case, metric) row of the table."""

    index: int
    paired: Paired
    statuses: list[str]

    @property
    def last(self) -> ResultLine | None:
        """The line of the last file that has one (what a single-file view shows)."""
        return next((x for x in reversed(self.paired.lines) if x is not None), None)

    def tags(self) -> list[str]:
        present = [s for s in self.statuses if s != "absent"]
        final = present[-1] if present else "absent"
        tags = [final, "failing" if final in ("fail", "error") else "passing"]
        if len(self.statuses) > 1:
            first = present[0] if present else "absent"
            if first == "pass" and final in ("fail", "error"):
                tags.append("to-fail")
            elif first in ("fail", "error") and final == "pass":
                tags.append("to-pass")
            if len(set(present)) > 1:
                tags.append("changed")
            if len(present) < len(self.statuses):
                tags.append("partial")
        return tags

    def group(self) -> int:
        """Failing cases first: flipped to fail, failing, flipped to pass, passing."""
        tags = self.tags()
        if "to-fail" in tags:
            return 0
        if "failing" in tags:
            return 1
        return 2 if "to-pass" in tags else 3

    def delta(self) -> float | None:
        scores = [x.result.score for x in self.paired.lines if x is not None]
        if len(self.paired.lines) < 2 or len(scores) < 2 or None in (scores[0], scores[-1]):
            return None
        return float(scores[-1]) - float(scores[0])  # type: ignore[arg-type]


def _score(line: ResultLine | None) -> str:
    if line is None or line.result.score is None:
        return ""
    return f"{line.result.score:.6g}"


def _shown_score(line: ResultLine | None) -> str:
    if line is None or line.result.score is None:
        return "–"
    return f"{line.result.score:.3f}"


def _metric_label(metric: str, renames: Mapping[str, str], count: int) -> str:
    """A metric as the table names it: "BASE → NEW" when --pair renamed it."""
    new = renames.get(metric, metric)
    return metric if new == metric or count < 2 else f"{metric} → {new}"


def _markdown_code(text: str) -> str:
    """Escaped text with its `code` spans (the comparison's wording) as <code>."""
    parts = esc(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _pass_cell(statuses: Sequence[str]) -> str:
    marks = {"pass": "✓ pass", "fail": "✗ fail", "error": "! error", "absent": "–"}
    return " → ".join(f'<span class="st {s}">{marks[s]}</span>' for s in statuses)


def _definition(results: ResultsFile, metric: str) -> Mapping[str, Any] | None:
    if results.meta is None:
        return None
    info = results.meta.metrics.get(metric)
    return info.definition if info else None


def _detail(row: Row, files: Sequence[ResultsFile], renames: Mapping[str, str]) -> str:
    cells = []
    for index, (results, line) in enumerate(zip(files, row.paired.lines, strict=True)):
        name = (
            row.paired.metric if index == 0 else renames.get(row.paired.metric, row.paired.metric)
        )
        if line is None:
            body = '<p class="muted">no line for this case and metric in this file</p>'
        else:
            body = result_html(line, _definition(results, name))
        head = (
            f"<h3>{LABELS[index]} · {esc(results.path.name)} · {esc(name)}</h3>"
            if len(files) > 1
            else ""
        )
        cells.append(f'<div class="side">{head}{body}</div>')
    return f'<div class="sides n{len(files)}">{"".join(cells)}</div>'


def _table(rows: Sequence[Row], files: Sequence[ResultsFile], renames: Mapping[str, str]) -> str:
    many = len(files) > 1
    headers = [("case", "text", "case"), ("metric", "text", "metric")]
    if many:
        headers += [(f"s{i}", "num", f"score {LABELS[i]}") for i in range(len(files))]
        headers += [("delta", "num", f"Δ {LABELS[len(files) - 1]}−A")]
    else:
        headers += [("s0", "num", "score")]
    headers += [
        ("group", "num", "pass"),
        ("seconds", "num", "seconds"),
        ("tokens", "num", "tokens"),
    ]
    head = "".join(
        f'<th data-key="{key}" data-type="{kind}" tabindex="0">{esc(label)}</th>'
        for key, kind, label in headers
    )
    bodies = []
    for row in rows:
        last = row.last
        usage = last.result.usage if last is not None else None
        seconds = last.result.seconds if last is not None else 0.0
        tokens = usage.evaluated_tokens if usage is not None else 0
        delta = row.delta()
        data = {
            "case": row.paired.case_id,
            "metric": row.paired.metric,
            "group": f"{row.group()}.{row.index:06d}",
            "seconds": f"{seconds:.4f}",
            "tokens": str(tokens),
            "delta": "" if delta is None else f"{delta:.6g}",
            "tags": " ".join(row.tags()),
            "text": " ".join(
                [row.paired.case_id, row.paired.metric]
                + [why(x) for x in row.paired.lines if x is not None]
            ).lower(),
        }
        data |= {f"s{i}": _score(x) for i, x in enumerate(row.paired.lines)}
        attrs = " ".join(f'data-{k}="{esc(v)}"' for k, v in data.items())
        shown_metric = _metric_label(row.paired.metric, renames, len(files))
        cells = [f"<td>{esc(row.paired.case_id)}</td>", f"<td>{esc(shown_metric)}</td>"]
        cells += [f'<td class="num">{_shown_score(x)}</td>' for x in row.paired.lines]
        if many:
            cells.append(f'<td class="num">{"–" if delta is None else f"{delta:+.3f}"}</td>')
        cells.append(f"<td>{_pass_cell(row.statuses)}</td>")
        cells.append(f'<td class="num">{seconds:.2f}</td>')
        cells.append(f'<td class="num" title="{esc(_usage_title(last))}">{tokens}</td>')
        span = len(cells)
        bodies.append(
            f'<tbody class="case" id="row-{row.index}" data-index="{row.index}" {attrs}>'
            f'<tr class="row" tabindex="0" aria-expanded="false">{"".join(cells)}</tr>'
            f'<tr class="detail" hidden><td colspan="{span}">{_detail(row, files, renames)}</td>'
            "</tr></tbody>"
        )
    return f'<table id="cases"><thead><tr>{head}</tr></thead>{"".join(bodies)}</table>'


def _usage_title(line: ResultLine | None) -> str:
    if line is None:
        return ""
    u = line.result.usage
    return (
        f"{u.evaluated_tokens} evaluated by llama.cpp of {u.prompt_tokens} prompt tokens "
        f"({u.reused_tokens} reused) in {u.calls} calls"
    )


def _files_section(files: Sequence[ResultsFile], renames: Mapping[str, str]) -> str:
    items = []
    for index, results in enumerate(files):
        name, sha = results.model
        facts = [f"{len(results.entries)} results", f"model {name or '?'} ({sha[:12] or '?'})"]
        meta = results.meta
        if meta is not None and meta.last_run is not None:
            run = meta.last_run
            facts.append(f"anvil {run.anvil or '?'}, llama-cpp-python {run.llama_cpp or '?'}")
            facts.append(f"started {run.started}")
            if run.data is not None:
                facts.append(f"{run.data.cases} cases ({run.data.source or 'data'})")
        else:
            facts.append("no metadata line (an older results file)")
        label = f"<b>{LABELS[index]}</b> " if len(files) > 1 else ""
        items.append(f"<li>{label}<code>{esc(results.path)}</code>: {esc('; '.join(facts))}</li>")
    notes = []
    for later in files[1:]:
        metrics = sorted({entry.item["metric"] for entry in files[0].entries})
        found = differences(files[0], later, [(m, renames.get(m, m)) for m in metrics])
        notes += [f"<li>A → {esc(later.path.name)}: {_markdown_code(d.text)}</li>" for d in found]
    differed = f'<p class="muted">What differed:</p><ul class="files">{"".join(notes)}</ul>'
    differed = differed if notes else ""
    return f'<ul class="files">{"".join(items)}</ul>{differed}'


def _summary(rows: Sequence[Row], files: Sequence[ResultsFile], renames: Mapping[str, str]) -> str:
    metrics = list(dict.fromkeys(row.paired.metric for row in rows))
    head = "<th>metric</th>" + "".join(
        f"<th>{LABELS[i] + ': ' if len(files) > 1 else ''}cases</th><th>pass rate</th>"
        "<th>mean score</th><th>errors</th>"
        for i in range(len(files))
    )
    body = []
    for metric in metrics:
        cells = [f"<td>{esc(_metric_label(metric, renames, len(files)))}</td>"]
        for i in range(len(files)):
            lines = [r.paired.lines[i] for r in rows if r.paired.metric == metric]
            lines = [x for x in lines if x is not None]
            scored = [x for x in lines if status(x) in ("pass", "fail")]
            passed = sum(status(x) == "pass" for x in scored)
            rate = f"{passed / len(scored):.0%}" if scored else "–"
            mean = (
                f"{math.fsum(float(x.result.score or 0) for x in scored) / len(scored):.3f}"
                if scored
                else "–"
            )
            errors = sum(status(x) == "error" for x in lines)
            cells += [
                f'<td class="num">{len(lines)}</td>',
                f'<td class="num">{rate}</td>',
                f'<td class="num">{mean}</td>',
                f'<td class="num">{errors}</td>',
            ]
        body.append(f"<tr>{''.join(cells)}</tr>")
    rows_html = "".join(body)
    return (
        f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{rows_html}</tbody></table>'
    )


def _controls(rows: Sequence[Row], files: int, renames: Mapping[str, str]) -> str:
    metrics = list(dict.fromkeys(row.paired.metric for row in rows))
    metric_options = '<option value="">every metric</option>' + "".join(
        f'<option value="{esc(m)}">{esc(_metric_label(m, renames, files))}</option>'
        for m in metrics
    )
    statuses = [
        ("", "every case"),
        ("failing", "failing"),
        ("passing", "passing"),
        ("error", "errors"),
    ]
    if files > 1:
        statuses += [
            ("to-fail", "flipped to fail"),
            ("to-pass", "flipped to pass"),
            ("changed", "verdict changed"),
        ]
    status_options = "".join(f'<option value="{v}">{esc(t)}</option>' for v, t in statuses)
    return (
        '<div class="controls">'
        '<input id="q" type="search" placeholder="filter: case, metric, reason" '
        'aria-label="filter">'
        f'<select id="metric" aria-label="metric">{metric_options}</select>'
        f'<select id="status" aria-label="status">{status_options}</select>'
        '<button id="open-all" type="button">open shown</button>'
        '<button id="close-all" type="button">close all</button>'
        '<span id="count"></span></div>'
    )


def rows_of(paired: Sequence[Paired]) -> list[Row]:
    """The table's rows in their first order: failing first, then by the case's order."""
    rows = [Row(i, p, [status(x) for x in p.lines]) for i, p in enumerate(paired)]
    rows.sort(key=lambda r: (r.group(), r.index))
    return rows


def render_page(
    files: Sequence[ResultsFile],
    paired: Sequence[Paired],
    renames: Mapping[str, str] | None = None,
) -> str:
    renames = renames or {}
    rows = rows_of(paired)
    title = "anvil view: " + ", ".join(f.path.name for f in files)
    body = [
        f"<h1>{esc(title)}</h1>",
        _files_section(files, renames),
        "<h2>Summary</h2>",
        _summary(rows, files, renames),
        "<h2>Cases</h2>",
        '<p class="muted">Failing cases first. Click a row (or press Enter on it) to open its '
        "trace; click a column's name to sort.</p>",
        _controls(rows, len(files), renames),
        _table(rows, files, renames),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{_asset('page.css')}</style></head><body>\n"
        + "\n".join(body)
        + f"\n<script>{_asset('page.js')}</script>\n</body></html>\n"
    )

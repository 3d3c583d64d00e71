"""One result drawn for a person: the picture its trace calls for (a DAG walk on its graph,
a G-Eval's score distribution, a likelihood's shaded tokens), then its reason or error, and
the trace as written, folded away."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from anvil_local.run.records import ResultLine
from anvil_local.view.bars import option_bars, score_bars
from anvil_local.view.dag import dag_svg
from anvil_local.view.svg import esc
from anvil_local.view.tokens import token_html


def _geval(trace: Mapping[str, Any]) -> str:
    parts = []
    if trace.get("verdict") is not None:
        parts.append(
            option_bars(trace.get("probabilities") or {}, str(trace["verdict"]), "strict verdict")
        )
    else:
        parts.append(
            score_bars(
                trace.get("distribution") or {},
                weighted=trace.get("weighted"),
                most_likely=trace.get("most_likely"),
            )
        )
    if trace.get("prior") is not None:
        parts.append(
            '<p class="muted">Calibrated: the judge\'s own distribution, then the '
            "content-free prior divided out:</p>"
        )
        parts.append(score_bars(trace.get("uncalibrated") or {}, label="uncalibrated"))
        parts.append(score_bars(trace.get("prior") or {}, label="prior"))
    steps = trace.get("steps") or []
    if steps:
        items = "".join(f"<li>{esc(step)}</li>" for step in steps)
        parts.append(
            f'<details class="steps"><summary>evaluation steps</summary><ol>{items}</ol></details>'
        )
    return "".join(parts)


def _dag(trace: Mapping[str, Any], definition: Mapping[str, Any] | None) -> str:
    parts = [dag_svg(trace, definition)]
    facts = [f"path probability {float(trace.get('path_probability') or 0):.3f}"]
    if trace.get("expected_score") is not None:
        facts.append(
            f"soft walk: expected score {float(trace['expected_score']):.3f} over "
            f"{len(trace.get('walks') or [])} walks (mass explored "
            f"{float(trace.get('explored_mass') or 0):.3f})"
        )
    if trace.get("combine"):
        facts.append("several scoring leaves fired: the lowest counts")
    if not definition:
        facts.append("the path alone (this results file holds no metric definition)")
    parts.append(f'<p class="muted">{esc("; ".join(facts))}</p>')
    walks = trace.get("walks") or []
    if walks:
        rows = "".join(
            f"<tr><td>{esc(' → '.join(map(str, w.get('verdicts') or [])))}</td>"
            f'<td><span class="pbar" style="width:{100 * float(w.get("probability") or 0):.0f}px">'
            f"</span> {float(w.get('probability') or 0):.3f}</td>"
            f"<td>{float(w.get('score') or 0):.3f}</td></tr>"
            for w in walks
        )
        parts.append(
            '<table class="walks"><thead><tr><th>walk (verdicts)</th><th>probability</th>'
            f"<th>score</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    for leaf in trace.get("leaves") or []:
        child = leaf.get("metric")
        if isinstance(child, dict):
            parts.append(
                f"<h4>{esc(child.get('metric'))} under verdict {esc(leaf.get('verdict'))}</h4>"
            )
            parts.append(trace_html(child.get("trace") or {}, None))
    return "".join(parts)


def _likelihood(trace: Mapping[str, Any]) -> str:
    facts = [f"log-probability given the source {float(trace.get('conditional') or 0):.3f}"]
    if trace.get("unconditional") is not None:
        facts.append(f"without it {float(trace['unconditional']):.3f}")
    facts.append(f"value {float(trace.get('value') or 0):.3f}, score = {trace.get('transform')}")
    return token_html(trace) + f'<p class="muted">{esc("; ".join(facts))}</p>'


def _verdicts(trace: Mapping[str, Any]) -> str:
    """A decomposed metric: each step's items, one row each, with its verdict and a bar per
    allowed answer; then the score's formula and the expected score."""
    facts = [f"score = {trace.get('formula', '')}"]
    if trace.get("expected_score") is not None:
        facts.append(f"expected score {float(trace['expected_score']):.3f}")
    for key, value in (trace.get("breakdown") or {}).items():
        facts.append(f"{key} {float(value):.3f}")
    parts = [f'<p class="muted">{esc("; ".join(facts))}</p>']
    for step, verdicts in (trace.get("steps") or {}).items():
        rows = []
        for v in verdicts:
            probs = v.get("probabilities") or {}
            bars = " ".join(
                f'<span class="pbar" style="width:{4 * float(p):.2f}em" title="{esc(k)}"></span>'
                f" {esc(k)} {float(p):.0%}"
                for k, p in probs.items()
            )
            group = "" if v.get("group") is None else f"[{int(v['group'])}] "
            rows.append(
                f"<tr><td>{esc(group + str(v.get('item', '')))}</td>"
                f'<td class="verdict-{esc(str(v.get("verdict")))}"><b>{esc(str(v.get("verdict")))}'
                f"</b></td><td>{bars}</td></tr>"
            )
        parts.append(
            f'<table class="verdicts"><caption>{esc(step)}</caption>'
            "<tr><th>item</th><th>verdict</th><th>probabilities</th></tr>"
            + "".join(rows)
            + "</table>"
        )
    return "".join(parts)


def trace_html(trace: Mapping[str, Any], definition: Mapping[str, Any] | None) -> str:
    """The picture for a trace; empty for kinds without one (the raw trace still shows)."""
    kind = trace.get("type")
    if kind == "dag":
        return _dag(trace, definition)
    if kind == "geval":
        return _geval(trace)
    if kind == "likelihood":
        return _likelihood(trace)
    if kind == "verdicts":
        return _verdicts(trace)
    return ""


def result_html(line: ResultLine, definition: Mapping[str, Any] | None) -> str:
    """Everything about one result, for its cell in the opened row."""
    result = line.result
    verdict = "error" if result.error else ("pass" if result.success else "fail")
    score = "-" if result.score is None else f"{result.score:.3f}"
    parts = [
        f'<div class="verdict {verdict}">{verdict} · score {score} · threshold '
        f"{result.threshold:g}"
        + (f" · raw {result.raw_score:.3f}" if result.raw_score is not None else "")
        + "</div>"
    ]
    if result.error:
        parts.append(f'<pre class="error">{esc(result.error)}</pre>')
    trace = result.trace.to_dict()
    parts.append(trace_html(trace, definition))
    if result.reason:
        parts.append(f'<p class="reason"><b>Reason.</b> {esc(result.reason)}</p>')
    raw = json.dumps(trace, indent=1, ensure_ascii=False)
    parts.append(
        f'<details class="raw"><summary>trace as written</summary><pre>{esc(raw)}</pre></details>'
    )
    return "".join(parts)

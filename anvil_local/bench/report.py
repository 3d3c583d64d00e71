"""A bench as Markdown (stdout), JSON, and a self-contained HTML report (inline SVG charts, no
script, no network fetch), drawn with matplotlib (the `bench` extra)."""

from __future__ import annotations

import html
import io
import json
import math
from pathlib import Path

from anvil_local.bench.abstention import markdown as abstention_markdown
from anvil_local.bench.calibrate import markdown as calibration_markdown
from anvil_local.bench.pairwise import bias_text
from anvil_local.bench.reference import published
from anvil_local.bench.run import BenchResult, MetricOutcome
from anvil_local.bench.stats import Estimate
from anvil_local.errors import io_error


def _fmt(est: object) -> str:
    return est.text() if isinstance(est, Estimate) else "-"


GRADED_COLUMNS = [
    ("doc_spearman", "doc Spearman"),
    ("doc_kendall", "doc Kendall"),
    ("spearman", "Spearman"),
    ("kendall", "Kendall"),
    ("pearson", "Pearson"),
]
#: A pairwise metric against a preference: the judge's winner is the preferred one, and the
#: probability it gave the preferred one.
PAIRWISE_COLUMNS = [
    ("agreement", "agreement"),
    ("preferred_probability", "P(preferred)"),
]
BINARY_COLUMNS = [
    ("auroc", "AUROC"),
    ("balanced_accuracy", "bal. acc."),
    ("kappa", "kappa"),
    ("balanced_accuracy_fitted", "bal. acc. (fitted cut)"),
    ("kappa_fitted", "kappa (fitted cut)"),
]


def _table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _cost_cells(o: MetricOutcome) -> list[str]:
    return [
        f"{o.cost['evaluated_tokens_per_case']:.0f}",
        f"{o.cost['prompt_tokens_per_case']:.0f}",
        f"{o.cost['seconds_per_case']:.2f}",
    ]


def markdown(result: BenchResult) -> str:
    parts = [
        f"bench {result.suite or result.data}: {result.cases} cases, {result.docs} documents; "
        "95% intervals from 1000 document resamples",
        "",
    ]
    for r in result.runs:
        parts.append(
            f"{r.model}: {r.judged} judged, {r.cached} from cache, {r.resumed} resumed "
            f"in {r.wall_seconds:.1f} s"
        )
    if result.runs:
        parts.append("")
    cost_headers = ["tokens evaluated/case", "prompt tokens/case", "s/case"]
    graded = [o for o in result.outcomes if o.kind == "graded"]
    binary = [o for o in result.outcomes if o.kind == "binary"]
    if graded:
        rows = []
        for o in graded:
            skipped = o.agreement.get("docs_skipped", 0)
            rows.append(
                [o.model, o.metric, o.label, str(o.cases), str(o.errors)]
                + [_fmt(o.agreement.get(k)) for k, _ in GRADED_COLUMNS]
                + [str(skipped)]
                + _cost_cells(o)
            )
        headers = ["model", "metric", "label", "cases", "errors"]
        headers += [h for _, h in GRADED_COLUMNS] + ["docs skipped", *cost_headers]
        parts += [_table(headers, rows), ""]
    if binary:
        rows = []
        for o in binary:
            ece = o.agreement.get("ece")
            rows.append(
                [o.model, o.metric, o.label, str(o.cases), str(o.errors)]
                + [_fmt(o.agreement.get(k)) for k, _ in BINARY_COLUMNS]
                + ["-" if ece is None else f"{ece:.3f}"]
                + _cost_cells(o)
            )
        headers = ["model", "metric", "label", "cases", "errors"]
        headers += [h for _, h in BINARY_COLUMNS] + ["ECE", *cost_headers]
        parts += [_table(headers, rows), ""]
    pairwise = [o for o in result.outcomes if o.kind == "pairwise"]
    if pairwise:
        rows = []
        for o in pairwise:
            agreement = o.agreement
            disagree = agreement.get("order_disagreement")
            rows.append(
                [o.model, o.metric, o.label, str(o.cases), str(o.errors)]
                + [_fmt(agreement.get(k)) for k, _ in PAIRWISE_COLUMNS]
                + [
                    bias_text(agreement.get("position_bias")),
                    "-" if disagree is None else f"{disagree:.0%}",
                    f"{agreement.get('preferred_first', 0):.0%}",
                ]
                + _cost_cells(o)
            )
        headers = ["model", "metric", "label", "cases", "errors"]
        headers += [h for _, h in PAIRWISE_COLUMNS]
        headers += ["position bias", "orders disagree", "preferred shown first", *cost_headers]
        parts += [_table(headers, rows), ""]
    abstaining = [(o.model, o.metric, o.label, o.abstention) for o in binary if o.abstention]
    if abstaining:
        parts += [abstention_markdown(abstaining).strip(), ""]
    if result.comparisons:
        rows = [[c.model, c.statistic, c.a, c.b, _fmt(c.difference)] for c in result.comparisons]
        parts += [
            "Paired differences (B - A, same cases, same resampled documents):",
            "",
            _table(["model", "statistic", "A", "B", "B - A"], rows),
            "",
        ]
    if result.model_comparisons:
        rows = [
            [c.metric, c.label, c.statistic, c.a, c.b, _fmt(c.difference)]
            for c in result.model_comparisons
        ]
        parts += [
            "Models compared (B - A, same metric, same cases, same resampled documents):",
            "",
            _table(["metric", "label", "statistic", "A", "B", "B - A"], rows),
            "",
        ]
    if result.calibrations:
        parts += [calibration_markdown(result.calibrations).strip(), ""]
    refs = sorted(
        {(o.label, j, s, v) for o in result.outcomes for j, s, v in published(o.label, result.data)}
    )
    if refs:
        rows = [[label, judge, stat, f"{value:.3f}"] for label, judge, stat, value in refs]
        parts += [
            "Published reference points (other judges, full datasets):",
            "",
            _table(["label", "judge", "statistic", "value"], rows),
            "",
        ]
    return "\n".join(parts).rstrip() + "\n"


def write_json(result: BenchResult, path: Path) -> None:
    path.write_text(json.dumps(result.to_dict(), indent=2, ensure_ascii=False) + "\n")


# -- HTML ------------------------------------------------------------------------------------


def _svg(fig) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _scatter(outcomes: list[MetricOutcome]) -> str:
    import matplotlib.pyplot as plt
    import numpy as np

    cols = min(4, len(outcomes))
    rows = math.ceil(len(outcomes) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.9 * rows), squeeze=False)
    rng = np.random.default_rng(0)
    for ax, o in zip(axes.flat, outcomes, strict=False):
        judge = np.asarray([p[0] for p in o.points])
        human = np.asarray([p[1] for p in o.points])
        jitter = rng.uniform(-0.04, 0.04, len(human)) * (human.max() - human.min() or 1)
        ax.scatter(judge, human + jitter, s=9, alpha=0.55, color="#2b6cb0")
        name, est = o.headline
        ax.set_title(f"{o.metric} ({o.model})\n{name} {_fmt(est)}", fontsize=7)
        ax.set_xlabel("judge score", fontsize=8)
        ax.set_ylabel(f"human {o.label}", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(outcomes) :]:
        ax.axis("off")
    fig.tight_layout()
    return _svg(fig)


def _reliability(outcomes: list[MetricOutcome]) -> str | None:
    import matplotlib.pyplot as plt

    with_table = [o for o in outcomes if o.agreement.get("reliability")]
    if not with_table:
        return None
    fig, ax = plt.subplots(figsize=(5, 4.2))
    ax.plot([0, 1], [0, 1], linestyle="--", color="#888", linewidth=1, label="perfect")
    for o in with_table:
        table = o.agreement["reliability"]
        xs = [r["mean_probability"] for r in table]
        ys = [r["observed_rate"] for r in table]
        ax.plot(xs, ys, marker="o", label=f"{o.metric} ({o.model}), ECE {o.agreement['ece']:.3f}")
    ax.set_xlabel("judge probability of label 1 (bin mean)")
    ax.set_ylabel("observed rate of label 1")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _svg(fig)


def _agreement_rows(result: BenchResult) -> list[tuple[MetricOutcome, str, Estimate]]:
    """What the agreement chart shows: the headline statistic of each metric and model, and
    for binary labels also the balanced accuracy at the cross-fitted threshold (the statistic
    SummEdits publishes)."""
    rows = []
    for o in result.outcomes:
        name, est = o.headline
        rows.append((o, name, est))
        fitted = o.agreement.get("balanced_accuracy_fitted")
        if o.kind == "binary" and isinstance(fitted, Estimate):
            rows.append((o, "balanced_accuracy_fitted", fitted))
    return rows


def _agreement(result: BenchResult) -> str:
    import matplotlib.pyplot as plt

    rows = _agreement_rows(result)
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * len(rows) + 1.6))
    labels = []
    for y, (o, name, est) in enumerate(rows):
        labels.append(f"{o.metric} / {o.model}\n({name} vs {o.label})")
        if not math.isnan(est.value):
            err = None
            if not math.isnan(est.low):
                err = [[est.value - est.low], [est.high - est.value]]
            ax.errorbar(est.value, y, xerr=err, fmt="o", color="#2b6cb0", capsize=3)
        for judge, stat, value in published(o.label, result.data):
            if not name.startswith(stat):
                continue  # a published figure is drawn only beside the same statistic
            ax.plot(value, y, marker="|", markersize=14, color="#c05621")
            ax.annotate(
                judge,
                (value, y),
                xytext=(0, 7),
                textcoords="offset points",
                fontsize=6,
                color="#c05621",
                ha="center",
            )
    ax.axvline(0, color="#999", linewidth=0.8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("agreement with human labels (95% interval); orange: published judges")
    fig.tight_layout()
    return _svg(fig)


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #1a202c; max-width: 1200px; }
table { border-collapse: collapse; font-size: 0.85em; margin: 1em 0; }
th, td { border: 1px solid #cbd5e0; padding: 0.25em 0.5em; text-align: left; }
th { background: #edf2f7; }
figure { margin: 1.5em 0; }
figcaption { font-size: 0.9em; color: #4a5568; }
"""


def _md_table_to_html(block: str) -> str:
    rows = [r.strip().strip("|").split("|") for r in block.strip().splitlines()]
    head, body = rows[0], rows[2:]
    out = ["<table><thead><tr>"]
    out += [f"<th>{html.escape(c.strip())}</th>" for c in head]
    out.append("</tr></thead><tbody>")
    for row in body:
        out.append("<tr>" + "".join(f"<td>{html.escape(c.strip())}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def html_report(result: BenchResult) -> str:
    """One HTML file: tables, and the charts as inline SVG (opens offline)."""
    import matplotlib

    matplotlib.use("Agg")
    scored = [o for o in result.outcomes if o.kind != "pairwise"]  # a winner is no score
    figures = []
    if scored:
        figures.append(
            ("scatter", "Judge score against human label, per metric and model", _scatter(scored))
        )
    figures.append(
        ("agreement", "Agreement with 95% intervals, beside published judges", _agreement(result))
    )
    binary = [o for o in result.outcomes if o.kind == "binary"]
    reliability = _reliability(binary) if binary else None
    if reliability is not None:
        figures.append(("reliability", "Reliability of the judge's probabilities", reliability))
    text = markdown(result)
    blocks, current = [], []
    for line in text.splitlines():
        if line.startswith("|"):
            current.append(line)
            continue
        if current:
            blocks.append(("table", "\n".join(current)))
            current = []
        if line.strip():
            blocks.append(("p", line))
    if current:
        blocks.append(("table", "\n".join(current)))
    body = [f"<h1>anvil bench: {html.escape(result.suite or result.data)}</h1>"]
    for kind, content in blocks:
        if kind == "table":
            body.append(_md_table_to_html(content))
        else:
            body.append(f"<p>{html.escape(content)}</p>")
    for key, caption, svg in figures:
        body.append(
            f'<figure class="chart" id="chart-{key}">{svg}'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>anvil bench: {html.escape(result.suite or result.data)}</title>"
        f"<style>{_STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(result: BenchResult, folder: Path) -> dict[str, Path]:
    """bench.json, bench.md and report.html in `folder`; an OS error (a full disk) is one
    line naming the file."""
    paths = {
        "json": folder / "bench.json",
        "markdown": folder / "bench.md",
        "html": folder / "report.html",
    }
    target = folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target = paths["json"]
        write_json(result, paths["json"])
        target = paths["markdown"]
        paths["markdown"].write_text(markdown(result), encoding="utf-8")
        target = paths["html"]
        paths["html"].write_text(html_report(result), encoding="utf-8")
    except OSError as exc:
        raise io_error(target, exc) from exc
    return paths

"""Two `anvil bench --report` folders on the same cases: how each metric's agreement moved.

A prompt change (a template, a question's wording) is judged by running the same bench before
and after it, each into its own report folder, then pairing the two runs case by case:

    anvil bench --data D --label labels.L --metric M --report before/   # on the old code
    anvil bench --data D --label labels.L --metric M --report after/    # on the new code
    python benchmarks/paired_reports.py --data D --label labels.L before/ after/

A suite's two runs (`anvil bench --suite S --report ...`) are paired with `--suite S`: each
metric is compared with its own label, as the bench did.

For a binary label it prints AUROC before and after and the paired difference; for a graded
label the mean per-document Spearman. Intervals resample whole documents (the bench's own
bootstrap), the same documents for both runs, so the difference's interval is paired.

Figures: with `--question ID`, benchmarks/results/ID.json (or `--out PATH`); none by default.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from harness import add_out, write_figures

from anvil_local.bench import stats
from anvil_local.bench.run import continuous_score, label_kind
from anvil_local.bench.suite import document_of, labels_of, load_suite
from anvil_local.errors import AnvilError
from anvil_local.run.dataset import read_cases
from anvil_local.run.results import read_results


def read_report(folder: Path) -> dict[str, dict[tuple[str, str], float]]:
    """model -> (metric, case id) -> the score the bench compares with the label."""
    out: dict[str, dict[tuple[str, str], float]] = {}
    for path in sorted(folder.glob("results-*.jsonl")):
        model = path.stem.removeprefix("results-")
        scores = out.setdefault(model, {})
        for line in read_results(path).lines():
            score = continuous_score(line)
            if score is not None:
                scores[(line.metric, line.case_id)] = score
    return out


def statistic(kind: str, pred: np.ndarray, human: np.ndarray, docs: list[str]) -> stats.Stat:
    if kind == "binary":
        return lambda i: stats.auroc(pred[i], human[i])
    return stats.document_mean("spearman", pred, human, stats.doc_groups(docs))


class Labels:
    """Human labels of the cases: which label each metric is compared with, and the values."""

    def __init__(self, data: Path, label_of: Callable[[str], str | None]) -> None:
        self.rows = read_cases(data)
        self.data = data
        self.label_of = label_of
        self.doc_of = {r.case_id: document_of(r) for r in self.rows}
        self._values: dict[str, dict[str, float]] = {}

    def values(self, label: str) -> dict[str, float]:
        if label not in self._values:
            ids = (r.case_id for r in self.rows)
            values = labels_of(self.rows, label, str(self.data))
            self._values[label] = dict(zip(ids, (float(v) for v in values), strict=True))
        return self._values[label]


COLUMNS = ["model", "metric", "cases", "statistic", "before", "after", "after - before"]


def interval(est: stats.Estimate) -> dict[str, float]:
    return {"value": est.value, "low": est.low, "high": est.high}


def compare(labels: Labels, before: Path, after: Path) -> list[list]:
    """One row per (model, metric) both runs scored: the statistic before, after, and the
    paired difference, each with its 95% interval."""
    rows: list[list] = []
    old_runs, new_runs = read_report(before), read_report(after)
    for folder, runs in ((before, old_runs), (after, new_runs)):
        if not runs:
            raise SystemExit(f"{folder}: no results-*.jsonl (an `anvil bench --report` folder?)")
    for model, new in new_runs.items():
        if model not in old_runs:
            print(f"{model}: in {after} only, not compared", file=sys.stderr)
            continue
        old = old_runs[model]
        for metric in dict.fromkeys(m for m, _ in new):  # first-seen order, as the bench ran
            label = labels.label_of(metric)
            if label is None:
                print(f"{metric}: no label for it in the suite, not compared", file=sys.stderr)
                continue
            human_of = labels.values(label)
            ids = [c for (m, c) in new if m == metric and (m, c) in old]
            if len(ids) < 2:
                continue
            kind = label_kind(np.asarray(list(human_of.values()), dtype=float))
            docs = [labels.doc_of[c] for c in ids]
            human = np.asarray([human_of[c] for c in ids], dtype=float)
            a = statistic(kind, np.asarray([old[(metric, c)] for c in ids]), human, docs)
            b = statistic(kind, np.asarray([new[(metric, c)] for c in ids]), human, docs)
            groups = stats.doc_groups(docs)
            ea, eb = stats.estimate(a, groups, len(ids)), stats.estimate(b, groups, len(ids))
            d = stats.paired_difference(a, b, docs, len(ids))
            name = "AUROC" if kind == "binary" else "doc Spearman"
            rows.append([model, metric, len(ids), name, interval(ea), interval(eb), interval(d)])
    return rows


def table(rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|---|---|---|---|---|---|"]
    for model, metric, cases, name, ea, eb, d in rows:
        lines.append(
            f"| {model} | {metric} | {cases} | {name} |"
            f" {ea['value']:.3f} [{ea['low']:.2f}, {ea['high']:.2f}]"
            f" | {eb['value']:.3f} [{eb['low']:.2f}, {eb['high']:.2f}]"
            f" | {d['value']:+.3f} [{d['low']:+.2f}, {d['high']:+.2f}] |"
        )
    return lines


def suite_labels(name: str) -> Labels:
    """Each metric of a suite (a panel file brings its members) with the suite's label."""
    suite = load_suite(name)
    label_by_metric: dict[str, str] = {}
    for spec in suite.metrics:
        for metric in spec.metrics():
            label_by_metric[metric.name] = spec.label
    return Labels(suite.data, label_by_metric.get)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, help="the cases both runs scored")
    parser.add_argument("--label", help="labels.NAME, as given to the bench")
    parser.add_argument("--suite", help="the suite both runs ran (instead of --data, --label)")
    parser.add_argument("before", type=Path, help="report folder of the first run")
    parser.add_argument("after", type=Path, help="report folder of the second run")
    parser.add_argument(
        "--question",
        help="write the table as benchmarks/results/QUESTION.json (a README marker shows it)",
    )
    add_out(parser, "the JSON figures (default: none, unless --question)")
    args = parser.parse_args()
    try:
        if args.suite:
            if args.data or args.label:
                parser.error("give --suite, or --data with --label, not both")
            labels = suite_labels(args.suite)
        elif args.data and args.label:
            labels = Labels(args.data, lambda metric: args.label)
        else:
            parser.error("give --suite, or --data with --label")
        rows = compare(labels, args.before, args.after)
        print("\n".join(table(rows)))
    except AnvilError as exc:
        raise SystemExit(f"error: {exc}") from None
    if args.question or args.out:
        write_figures(
            args,
            args.question or "paired_reports",
            f"{args.before} against {args.after}, paired case by case "
            f"({args.suite or args.data}), 95% intervals over resampled documents",
            COLUMNS,
            rows,
            formats={"before": ".3f", "after": ".3f", "after - before": "+.3f"},
            settings={"suite": args.suite, "data": args.data, "label": args.label},
        )


if __name__ == "__main__":
    main()

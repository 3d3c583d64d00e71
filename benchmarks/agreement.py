"""Agreement with human labels: an `anvil bench --report` folder as the README's figures.

    anvil bench --suite qags_xsum --model smollm2-135m-instruct --model gemma-3-270m \
        --report out/qags_xsum
    python benchmarks/agreement.py out/qags_xsum

The bench does the measuring (its `bench.json`: every metric on every model against its
label, 95% intervals from 1,000 resamples of whole documents); this script keeps the figures
the README shows: for a graded label (SummEval) the per-document and pooled Spearman, for a
binary one (QAGS-XSum, SummEdits) AUROC, the balanced accuracy at a cut fitted on the other
half of the documents and the calibration error, and for both the tokens evaluated and
seconds per case. Model comparisons and fitted calibrations in the bench become notes.

Figures: benchmarks/results/agreement_<suite>.json (`--question NAME` for another name; a
bench run without `--suite` needs one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness import parser, variant_name, write_figures

from anvil_local.run.results import read_results

GRADED = [("doc_spearman", "doc Spearman"), ("spearman", "Spearman")]
BINARY = [
    ("auroc", "AUROC"),
    ("balanced_accuracy_fitted", "bal. acc. (fitted cut)"),
    ("ece", "ECE"),
]
COST = [
    ("evaluated_tokens_per_case", "tokens evaluated/case", ".0f"),
    ("seconds_per_case", "s/case", ".2f"),
]


def interval(value: Any) -> Any:
    """A bench estimate ({value, low, high}) as a cell; a plain number stays one."""
    if isinstance(value, dict):
        if value.get("value") is None:
            return None
        if value.get("low") is None:
            return value["value"]
        return {k: value[k] for k in ("value", "low", "high")}
    return value


def cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, dict):
        return f"{value['value']:.3f} [{value['low']:.2f}, {value['high']:.2f}]"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def model_shas(folder: Path) -> dict[str, str]:
    """model name -> sha256, from each results file of the report (its metadata line, else
    its first result line)."""
    found = {}
    for path in sorted(folder.glob("results-*.jsonl")):
        name, sha = read_results(path).model
        if sha:
            found[name or path.stem.removeprefix("results-")] = sha
    return found


def figures(bench: dict[str, Any]) -> tuple[list[str], list[list], dict[str, str], list[str]]:
    """(columns, rows, formats, notes) of one bench.json."""
    kinds = {m["kind"] for m in bench["metrics"]}
    stats = (GRADED if "graded" in kinds else []) + (BINARY if "binary" in kinds else [])
    columns = ["model", "metric", "label", "cases", *(h for _, h in stats)]
    columns += [h for _, h, _ in COST]
    rows = []
    for m in bench["metrics"]:
        agreement = m["agreement"]
        row = [m["model"], m["metric"], m["label"], m["cases"]]
        row += [interval(agreement.get(key)) for key, _ in stats]
        row += [m["cost"].get(key) for key, _, _ in COST]
        rows.append(row)
    formats = {h: ".3f" for _, h in stats}
    formats.update({h: f for _, h, f in COST})
    notes = [
        f"{bench['cases']} cases of {bench['docs']} documents ({bench['data']}); "
        f"{bench['resamples']} resamples, seed {bench['seed']}"
    ]
    for run in bench.get("runs", []):
        notes.append(
            f"{run['model']}: {run['judged']} judged, {run['cached']} from the cache, "
            f"{run['resumed']} resumed, in {run['wall_seconds']:.1f} s"
        )
    for c in bench.get("model_comparisons", []):
        d = c["difference_b_minus_a"]
        notes.append(
            f"{c['metric']} ({c['label']}), {c['statistic']}, {c['b']} - {c['a']}: "
            f"{d['value']:+.3f} [{d['low']:+.2f}, {d['high']:+.2f}]"
        )
    for fit in bench.get("calibrations", []):
        name = fit["headline"]
        before, after = fit["before"].get(name, {}), fit["after"].get(name, {})
        notes.append(
            f"{fit['metric']} on {fit['model']}, fitted calibration ({fit['fit_cases']} cases), "
            f"{name} on {fit['check_cases']} held-out cases: {before.get('value')} -> "
            f"{after.get('value')} [{after.get('low')}, {after.get('high')}]"
        )
    return columns, rows, formats, notes


def main() -> None:
    p = parser(__doc__.splitlines()[0], data=False, model=False)
    p.add_argument("report", type=Path, help="the folder `anvil bench --report` wrote")
    p.add_argument("--question", help="the results name (default: agreement_<suite>)")
    args = p.parse_args()
    source = args.report / "bench.json"
    if not source.is_file():
        raise SystemExit(f"no bench.json in {args.report} (an `anvil bench --report` folder?)")
    bench = json.loads(source.read_text())
    name = bench.get("suite") or Path(bench["data"]).stem
    if not (args.question or bench.get("suite")):
        raise SystemExit("this bench ran without --suite: name its figures with --question")
    question = args.question or f"agreement_{variant_name(name)}"
    columns, rows, formats, notes = figures(bench)
    print(" | ".join(columns))
    for row in rows:
        print(" | ".join(cell(v) for v in row))
    shas = model_shas(args.report)
    write_figures(
        args,
        question,
        f"Agreement with the human labels, {name}: {bench['cases']} cases of "
        f"{bench['docs']} documents, 95% intervals over resampled documents",
        columns,
        rows,
        formats=formats,
        units={"tokens evaluated/case": "tokens", "s/case": "s"},
        notes=notes,
        models=[{"name": n, "file": None, "sha256": sha} for n, sha in shas.items()],
        settings={"report": args.report, "suite": bench.get("suite"), "data": bench["data"]},
    )


if __name__ == "__main__":
    main()

"""How far a converted model's verdicts move from the original's, on shipped cases.

    python benchmarks/format_fidelity.py --model smollm2-135m-instruct

For the model and every file `anvil models convert` made from it, judges the 16 summaries of
`examples/summeval_sample.jsonl` with the G-Eval coherence and consistency files and the yes/no
consistency question, and the meeting summaries with the model headings graph (no cache, no
reasons). Every option distribution in every trace (G-Eval score distributions, the
probabilities at every DAG node) is compared with the original's: the largest and mean
absolute difference of a probability, how many verdicts (most probable options) flip, and the
largest score difference.

Figures: benchmarks/results/format_fidelity.json.
"""

from __future__ import annotations

from typing import Any

from harness import ROOT, SHIPPED_MODEL, parser, write_figures

from anvil_local import evaluate, load_metric
from anvil_local.models import entries, get_entry
from anvil_local.run.dataset import read_cases

JOBS = [
    (
        "examples/summeval_sample.jsonl",
        [
            "examples/geval/coherence.toml",
            "examples/geval/consistency.toml",
            "benchmarks/metrics/consistency_yes_no.toml",
        ],
    ),
    ("examples/meeting_summaries.jsonl", ["examples/headings_llm.toml"]),
]


def distributions(trace: Any, path: str = "") -> dict[str, dict[str, float]]:
    """Every option distribution in a trace, by where it sits."""
    found: dict[str, dict[str, float]] = {}
    if isinstance(trace, dict):
        for key in ("distribution", "probabilities"):
            value = trace.get(key)
            if isinstance(value, dict) and value:
                found[f"{path}/{trace.get('node', '')}{key}"] = value
        for key, value in trace.items():
            if isinstance(value, dict | list) and key not in ("distribution", "probabilities"):
                found.update(distributions(value, f"{path}/{key}"))
    elif isinstance(trace, list):
        for i, value in enumerate(trace):
            found.update(distributions(value, f"{path}[{i}]"))
    return found


def run(model: str) -> dict[tuple[str, str], Any]:
    results = {}
    for data, metric_files in JOBS:
        rows = read_cases(ROOT / data)
        metrics = [load_metric(ROOT / f) for f in metric_files]
        outcome = evaluate(rows, metrics, model=model, use_cache=False, include_reason=False)
        for line in outcome.lines:
            results[(line.case_id, line.metric)] = line.result
    return results


COLUMNS = [
    "format",
    "distributions",
    "max abs diff",
    "mean abs diff",
    "verdicts flipped",
    "max score diff",
]


def main() -> None:
    p = parser(
        __doc__.splitlines()[0],
        data=False,
        model_default=SHIPPED_MODEL,
        model_help=f"catalogue name (default: {SHIPPED_MODEL})",
    )
    args = p.parse_args()
    source = get_entry(args.model)
    converted = [e for e in entries() if e.source == source.name and e.store_path().is_file()]
    base = run(source.name)
    print(f"{len(base)} results; every distribution compared with {source.name}'s\n")
    print(
        "| format | distributions | max abs diff | mean abs diff | verdicts flipped "
        "| max score diff |"
    )
    print("|---|---|---|---|---|---|")
    rows = []
    for entry in converted:
        other = run(entry.name)
        diffs, flips, compared, score_diff = [], 0, 0, 0.0
        for key, result in base.items():
            theirs = other[key]
            if result.score is not None and theirs.score is not None:
                score_diff = max(score_diff, abs(result.score - theirs.score))
            mine_d = distributions(result.trace.to_dict())
            their_d = distributions(theirs.trace.to_dict())
            for where, dist in mine_d.items():
                if where not in their_d or set(their_d[where]) != set(dist):
                    continue  # a different walk: counted by the flip at its parent
                compared += 1
                diffs += [abs(dist[k] - their_d[where][k]) for k in dist]
                if max(dist, key=dist.get) != max(their_d[where], key=their_d[where].get):
                    flips += 1
        print(
            f"| {entry.format} | {compared} | {max(diffs):.4f} | {sum(diffs) / len(diffs):.4f} "
            f"| {flips} of {compared} | {score_diff:.4f} |"
        )
        rows.append(
            [
                entry.format,
                compared,
                max(diffs),
                sum(diffs) / len(diffs),
                f"{flips} of {compared}",
                score_diff,
            ]
        )
    write_figures(
        args,
        "format_fidelity",
        f"How far each converted file's verdicts move from {source.name}'s "
        f"({len(base)} results, no cache)",
        COLUMNS,
        rows,
        formats={"max abs diff": ".4f", "mean abs diff": ".4f", "max score diff": ".4f"},
        units={"max abs diff": "probability", "mean abs diff": "probability"},
        models=[source, *converted],
    )


if __name__ == "__main__":
    main()

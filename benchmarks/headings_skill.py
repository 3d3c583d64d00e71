"""Issue 40, part 5: the headings DAG's structural questions taught with code-made examples.
Does a judge trained on them beat the untrained judge on the same questions?

    python benchmarks/headings_skill.py [--adapter smollm2-135m-headings] [--cases 300]

Two parts, each judged by the untrained default judge and by the adapter:
- per question, on held-out code-made cases (`benchmarks/training/headings_data.py --split
  test`: other names, teams, tasks and distractor headings than the training split): P(Yes) of
  "are all three headings there?" and of "are they in order?" (asked of the cases holding all
  three), against the code's exact label: AUROC and accuracy at P(Yes) > 0.5, with 95%
  intervals over resampled cases, and the paired difference trained minus untrained;
- the README's four meeting summaries (`examples/meeting_summaries.jsonl`): the score of the
  two-question DAG (`examples/small_judge/headings_trained.toml`) for each judge, beside the
  code DAG's (`examples/headings.toml`, exact) and the untrained judge on the article's DAG
  with a task node (`examples/headings_llm.toml`).

Figures: benchmarks/results/headings_skill.json.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from harness import ROOT, add_out, write_figures

from anvil_local import evaluate
from anvil_local.bench.stats import auroc, estimate, paired_difference
from anvil_local.models import get_judge, resolve_model
from anvil_local.run.dataset import read_cases
from anvil_local.spec import load_metric

sys.path.insert(0, str(ROOT / "benchmarks" / "training"))
from headings_data import cases as made_cases

QUESTIONS = ROOT / "benchmarks" / "training" / "headings"
DAG = ROOT / "examples" / "small_judge" / "headings_trained.toml"
BASE = "smollm2-135m-instruct"


def p_yes(rows: list, metric_file: Path, judge) -> np.ndarray:
    """P(Yes) of a one-question metric on each case (its root step's distribution)."""
    outcome = evaluate(rows, [load_metric(metric_file)], model=judge, use_cache=False)
    by_id = {line.case_id: line.result for line in outcome.lines}
    return np.array(
        [by_id[r.case_id].trace.to_dict()["path"][0]["probabilities"]["Yes"] for r in rows]
    )


def rows_of(made: list[dict], tmp: Path, name: str) -> list:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in made))
    return read_cases(path)


def main() -> None:
    from harness import parser

    p = parser(__doc__.split("\n\n")[0], data=False, model=False, out=False)
    p.add_argument("--adapter", default="smollm2-135m-headings")
    p.add_argument("--cases", type=int, default=300)
    add_out(p)
    args = p.parse_args()
    made = made_cases(args.cases, 0, "test")
    judges = {name: get_judge(resolve_model(name)) for name in (BASE, args.adapter)}
    table, notes = [], []
    with tempfile.TemporaryDirectory() as tmp:
        present_rows = rows_of(made, Path(tmp), "present")
        ordered_made = [c for c in made if "ordered" in c["labels"]]
        ordered_rows = rows_of(ordered_made, Path(tmp), "ordered")
        for question, rows, key, source in (
            ("all three headings there?", present_rows, "present", made),
            ("in order?", ordered_rows, "ordered", ordered_made),
        ):
            label = np.array([c["labels"][key] for c in source], dtype=float)
            probs = {n: p_yes(rows, QUESTIONS / f"{key}.toml", j) for n, j in judges.items()}
            docs = [c["id"] for c in source]
            n = len(rows)
            for name in judges:
                pr = probs[name]
                au = estimate(lambda i, pr=pr, y=label: auroc(pr[i], y[i]), _groups(n), n)
                acc = estimate(lambda i, pr=pr, y=label: float(np.mean((pr[i] > 0.5) == y[i])),
                               _groups(n), n)  # fmt: skip
                cells = [au.value, au.low, au.high, acc.value]
                table.append([question, name, n, *(round(float(v), 3) for v in cells)])
            diff = paired_difference(
                lambda i, p=probs, y=label: auroc(p[BASE][i], y[i]),
                lambda i, p=probs, y=label: auroc(p[args.adapter][i], y[i]),
                docs,
                n,
            )
            notes.append(
                f"{question} trained minus untrained AUROC {diff.value:+.3f} "
                f"[{diff.low:+.3f}, {diff.high:+.3f}] on {n} held-out code-made cases"
            )
    meeting = read_cases(ROOT / "examples" / "meeting_summaries.jsonl")
    scores = {}
    for label_, metric_file, judge in (
        ("code DAG (exact)", ROOT / "examples" / "headings.toml", judges[BASE]),
        ("untrained judge, article's DAG", ROOT / "examples" / "headings_llm.toml", judges[BASE]),
        ("untrained judge, two-question DAG", DAG, judges[BASE]),
        ("trained judge, two-question DAG", DAG, judges[args.adapter]),
    ):
        outcome = evaluate(meeting, [load_metric(metric_file)], model=judge, use_cache=False,
                           include_reason=False)  # fmt: skip
        scores[label_] = {line.case_id: line.result.score for line in outcome.lines}
    truth = scores["code DAG (exact)"]
    for label_, by_case in scores.items():
        err = np.mean([abs(by_case[c] - truth[c]) for c in truth])
        cells = ", ".join(f"{c} {by_case[c]:.1f}" for c in truth)
        notes.append(f"meeting summaries, {label_}: {cells}; mean |score - code| {err:.2f}")
    write_figures(
        args,
        "headings_skill",
        "The headings questions: untrained judge against one trained on code-made cases",
        ["question", "judge", "cases", "AUROC", "low", "high", "accuracy at 0.5"],
        table,
        notes=notes,
        models=[resolve_model(BASE), resolve_model(args.adapter)],
    )


def _groups(n: int) -> list[np.ndarray]:
    return [np.array([i]) for i in range(n)]


if __name__ == "__main__":
    main()

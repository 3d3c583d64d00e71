"""Agreement of a pairwise metric (Arena G-Eval) with a human preference: plain functions.

A pairwise case is an arena of contestants whose label names the contestant people
preferred (`labels.preferred = "B"`). The headline is the share of cases where the judge's
winner is that contestant, with a 95% interval from resampled documents; beside it the mean
probability the judge gave the preferred contestant, the mean position bias its orders
measured (the first position's probability above an even share) and how often the orders
disagreed on the winner.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from anvil_local.bench import stats
from anvil_local.bench.suite import document_of, label_name
from anvil_local.errors import DataError
from anvil_local.run.dataset import CaseRow
from anvil_local.run.records import ResultLine


def is_pairwise(metric: Any) -> bool:
    """Whether a metric is judged against a preference (it picks a winner)."""
    return bool(getattr(metric, "pairwise", False))


def preferences(rows: list[CaseRow], label: str, source: str) -> list[str]:
    """Each case's preferred contestant; a label that names none of its contestants is an
    error naming the case."""
    name = label_name(label)
    found = []
    for row in rows:
        value = ((row.case.metadata or {}).get("labels") or {}).get(name)
        names = getattr(row.case, "names", None)
        if names is None:
            raise DataError(f"{source}: case {row.case_id!r} is not an arena of contestants")
        if value not in names:
            raise DataError(
                f"{source}: case {row.case_id!r} has no preference {name!r} naming one of its "
                f"contestants ({', '.join(names)})"
            )
        found.append(value)
    return found


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def measure_pairwise(
    metric: Any, label: str, rows: list[CaseRow], lines: dict[str, ResultLine], source: str
) -> tuple[dict[str, Any], np.ndarray, np.ndarray, list[str], int]:
    """(agreement, per-case credit, preferred contestant's index, documents, cases kept):
    errored cases are left out."""
    preferred = preferences(rows, label, source)
    credit, chance, position, index, docs, flips, biases = [], [], [], [], [], [], []
    for row, wanted in zip(rows, preferred, strict=True):
        line = lines.get(row.case_id)
        if line is None or line.result.error is not None:
            continue
        trace = line.result.trace
        probabilities = trace.get("probabilities") or {}
        if wanted not in probabilities:
            continue
        credit.append(1.0 if trace.get("winner") == wanted else 0.0)
        chance.append(float(probabilities[wanted]))
        index.append(float(row.case.names.index(wanted)))
        position.append(float(row.case.names.index(wanted) == 0))
        docs.append(document_of(row))
        if trace.get("position_bias") is not None:
            biases.append(float(trace.get("position_bias")))
            flips.append(0.0 if trace.get("consistent") else 1.0)
    if len(credit) < 2:
        raise DataError(f"metric {metric.name!r} judged fewer than 2 arenas; nothing to compare")
    pred, chance_arr = np.asarray(credit), np.asarray(chance)
    groups = stats.doc_groups(docs)
    n = len(pred)
    agreement: dict[str, Any] = {
        "agreement": stats.estimate(lambda i: float(np.mean(pred[i])), groups, n),
        "preferred_probability": stats.estimate(lambda i: float(np.mean(chance_arr[i])), groups, n),
        "preferred_first": float(np.mean(position)),
        "position_bias": _mean(biases),
        "order_disagreement": _mean(flips),
    }
    return agreement, pred, np.asarray(index), docs, n


def bias_text(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:+.3f}"

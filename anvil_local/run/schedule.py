"""Prefix-aware scheduling (pure): cases that share their leading prompt part run together.

Prompts put the shared fields (input, context) before the varying one (actual_output), so
cases with the same input share a token prefix. Grouping them and running each group on one
worker, back to back, prefills the shared part once per group instead of once per case.
"""

from __future__ import annotations

import json
import math

from anvil_local.run.dataset import CaseRow
from anvil_local.testcase import SingleTurnParams

SHARED_FIELDS = (
    SingleTurnParams.INPUT,
    SingleTurnParams.CONTEXT,
    SingleTurnParams.RETRIEVAL_CONTEXT,
)


def prefix_key(row: CaseRow) -> str:
    return json.dumps([row.case.get(p) for p in SHARED_FIELDS], ensure_ascii=False)


def group_by_prefix(rows: list[CaseRow]) -> list[list[CaseRow]]:
    """Groups in order of first appearance; cases keep their file order inside a group."""
    groups: dict[str, list[CaseRow]] = {}
    for row in rows:
        groups.setdefault(prefix_key(row), []).append(row)
    return list(groups.values())


def split_for_workers(groups: list[list[CaseRow]], jobs: int) -> list[list[CaseRow]]:
    """Cut big groups into near-equal chunks so `jobs` workers finish together.

    Each cut costs one more prefill of the shared part, so chunks stay as large as balance
    allows: at most ceil(cases / (2 * jobs)) cases, largest chunks first.
    """
    if jobs <= 1:
        return groups
    total = sum(len(g) for g in groups)
    limit = max(1, math.ceil(total / (2 * jobs)))
    chunks: list[list[CaseRow]] = []
    for group in groups:
        parts = math.ceil(len(group) / limit)
        size = math.ceil(len(group) / parts)
        chunks += [group[i : i + size] for i in range(0, len(group), size)]
    return sorted(chunks, key=len, reverse=True)

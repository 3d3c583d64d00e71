"""Prefix-aware scheduling (pure): cases that share their leading prompt part run together.

Prompts put the shared fields (input, context) before the varying one (actual_output), so
cases with the same input share a token prefix. Grouping them and running each group on one
worker, back to back, prefills the shared part once per group instead of once per case.
"""

from __future__ import annotations

import json

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

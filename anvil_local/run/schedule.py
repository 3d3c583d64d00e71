"""Prefix-aware scheduling (pure): prompts that share a leading part run back to back.

Prompts put the shared fields (input, context) before the varying one (actual_output), so
cases with the same input share a token prefix. Grouping them and running each group on one
worker, back to back, prefills the shared part once per group instead of once per case.

Inside a group the order of (case, metric) pairs follows each metric's layout
(`pair_order`): a metric whose prompts put its definition between the shared input and the
case's own fields (G-Eval) runs over the group's cases in a row (metric-major), so the input
is read once per group and the definition once per group and metric; a metric whose prompts
put the whole case first (DAG, likelihood) runs case-major, so the nodes and metrics looking
at one case share that case's prefix. The group's cases go in the order of their own fields
(`trie_order`), so outputs that open alike meet in the KV cache.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, Protocol

from anvil_local.run.dataset import CaseRow
from anvil_local.testcase import PROMPT_ORDER, SHARED_PARAMS

SHARED_FIELDS = SHARED_PARAMS
#: The fields that differ between the cases of a prefix group, in prompt order.
OWN_FIELDS = tuple(p for p in PROMPT_ORDER if p not in SHARED_PARAMS)


def prefix_key(row: CaseRow) -> str:
    """The fields the case shares with others (a single-turn case's input and context, a
    conversation's chatbot role and context, an arena's input), as text."""
    return json.dumps(row.case.shared_fields(), ensure_ascii=False)


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


class _Item(Protocol):
    row: CaseRow
    metrics: tuple[int, ...]


def own_key(row: Any) -> tuple[str, ...]:
    """A case's own fields (what follows the shared prefix in its prompts), as text."""
    case = getattr(row, "case", None)
    if case is None:
        return ()
    return tuple(json.dumps(value, ensure_ascii=False) for value in case.own_fields())


def trie_order(items: Sequence[_Item]) -> list[Any]:
    """A group's items sorted by their own fields (ties keep file order). Prompts then come
    in the order of a depth-first walk of their trie: two outputs that open with the same
    words run back to back, so the single KV sequence still holds the shared words when the
    second one is read, and each shared token is read once."""
    return sorted(items, key=lambda item: own_key(item.row))


def pair_order(items: Sequence[_Item], metrics: Sequence[Any]) -> list[tuple[Any, int]]:
    """The (item, metric index) pairs of `items` in the order that keeps prompt prefixes
    warm: the items in `trie_order`; metric-major metrics first (in declared order), then
    the others case-major. Every pair appears once."""
    items = trie_order(items)
    first = [i for i in range(len(metrics)) if getattr(metrics[i], "metric_major", False)]
    order: list[tuple[Any, int]] = []
    for index in first:
        order += [(item, index) for item in items if index in item.metrics]
    for item in items:
        order += [(item, index) for index in item.metrics if index not in first]
    return order

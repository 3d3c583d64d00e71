"""The scheduler's pair order and the prompt-trie count (pure: no model)."""

from __future__ import annotations

from dataclasses import dataclass

from anvil_local.judge.trie import PromptTrie
from anvil_local.run.schedule import pair_order


@dataclass
class Row:
    position: int


@dataclass
class Item:
    row: Row
    metrics: tuple[int, ...]


class DefinitionFirst:
    metric_major = True


class CaseFirst:
    metric_major = False


def test_metric_major_metrics_run_first_over_the_group_and_the_rest_case_major():
    metrics = [CaseFirst(), DefinitionFirst(), DefinitionFirst(), CaseFirst()]
    items = [Item(Row(0), (0, 1, 2, 3)), Item(Row(1), (1, 3)), Item(Row(2), (0, 2))]
    order = [(item.row.position, index) for item, index in pair_order(items, metrics)]
    assert order == [
        (0, 1), (1, 1),  # metric 1 over its cases
        (0, 2), (2, 2),  # then metric 2
        (0, 0), (0, 3), (1, 3), (2, 0),  # then case by case, the case-first metrics
    ]  # fmt: skip


def test_every_pair_appears_once():
    metrics = [DefinitionFirst(), CaseFirst(), DefinitionFirst()]
    items = [Item(Row(i), tuple(m for m in range(3) if (i + m) % 2 == 0)) for i in range(6)]
    order = [(item.row.position, index) for item, index in pair_order(items, metrics)]
    wanted = [(item.row.position, m) for item in items for m in item.metrics]
    assert sorted(order) == sorted(wanted) and len(order) == len(set(order))


def test_the_trie_counts_each_shared_position_once():
    trie = PromptTrie()
    assert trie.add([1, 2, 3, 4]) == 4
    assert trie.add([1, 2, 3, 4]) == 0  # the same prompt again: nothing new
    assert trie.add([1, 2, 5]) == 1  # shares [1, 2]
    assert trie.add([2, 1]) == 2  # same tokens, other positions: a different path
    assert trie.add([1, 2, 3, 4, 9, 9]) == 2
    assert len(trie) == 9


def test_the_trie_stops_counting_past_its_limit_and_says_so(caplog):
    trie = PromptTrie(limit=5)
    assert trie.add([1, 2, 3]) == 3
    trie.add([7, 8, 9])
    assert trie.overflowed and trie.add([4, 5]) == 0
    assert "stopped counting the prompt trie past 5 tokens" in caplog.text


def test_a_group_runs_in_the_order_of_its_own_fields_so_shared_openings_meet():
    from anvil_local.run.dataset import CaseRow
    from anvil_local.run.schedule import trie_order
    from anvil_local.testcase import LLMTestCase

    outputs = ["The bridge shuts.", "A storm.", "The bridge closes.", "A storm.", "The bus."]
    items = [
        Item(CaseRow(i, i + 1, LLMTestCase(input="article", actual_output=text)), (0,))
        for i, text in enumerate(outputs)
    ]
    ordered = [item.row.position for item in trie_order(items)]
    assert ordered == [1, 3, 2, 0, 4]  # ties keep file order; "The bridge ..." side by side
    pairs = [(item.row.position, m) for item, m in pair_order(items, [CaseFirst()])]
    assert pairs == [(p, 0) for p in ordered]

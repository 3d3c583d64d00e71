"""Exact option probabilities over a token trie (hand-computed values)."""

import math

import numpy as np
import pytest

from anvil_local.judge.options import argmax_first, build_trie, option_probabilities

END_IDS = (90, 91)


def logits(values: dict[int, float], size: int = 100) -> np.ndarray:
    out = np.full(size, -1e9, dtype=np.float32)
    for token, p in values.items():
        out[token] = math.log(p)
    return out


def never(path):
    raise AssertionError(f"no decode expected, asked for {path}")


def test_single_token_options_need_one_forward_pass():
    root = logits({1: 0.2, 2: 0.6, 3: 0.1, 50: 0.1})  # token 50 is not an option
    probs, decodes = option_probabilities([[1], [2], [3]], root, never, END_IDS)
    assert decodes == 0
    assert probs == pytest.approx([0.2 / 0.9, 0.6 / 0.9, 0.1 / 0.9])
    assert sum(probs) == pytest.approx(1.0)


def test_option_that_is_a_prefix_of_another_uses_the_end_tokens():
    # options "1" = [1] and "10" = [1, 0]; "2" = [2]
    root = logits({1: 0.5, 2: 0.5})
    after_one = logits({0: 0.3, 90: 0.5, 91: 0.2})  # END = P(90) + P(91) = 0.7
    asked = []

    def after(path):
        asked.append(path)
        return after_one

    probs, decodes = option_probabilities([[1], [1, 0], [2]], root, after, END_IDS)
    assert asked == [(1,)] and decodes == 1
    assert probs == pytest.approx([0.5 * 0.7, 0.5 * 0.3, 0.5])


def test_unique_continuations_are_forced_and_need_no_decode():
    # "Two are out of order" vs "All out of order": first tokens differ, rest is forced
    root = logits({7: 0.25, 8: 0.75})
    probs, decodes = option_probabilities([[7, 11, 12], [8, 13]], root, never, END_IDS)
    assert decodes == 0
    assert probs == pytest.approx([0.25, 0.75])


def test_branching_below_the_root_is_decoded_once_per_node():
    root = logits({5: 1.0})
    inner = logits({6: 0.4, 7: 0.6})
    probs, decodes = option_probabilities([[5, 6], [5, 7]], root, lambda p: inner, END_IDS)
    assert decodes == 1
    assert probs == pytest.approx([0.4, 0.6])


def test_duplicate_token_sequences_are_rejected():
    with pytest.raises(ValueError):
        build_trie([[1, 2], [1, 2]])


def test_argmax_ties_go_to_the_first_declared_option():
    assert argmax_first([0.4, 0.4, 0.2]) == 0
    assert argmax_first([0.1, 0.45, 0.45]) == 1

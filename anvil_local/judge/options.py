"""Exact option probabilities from next-token logits (pure arithmetic, no model).

Options are token sequences arranged in a trie. At every trie node where the answer can go
more than one way, the judge reads the next-token logits and takes a softmax restricted to
the allowed continuations: the child tokens, plus "end of answer" (the end-of-generation
tokens) when an option ends there. An option's probability is the product along its path.
This is the grammar's view: the distribution a decoder constrained to exactly these options
follows. It sums to 1 over the options, handles options sharing first tokens ("1" / "10")
exactly, and needs logits only at branching nodes: one forward pass when all options start
with different tokens, plus one short decode per extra branching point otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

END = -1  # pseudo-token: the answer ends here


@dataclass
class TrieNode:
    children: dict[int, TrieNode] = field(default_factory=dict)
    option: int | None = None  # index of the option that ends at this node

    def branches(self) -> list[int]:
        """Allowed continuations in a fixed order: END first, then child tokens as inserted."""
        keys = list(self.children)
        return [END, *keys] if self.option is not None else keys


def build_trie(sequences: Sequence[Sequence[int]]) -> TrieNode:
    root = TrieNode()
    for index, seq in enumerate(sequences):
        if not seq:
            raise ValueError(f"option {index} has no tokens")
        node = root
        for token in seq:
            node = node.children.setdefault(token, TrieNode())
        if node.option is not None:
            raise ValueError(f"options {node.option} and {index} have the same tokens")
        node.option = index
    return root


def log_softmax_restricted(
    logits: np.ndarray, tokens: Sequence[int], end_ids: Sequence[int]
) -> np.ndarray:
    """Log-probabilities over `tokens` (END = logsumexp of the end tokens), renormalised."""
    values = np.empty(len(tokens), dtype=np.float64)
    for i, token in enumerate(tokens):
        if token == END:
            ends = logits[list(end_ids)].astype(np.float64)
            peak = ends.max()
            values[i] = peak + np.log(np.exp(ends - peak).sum())
        else:
            values[i] = float(logits[token])
    peak = values.max()
    return values - (peak + np.log(np.exp(values - peak).sum()))


def option_probabilities(
    sequences: Sequence[Sequence[int]],
    root_logits: np.ndarray,
    logits_after: Callable[[tuple[int, ...]], np.ndarray],
    end_ids: Sequence[int],
) -> tuple[list[float], int]:
    """P(option) for each sequence, and how many extra decodes were needed.

    `logits_after(path)` returns next-token logits after the prompt plus `path` tokens; it
    is called only for branching nodes below the root, in depth-first order.
    """
    trie = build_trie(sequences)
    logp = [0.0] * len(sequences)
    decodes = 0

    def walk(node: TrieNode, path: tuple[int, ...], acc: float, logits: np.ndarray | None):
        nonlocal decodes
        branches = node.branches()
        if len(branches) == 1:
            lp = np.zeros(1)
        else:
            if logits is None:
                logits = logits_after(path)
                decodes += 1
            lp = log_softmax_restricted(logits, branches, end_ids)
        for branch, value in zip(branches, lp, strict=True):
            if branch == END:
                logp[node.option] = acc + float(value)  # type: ignore[index]
            else:
                walk(node.children[branch], (*path, branch), acc + float(value), None)

    walk(trie, (), 0.0, root_logits)
    probs = np.exp(np.array(logp, dtype=np.float64))
    probs = probs / probs.sum()
    return [float(p) for p in probs], decodes


def argmax_first(probs: Sequence[float]) -> int:
    """The most probable index; ties go to the first declared option."""
    best = 0
    for i, p in enumerate(probs):
        if p > probs[best]:
            best = i
    return best


def checked_options(options: Sequence[object]) -> tuple[tuple[str, ...], list[str]]:
    """The options as declared (labels) and as read (stripped); none, or two that differ
    only in spaces, are refused (by every judge, local or remote, the same way)."""
    labels = tuple(str(o) for o in options)
    if not labels:
        raise ValueError("choose() needs at least one option")
    stripped = [label.strip() for label in labels]
    if len(set(stripped)) != len(stripped):
        raise ValueError(f"options must be distinct: {list(labels)}")
    return labels, stripped

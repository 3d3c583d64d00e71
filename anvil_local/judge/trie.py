"""The prompt trie of a run: how many distinct token positions its prompts hold.

Every prompt the judge evaluates is a path from the root of one trie (token by token). A
position shared by two prompts is one node, so the trie's size is the least number of tokens
any order of evaluation could get away with, given a KV cache that keeps what it has read.
Comparing it with the tokens llama.cpp actually evaluated says how much the layout and the
schedule still waste.

Nodes are kept as 64-bit hashes of their path (each built from its parent's hash), so a node
costs one set entry; past `limit` nodes the count stops and says so rather than use memory
without bound on a very large run (with a warning: the run's trie figure is then too small).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

log = logging.getLogger(__name__)

_MASK = (1 << 64) - 1
_PRIME = 0x100000001B3  # FNV-1a's 64-bit prime


class PromptTrie:
    """Distinct token positions over every sequence added (see the module docstring)."""

    def __init__(self, limit: int = 1_000_000) -> None:
        self._nodes: set[int] = set()
        self.limit = limit
        self.overflowed = False

    def __len__(self) -> int:
        return len(self._nodes)

    def add(self, tokens: Sequence[int]) -> int:
        """Add one evaluated sequence; returns how many of its positions were new."""
        if self.overflowed:
            return 0
        nodes = self._nodes
        before = len(nodes)
        h = 0xCBF29CE484222325  # FNV offset basis: the root
        for token in tokens:
            h = ((h ^ (token + 1)) * _PRIME) & _MASK
            h = ((h ^ (h >> 29)) * 0xBF58476D1CE4E5B9) & _MASK  # mix, so paths don't collide
            nodes.add(h)
        added = len(nodes) - before
        if len(nodes) > self.limit:
            self.overflowed = True
            nodes.clear()
            log.warning(
                "stopped counting the prompt trie past %d tokens: the run's trie figure "
                "covers only the prompts before that",
                self.limit,
            )
        return added

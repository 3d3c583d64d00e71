"""Which tokens of a text belong to content words, for likelihood metrics that skip the rest.

Punctuation and function words (articles, prepositions, auxiliaries, conjunctions) are
predicted by the grammar of the sentence, not by the source: their log-probability moves
little with the source, and their noise can decide a minimum. The list is short and closed on
purpose: negations, pronouns, numbers and names stay content, since changing one of them
changes a fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

FUNCTION_WORDS = frozenset(
    (
        *("a", "an", "the", "this", "that", "these", "those", "it", "its"),  # determiners
        *("of", "to", "in", "on", "at", "for", "with", "by", "from", "as"),  # prepositions
        *("and", "or", "but"),  # conjunctions
        *("is", "are", "was", "were", "be", "been", "being"),  # auxiliaries
        *("has", "have", "had", "do", "does", "did"),
        *("will", "would", "shall", "should", "can", "could", "may", "might", "must"),
    )
)

_WORD = re.compile(r"\w+(?:'\w+)?")


def content_token_mask(pieces: Sequence[str]) -> list[bool]:
    """For each token (its text, as the judge read it), whether it is part of a content word.

    The pieces are joined back into the text and split into words; a token counts when it
    overlaps a word that is not a function word. When no token counts (a text of function
    words and punctuation), every token does, so a value always exists.
    """
    bounds = []
    position = 0
    for piece in pieces:
        bounds.append((position, position + len(piece)))
        position += len(piece)
    content = [False] * len(pieces)
    text = "".join(pieces)
    first = 0  # tokens before this one end before the current word
    for word in _WORD.finditer(text):
        while first < len(bounds) and bounds[first][1] <= word.start():
            first += 1
        if word.group().lower() in FUNCTION_WORDS:
            continue
        index = first
        while index < len(bounds) and bounds[index][0] < word.end():
            content[index] = True
            index += 1
    return content if any(content) else [True] * len(pieces)

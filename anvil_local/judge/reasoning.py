"""Reasoning blocks: the markers that open and close a model's thinking.

Used where a template's own rendering cannot say how its reasoning block ends (a template
that opens `<think>` in the generation prompt but drops reasoning from finished turns, as
DeepSeek-R1's distills do), and to check that a prompt never ends inside an open block.
"""

from __future__ import annotations

#: (opens, closes) pairs, as chat templates write them.
MARKERS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("<think:opensource>", "</think:opensource>"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("[THINK]", "[/THINK]"),
    ("<|channel>thought", "<channel|>"),
    ("<|open|>think<|sep|>", "<|close|>think<|sep|>"),
    ("Here are my reasoning steps:\n", "[BEGIN FINAL RESPONSE]"),
)


def open_block(text: str) -> tuple[str, str] | None:
    """The marker pair whose block `text` leaves open at its end, if any."""
    for opens, closes in MARKERS:
        start = text.rfind(opens)
        if start >= 0 and text.find(closes, start + len(opens)) < 0:
            return opens, closes
    return None


def mentions_reasoning(text: str) -> bool:
    """Whether `text` holds any reasoning marker (open or closed)."""
    return any(opens in text or closes in text for opens, closes in MARKERS)


def close_block(text: str) -> str:
    """`text` with its open reasoning block closed, empty: `<think>\\n` becomes
    `<think>\\n\\n</think>\\n\\n`, the form Qwen3 and DeepSeek-R1 use to skip thinking."""
    found = open_block(text)
    if found is None:
        return text
    _, closes = found
    if text.endswith("\n"):
        return text + "\n" + closes + "\n\n"
    return text + closes


def closer_in(text: str) -> str:
    """The first closing marker `text` holds ("" if none)."""
    for _, closes in MARKERS:
        if closes in text:
            return closes
    return ""

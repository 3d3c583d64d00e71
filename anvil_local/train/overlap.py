"""Keeping evaluation documents out of training data.

A training pair whose document shares `KEEP` or more hashed word 8-grams with an evaluation
document is dropped. The hashes are read from a list (one 12-hex-digit key a line, as
`benchmarks/data/eval_ngrams.txt` ships for the three evaluation sets, both halves) or made from
a JSONL file of cases (their `input` documents), so a user can keep their own test set out.
Words are lowercased runs of letters and digits: punctuation and tokenisation differences
between two copies of one article do not hide it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path

from anvil_local.errors import DataError

N = 8
KEEP = 3
_WORD = re.compile(r"[a-z0-9]+")


def grams(text: str) -> set[str]:
    """The hashed word 8-grams of a text."""
    words = _WORD.findall(text.lower())
    return {
        hashlib.sha256(" ".join(words[i : i + N]).encode()).hexdigest()[:12]
        for i in range(max(len(words) - N + 1, 0))
    }


class EvalOverlap:
    """The hashed 8-grams of the evaluation documents, and the drop rule."""

    def __init__(self, keys: Iterable[str] = ()) -> None:
        self.keys = set(keys)

    @classmethod
    def read(cls, paths: Iterable[Path]) -> EvalOverlap:
        keys: set[str] = set()
        for path in paths:
            if not path.is_file():
                raise DataError(f"{path}: no such file of evaluation documents or n-grams")
            if path.suffix == ".jsonl":
                keys |= _case_grams(path)
            else:
                keys |= set(path.read_text(encoding="utf-8").split())
        return cls(keys)

    def hits(self, text: str) -> int:
        return len(grams(text) & self.keys)

    def seen(self, text: str) -> bool:
        """True when `text` comes from an evaluation document: drop it."""
        return bool(self.keys) and self.hits(text) >= KEEP


def _case_grams(path: Path) -> set[str]:
    keys: set[str] = set()
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                document = json.loads(line).get("input")
            except (json.JSONDecodeError, AttributeError):
                raise DataError(f"{path}:{number}: not a JSON object") from None
            if isinstance(document, str):
                keys |= grams(document)
    return keys

"""Statements, claims and truths cut by code: a text's sentences, each line of a list its own.

DeepEval asks the judge to list a text's statements as JSON, the step small models break.
Here a maintained rule-based segmenter does it (sentencex: Wikimedia's, MIT, no model, no
download, abbreviations and decimals handled), so the same text always gives the same
items. Lines are split first: a bulleted answer is one statement a bullet.
"""

from __future__ import annotations

import re

from sentencex import segment

#: A list marker at the start of a line ("- ", "* ", "1. ", "2) "), dropped from the item.
_MARKER = re.compile(r"^\s*(?:[-*•]|\d{1,3}[.)])\s+")


def sentences(text: str | None, language: str = "en") -> list[str]:
    """The sentences of `text` in order, stripped, list markers dropped; [] for no text."""
    if not text or not text.strip():
        return []
    out: list[str] = []
    for line in text.splitlines():
        line = _MARKER.sub("", line).strip()
        if not line:
            continue
        out.extend(s.strip() for s in segment(language, line) if s.strip())
    return out


def limited(texts: list[str], limit: int | None) -> list[str]:
    """Each text's first `limit` sentences (all of them for None): the deterministic
    reading of DeepEval's `truths_extraction_limit` ("the k most important truths per
    document")."""
    out: list[str] = []
    for text in texts:
        found = sentences(text)
        out.extend(found if limit is None else found[:limit])
    return out

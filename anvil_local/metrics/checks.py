"""Deterministic checks on text: what code nodes and code metrics compute (pure functions).

A check takes the text it reads and its arguments from the metric file, and returns a bool
or a number. Built-in checks cover what code does exactly (patterns, terms, lengths, JSON,
order, n-gram overlap); `register_check("name")` adds a Python function under a name, so
metric files stay declarative and workers rebuild them by name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from anvil_local.errors import MetricDefinitionError

#: fn(text, source, **args) -> bool | float. `source` is the second text a check compares
#: with (n-gram overlap), else None.
Check = Callable[..., bool | float]

_CHECKS: dict[str, Check] = {}


def register_check(name: str) -> Callable[[Check], Check]:
    def decorate(fn: Check) -> Check:
        _CHECKS[name] = fn
        return fn

    return decorate


def get_check(name: Any) -> Check:
    if name not in _CHECKS:
        raise MetricDefinitionError(
            f"unknown check {name!r} (expected one of: {', '.join(sorted(_CHECKS))})"
        )
    return _CHECKS[name]


def check_names() -> list[str]:
    return sorted(_CHECKS)


def _flags(ignore_case: bool) -> int:
    return re.IGNORECASE if ignore_case else 0


def _terms(terms: Any) -> list[str]:
    if isinstance(terms, str) or not isinstance(terms, list) or not terms:
        raise MetricDefinitionError("'terms' must be a non-empty list of strings")
    if not all(isinstance(t, str) and t for t in terms):
        raise MetricDefinitionError("'terms' must be a non-empty list of strings")
    return terms


def _fold(text: str, ignore_case: bool) -> str:
    return text.casefold() if ignore_case else text


@register_check("regex")
def regex(text: str, source: Any = None, *, pattern: str, ignore_case: bool = False) -> bool:
    """The pattern occurs in the text."""
    return re.search(pattern, text, _flags(ignore_case) | re.MULTILINE) is not None


@register_check("regex_count")
def regex_count(text: str, source: Any = None, *, pattern: str, ignore_case: bool = False) -> float:
    """How many times the pattern occurs."""
    return float(len(re.findall(pattern, text, _flags(ignore_case) | re.MULTILINE)))


@register_check("contains_all")
def contains_all(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> bool:
    folded = _fold(text, ignore_case)
    return all(_fold(t, ignore_case) in folded for t in _terms(terms))


@register_check("contains_any")
def contains_any(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> bool:
    folded = _fold(text, ignore_case)
    return any(_fold(t, ignore_case) in folded for t in _terms(terms))


@register_check("ordered")
def ordered(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> bool:
    """Every term occurs, first occurrences in the order given."""
    folded = _fold(text, ignore_case)
    positions = [folded.find(_fold(t, ignore_case)) for t in _terms(terms)]
    return all(p >= 0 for p in positions) and positions == sorted(positions)


@register_check("misplaced")
def misplaced(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> float:
    """How many of the terms are not at their position: the terms ordered by first
    occurrence in the text, compared place by place with the order given (a missing term
    counts as misplaced). 0 means every term is there, in order."""
    folded = _fold(text, ignore_case)
    found = [(folded.find(_fold(t, ignore_case)), t) for t in _terms(terms)]
    seen = [t for position, t in sorted(found) if position >= 0]
    return float(sum(1 for i, t in enumerate(terms) if i >= len(seen) or seen[i] != t))


@register_check("length")
def length(
    text: str,
    source: Any = None,
    *,
    unit: str = "words",
    min: int | None = None,
    max: int | None = None,
) -> bool:
    """The text's length in words (or chars) is within [min, max]."""
    if unit not in ("words", "chars"):
        raise MetricDefinitionError("'unit' must be 'words' or 'chars'")
    size = len(text.split()) if unit == "words" else len(text)
    return (min is None or size >= min) and (max is None or size <= max)


@register_check("json_valid")
def json_valid(text: str, source: Any = None, *, schema: dict | None = None) -> bool:
    """The text is JSON (and, given a JSON schema, valid against it)."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    if schema is None:
        return True
    import jsonschema

    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError:
        return False
    return True


@register_check("number")
def number(text: str, source: Any = None) -> float:
    """The first number in the text (a comparison then makes it a verdict)."""
    match = re.search(r"[-+]?\d+(?:\.\d+)?", text)
    if match is None:
        raise ValueError(f"no number in {text[:40]!r}")
    return float(match.group(0))


def words(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits), the unit of the n-gram checks."""
    return re.findall(r"[^\W_]+", text.casefold())


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


@register_check("ngram_overlap")
def ngram_overlap(text: str, source: Any = None, *, n: int = 2) -> float:
    """The share of the text's word n-grams that also occur in the source (1.0 when the text
    has none): how much of a summary is supported word for word by its document."""
    if source is None:
        raise MetricDefinitionError("ngram_overlap needs a 'source' field to compare with")
    if not isinstance(n, int) or n < 1:
        raise MetricDefinitionError("'n' must be a positive integer")
    grams = ngrams(words(text), n)
    if not grams:
        return 1.0
    known = set(ngrams(words(source), n))
    return sum(1 for g in grams if g in known) / len(grams)


@register_check("novel_ngrams")
def novel_ngrams(text: str, source: Any = None, *, n: int = 2) -> float:
    """The share of the text's word n-grams absent from the source."""
    return 1.0 - ngram_overlap(text, source, n=n)


def compare(value: bool | float, spec: dict[str, Any]) -> bool:
    """A check's value as a verdict: a bool as it is, a number against `at_least` /
    `at_most` (both optional, inclusive)."""
    if isinstance(value, bool):
        return value
    low, high = spec.get("at_least"), spec.get("at_most")
    if low is None and high is None:
        raise MetricDefinitionError(
            "a numeric check needs 'at_least' and/or 'at_most' to give a verdict"
        )
    return (low is None or value >= low) and (high is None or value <= high)


def run_check(name: str, text: str, source: str | None, args: dict[str, Any]) -> bool | float:
    """Call a check with its arguments; a bad argument is a definition error."""
    fn = get_check(name)
    try:
        return fn(text, source, **args)
    except TypeError as exc:
        raise MetricDefinitionError(f"check {name!r}: {exc}") from exc

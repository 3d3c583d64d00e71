"""Deterministic checks on text: what code nodes and code metrics compute (pure functions).

A check takes the text it reads and its arguments from the metric file, and returns a bool
or a number. Built-in checks cover what code does exactly (patterns, terms, lengths, JSON,
order, n-gram overlap); `anvil_local.registry.register_check("name")` adds a Python
function under a name, so metric files stay declarative and workers rebuild them by name.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.registry import CHECKS, register_check

#: fn(text, source, **args) -> bool | float. `source` is the second text a check compares
#: with (n-gram overlap), else None.
Check = Callable[..., bool | float]


# -- arguments, checked when a metric file is loaded ---------------------------------------


def _pattern(pattern: Any = None, ignore_case: Any = False, **_: Any) -> None:
    if not isinstance(pattern, str) or not pattern:
        raise MetricDefinitionError("'pattern' must be a non-empty string")
    try:
        re.compile(pattern, _flags(bool(ignore_case)) | re.MULTILINE)
    except re.error as exc:
        raise MetricDefinitionError(f"invalid pattern {pattern!r}: {exc}") from None


def _term_list(terms: Any = None, **_: Any) -> None:
    _terms(terms)


def _n(n: Any = 2, **_: Any) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise MetricDefinitionError(f"'n' must be a positive integer, got {n!r}")


def _length(unit: Any = "words", min: Any = None, max: Any = None, **_: Any) -> None:
    if unit not in ("words", "chars"):
        raise MetricDefinitionError("'unit' must be 'words' or 'chars'")
    for key, value in (("min", min), ("max", max)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise MetricDefinitionError(f"'{key}' must be a whole number, got {value!r}")
        if value is not None and value < 0:
            raise MetricDefinitionError(f"'{key}' cannot be negative, got {value}")
    if min is not None and max is not None and min > max:
        raise MetricDefinitionError(f"'min' ({min}) is above 'max' ({max})")


def _schema(schema: Any = None, **_: Any) -> None:
    if schema is None:
        return
    if not isinstance(schema, dict | bool):
        raise MetricDefinitionError("'schema' must be a JSON Schema (a table)")
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        at = f" at '{where}'" if where else ""
        raise MetricDefinitionError(f"invalid JSON Schema{at}: {exc.message}") from None


def validate_check(name: Any, args: dict[str, Any]) -> None:
    """A check's name and arguments as a metric file gives them, checked before any case:
    the names against its signature, the values by its own rules (patterns compiled,
    schemas checked against their meta-schema, bounds ordered)."""
    kind = CHECKS.get(name)
    signature = inspect.signature(kind.fn)
    params = list(signature.parameters.values())[2:]  # after (text, source)
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        unknown = sorted(set(args) - {p.name for p in params})
        if unknown:
            takes = ", ".join(p.name for p in params) or "no arguments"
            raise MetricDefinitionError(
                f"check {name!r}: unknown argument(s) {', '.join(unknown)} (it takes: {takes})"
            )
    try:
        signature.bind("", None, **args)
    except TypeError as exc:
        raise MetricDefinitionError(f"check {name!r}: {exc}") from None
    if kind.validate is not None:
        try:
            kind.validate(**args)
        except MetricDefinitionError as exc:
            raise MetricDefinitionError(f"check {name!r}: {exc}") from None


def bounds(at_least: Any, at_most: Any) -> tuple[float | None, float | None]:
    """`at_least` / `at_most` as a metric file gives them: numbers, in order."""
    for key, value in (("at_least", at_least), ("at_most", at_most)):
        if value is not None and (not isinstance(value, int | float) or isinstance(value, bool)):
            raise MetricDefinitionError(f"'{key}' must be a number, got {value!r}")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise MetricDefinitionError(f"'at_least' ({at_least}) is above 'at_most' ({at_most})")
    return at_least, at_most


# -- the checks ---------------------------------------------------------------------------


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


@register_check("regex", _pattern)
def regex(text: str, source: Any = None, *, pattern: str, ignore_case: bool = False) -> bool:
    """The pattern occurs in the text."""
    return re.search(pattern, text, _flags(ignore_case) | re.MULTILINE) is not None


@register_check("regex_count", _pattern)
def regex_count(text: str, source: Any = None, *, pattern: str, ignore_case: bool = False) -> float:
    """How many times the pattern occurs."""
    return float(len(re.findall(pattern, text, _flags(ignore_case) | re.MULTILINE)))


@register_check("contains_all", _term_list)
def contains_all(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> bool:
    folded = _fold(text, ignore_case)
    return all(_fold(t, ignore_case) in folded for t in _terms(terms))


@register_check("contains_any", _term_list)
def contains_any(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> bool:
    folded = _fold(text, ignore_case)
    return any(_fold(t, ignore_case) in folded for t in _terms(terms))


@register_check("ordered", _term_list)
def ordered(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> bool:
    """Every term occurs, first occurrences in the order given."""
    folded = _fold(text, ignore_case)
    positions = [folded.find(_fold(t, ignore_case)) for t in _terms(terms)]
    return all(p >= 0 for p in positions) and positions == sorted(positions)


def _two_patterns(first: Any = None, then: Any = None, ignore_case: Any = False, **_: Any) -> None:
    for key, pattern in (("first", first), ("then", then)):
        try:
            _pattern(pattern, ignore_case)
        except MetricDefinitionError as exc:
            raise MetricDefinitionError(f"'{key}': {exc}") from None


@register_check("precedes", _two_patterns)
def precedes(
    text: str, source: Any = None, *, first: str, then: str, ignore_case: bool = False
) -> bool:
    """Nothing matches `then` before something matches `first`: the first match of `first`
    starts before the first match of `then`, or `then` never matches (on a conversation: the
    assistant asked for the order number before it promised a refund, if it promised one)."""
    flags = _flags(ignore_case) | re.MULTILINE
    later = re.search(then, text, flags)
    if later is None:
        return True
    earlier = re.search(first, text, flags)
    return earlier is not None and earlier.start() < later.start()


@register_check("misplaced", _term_list)
def misplaced(text: str, source: Any = None, *, terms: list[str], ignore_case=False) -> float:
    """How many of the terms are not at their position: the terms ordered by first
    occurrence in the text, compared place by place with the order given (a missing term
    counts as misplaced). 0 means every term is there, in order."""
    folded = _fold(text, ignore_case)
    found = [(folded.find(_fold(t, ignore_case)), t) for t in _terms(terms)]
    seen = [t for position, t in sorted(found) if position >= 0]
    return float(sum(1 for i, t in enumerate(terms) if i >= len(seen) or seen[i] != t))


@register_check("length", _length)
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


@register_check("json_valid", _schema)
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


@register_check("ngram_overlap", _n)
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


@register_check("novel_ngrams", _n)
def novel_ngrams(text: str, source: Any = None, *, n: int = 2) -> float:
    """The share of the text's word n-grams absent from the source."""
    return 1.0 - ngram_overlap(text, source, n=n)


@register_check("word_count")
def word_count(text: str, source: Any = None) -> float:
    """How many words the text has (the unit of the n-gram checks): a summary's length, which
    a head may weigh (longer summaries cover more of their document)."""
    return float(len(words(text)))


@register_check("sentence_count")
def sentence_count(text: str, source: Any = None) -> float:
    """How many sentences the text has: runs of text ended by '.', '!' or '?' and a space
    (or the end), the last one counted even without its stop."""
    return float(len([s for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s]))


@register_check("repeated_ngrams", _n)
def repeated_ngrams(text: str, source: Any = None, *, n: int = 3) -> float:
    """The share of the text's word n-grams that repeat one earlier in the same text (0.0
    when it has none): redundancy, a summary saying the same thing twice."""
    if not isinstance(n, int) or n < 1:
        raise MetricDefinitionError("'n' must be a positive integer")
    grams = ngrams(words(text), n)
    if not grams:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


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
    fn = CHECKS.get(name).fn
    try:
        return fn(text, source, **args)
    except TypeError as exc:
        raise MetricDefinitionError(f"check {name!r}: {exc}") from exc

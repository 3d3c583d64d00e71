"""Few-shot examples: worked cases with their answers, shown to the judge before the case.

An example is a small table in a metric file: the fields it shows (`input`, `actual_output`,
... or any other heading, such as a task node's output label) and the answer (`score` for a
G-Eval score, `verdict` for a yes/no or multiple-choice question):

    [[examples]]
    input = "The meeting moved the launch to May."
    actual_output = "Launch moved to May."
    score = 9

The block of examples sits right after the fixed header and before the case, so it is the
same text at the start of every prompt of the metric (or node): llama.cpp keeps it in the KV
cache and only the first case pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import MetricDefinitionError
from anvil_local.testcase import PROMPT_ORDER, SingleTurnParams, render_param

_PARAM_NAMES = {p.value: p for p in SingleTurnParams}

#: Turns a raw answer from a metric file into the text the judge would answer (or raises).
AnswerCheck = Callable[[Any], str]


@dataclass(frozen=True)
class Example:
    """One worked case: its fields in prompt order and the answer (as written and as text)."""

    fields: tuple[tuple[str, str | tuple[str, ...]], ...]
    answer: Any  # as written in the metric file (an int score, a bool or string verdict)
    answer_text: str  # what the judge would reply ("7", "Yes", "Partly")

    def to_dict(self, answer_key: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            name: list(value) if isinstance(value, tuple) else value for name, value in self.fields
        }
        data[answer_key] = self.answer
        return data

    def render(self, number: int) -> str:
        parts = [f"Example {number}:\n"]
        for name, value in self.fields:
            param = _PARAM_NAMES.get(name)
            if param is not None:
                parts.append(
                    render_param(param, list(value) if isinstance(value, tuple) else value)
                )
            else:
                text = "\n".join(f"- {v}" for v in value) if isinstance(value, tuple) else value
                parts.append(f"{name.strip()}:\n{text.strip()}\n\n")
        parts.append(f"Answer: {self.answer_text}\n\n")
        return "".join(parts)


def parse_examples(
    raw: Any, answer_key: str, check: AnswerCheck, what: str
) -> tuple[Example, ...] | None:
    """Examples from a metric file's list of tables (or Example objects); None when absent.
    `check` turns each answer into the judge's reply text, raising for one not allowed."""
    if raw is None:
        return None
    if isinstance(raw, dict | str) or not isinstance(raw, Sequence):
        raise MetricDefinitionError(f"{what}: 'examples' must be a list of tables")
    examples = []
    for number, item in enumerate(raw, 1):
        if isinstance(item, Example):
            check(item.answer)
            examples.append(item)
            continue
        if not isinstance(item, dict):
            raise MetricDefinitionError(f"{what}: example {number} must be a table")
        if answer_key not in item:
            raise MetricDefinitionError(f"{what}: example {number} has no {answer_key!r}")
        try:
            answer_text = check(item[answer_key])
        except MetricDefinitionError as exc:
            raise MetricDefinitionError(f"{what}: example {number}: {exc}") from exc
        fields = _fields(item, answer_key, f"{what}: example {number}")
        examples.append(Example(fields, item[answer_key], answer_text))
    if not examples:
        return None
    return tuple(examples)


def _fields(item: dict[str, Any], answer_key: str, what: str) -> tuple:
    """Known case fields in prompt order first, then any other headings as written."""
    found: dict[str, str | tuple[str, ...]] = {}
    for name, value in item.items():
        if name == answer_key:
            continue
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            found[name] = tuple(value)
        elif isinstance(value, str) and value.strip():
            found[name] = value
        else:
            raise MetricDefinitionError(f"{what}: field {name!r} must be non-empty text")
    if not found:
        raise MetricDefinitionError(f"{what} shows no field (such as input or actual_output)")
    known = [p.value for p in PROMPT_ORDER if p.value in found]
    other = [name for name in found if name not in _PARAM_NAMES]
    return tuple((name, found[name]) for name in (*known, *other))


def examples_block(examples: Sequence[Example] | None, about: str) -> tuple[str, ...]:
    """The prompt block of the examples (empty tuple when there are none)."""
    if not examples:
        return ()
    head = f"Worked examples for {about}, each with the answer a careful judge gave:\n\n"
    body = "".join(example.render(i) for i, example in enumerate(examples, 1))
    return (head + body + "Now the test case to judge.\n\n",)


def examples_to_list(examples: Sequence[Example] | None, answer_key: str) -> list | None:
    return [e.to_dict(answer_key) for e in examples] if examples else None


def score_check(lo: int, hi: int) -> AnswerCheck:
    def check(value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise MetricDefinitionError(f"'score' must be an integer from {lo} to {hi}")
        return str(value)

    return check


def yes_no_check(value: Any) -> str:
    """A binary verdict: true/false or "Yes"/"No"."""
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, str) and value.strip() in ("Yes", "No"):
        return value.strip()
    raise MetricDefinitionError('\'verdict\' must be true/false (or "Yes"/"No")')


def option_check(options: Sequence[str]) -> AnswerCheck:
    def check(value: Any) -> str:
        if not isinstance(value, str) or value.strip() not in [o.strip() for o in options]:
            raise MetricDefinitionError(f"'verdict' must be one of: {', '.join(options)}")
        return value.strip()

    return check

"""POST /v1/decisions: the OpenAI-shaped variant of System One.

`input` (text, or text parts) is the state; `questions` is a list of predicates, choices
and scores, each with a `name`; answers come back in question order, echoing the names.
Each question is read exactly as its System One twin (predicate = noul)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from anvil_local.serve.decide import read_questions, usage_headers
from anvil_local.serve.engine import Engine
from anvil_local.serve.errors import invalid
from anvil_local.serve.questions import Ask, answer, asks_for, state_blocks
from anvil_local.serve.settings import Limits
from anvil_local.serve.systemone import count_questions
from anvil_local.serve.wire import (
    ChoiceAnswer,
    ChoiceQuestion,
    DecisionAnswer,
    DecisionQuestion,
    DecisionsRequest,
    DecisionsResponse,
    NoulQuestion,
    ScoreQuestion,
    Usage,
)


def as_system_one(question: DecisionQuestion) -> NoulQuestion | ChoiceQuestion | ScoreQuestion:
    """The System One question a decision question stands for."""
    if question.type == "predicate":
        _unused(question, "choices", "levels")
        if not question.instructions:
            raise invalid("a predicate needs 'instructions'")
        return NoulQuestion(type="noul", instructions=question.instructions)
    if question.type == "choice":
        _unused(question, "levels")
        if question.choices is None:
            raise invalid("a choice needs 'choices'")
        criteria = {c.value: c.description for c in question.choices}
        if len(criteria) != len(question.choices):
            raise invalid("two choices have the same value")
        return ChoiceQuestion(type="choice", instructions=question.instructions, criteria=criteria)
    _unused(question, "choices")
    if question.levels is None:
        raise invalid("a score needs 'levels'")
    levels = [
        f"{level.label}: {level.description}" if level.description else level.label
        for level in question.levels
    ]
    return ScoreQuestion(type="score", instructions=question.instructions, criteria=levels)


def _unused(question: DecisionQuestion, *fields: str) -> None:
    for name in fields:
        if getattr(question, name) is not None:
            raise invalid(f"a {question.type} takes no {name!r}")


def plan(request: DecisionsRequest, limits: Limits) -> tuple[str, list[tuple[str, Ask]]]:
    count_questions(len(request.questions), limits)
    names = [q.name for q in request.questions]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise invalid(f"question names must be unique: {', '.join(map(repr, doubled))}")
    text = (
        request.input
        if isinstance(request.input, str)
        else "\n".join(p.text for p in request.input)
    )
    return text, asks_for(((q.name, q) for q in request.questions), limits, as_system_one)


def _decision(name: str, ask: Ask, probs: tuple[float, ...]) -> DecisionAnswer:
    one = answer(ask, probs)
    if ask.kind == "noul":
        return DecisionAnswer(name=name, type="predicate", probability=probs[0])
    if isinstance(one, ChoiceAnswer):
        return DecisionAnswer(
            name=name,
            type="choice",
            value=one.choice,
            probabilities=one.probabilities,
            confidence=one.confidence,
        )
    return DecisionAnswer(
        name=name,
        type="score",
        score=one.score,
        probabilities=one.probabilities,
        confidence=one.confidence,
    )


async def decisions(
    engine: Engine, request: DecisionsRequest, gone: Callable[[], Awaitable[None]] | None
) -> tuple[DecisionsResponse, dict[str, Any]]:
    text, asks = plan(request, engine.limits)
    served = engine.get(request.model)
    work = read_questions(state_blocks(text), [ask for _, ask in asks])
    readings = await engine.run(served, work, gone)
    answers = [
        _decision(name, ask, probs)
        for (name, ask), probs in zip(asks, readings.probabilities, strict=True)
    ]
    response = DecisionsResponse(
        model=served.name, answers=answers, usage=Usage(input_tokens=readings.input_tokens)
    )
    return response, usage_headers(readings.usage)

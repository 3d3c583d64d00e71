"""POST /v1/systemone: a state and named typed questions, answered with a probability for
every option (the System One HTTP profile)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from anvil_local.serve.decide import read_questions, usage_headers
from anvil_local.serve.engine import Engine
from anvil_local.serve.errors import ServeError, invalid
from anvil_local.serve.questions import Ask, answer, asks_for, state_blocks, verbatim_ask
from anvil_local.serve.settings import Limits
from anvil_local.serve.wire import Content, SystemOneRequest, SystemOneResponse, Usage


def plan(request: SystemOneRequest, limits: Limits) -> tuple[Content, dict[str, Ask]]:
    """The request's state and each question's reading, ids kept as sent (never read)."""
    if request.assets is not None:
        raise invalid("assets (images) are not supported: this server judges text")
    if request.state is not None and request.document is not None:
        raise invalid("send the state once: 'state' or 'document', not both")
    state = request.state if request.state is not None else request.document
    if state is None:
        raise invalid("field 'state' is required (the v1 draft's 'document' is accepted too)")
    count_questions(len(request.questions), limits)
    if request.anvil is not None:
        prompts = request.anvil.prompts
        if set(prompts) != set(request.questions):
            raise invalid("the 'anvil' extension needs one prompt for every question, no more")
        verbatim = {}
        for qid, q in request.questions.items():
            try:
                verbatim[qid] = verbatim_ask(q, prompts[qid].blocks, prompts[qid].question, limits)
            except ServeError as exc:
                raise invalid(f"question {qid!r}: {exc.message}") from None
        return state, verbatim
    return state, dict(asks_for(request.questions.items(), limits))


def count_questions(count: int, limits: Limits) -> None:
    if count == 0:
        raise invalid("'questions' is empty: ask at least one question")
    if count > limits.questions:
        raise invalid(
            f"{count} questions in one request; this server takes at most {limits.questions}"
        )


async def systemone(
    engine: Engine, request: SystemOneRequest, gone: Callable[[], Awaitable[None]] | None
) -> tuple[SystemOneResponse, dict[str, Any]]:
    """The response and the headers that say what it cost."""
    state, asks = plan(request, engine.limits)
    served = engine.get(request.model)
    work = read_questions(state_blocks(state), list(asks.values()))
    readings = await engine.run(served, work, gone)
    answers = {
        qid: answer(ask, probs)
        for (qid, ask), probs in zip(asks.items(), readings.probabilities, strict=True)
    }
    response = SystemOneResponse(
        model=served.name,
        answers=answers,
        usage=Usage(input_tokens=readings.input_tokens),
        anvil={"identity": served.identity} if request.anvil is not None else None,
    )
    return response, usage_headers(readings.usage)

"""One request's questions read by the judge: the work a decision endpoint hands a lane.

Every question's prompt is the request's shared blocks (header and state) and its own
question, so the judge evaluates the state once and each further question from where the
state ends. The counts are the request's own: `input_tokens` is the number of distinct
token positions in its prompts (the state once); what llama.cpp really evaluated and
reused (less, when the state was read by an earlier request) goes in response headers,
since it depends on what came before and the body must not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from anvil_local.errors import ContextOverflow
from anvil_local.judge import Judge, Prompt, Usage
from anvil_local.judge.trie import PromptTrie
from anvil_local.serve.engine import Ticket
from anvil_local.serve.errors import tokens_exceeded
from anvil_local.serve.questions import Ask


@dataclass(frozen=True)
class Readings:
    """The option probabilities of each question, in order, and the request's tokens."""

    probabilities: tuple[tuple[float, ...], ...]
    input_tokens: int
    usage: Usage


def read_questions(
    blocks: Sequence[str], asks: Sequence[Ask]
) -> Callable[[Judge, Ticket], Readings]:
    """The lane's work for one request: each question read over its options, in order."""

    def work(judge: Judge, ticket: Ticket) -> Readings:
        prompts = [
            Prompt(ask.blocks if ask.blocks is not None else tuple(blocks), ask.question)
            for ask in asks
        ]
        trie = PromptTrie()
        input_tokens = sum(trie.add(judge.prompt_tokens(p)) for p in prompts)
        readings = []
        usage = Usage()
        for prompt, ask in zip(prompts, asks, strict=True):
            ticket.check()
            try:
                result = judge.choose(prompt, ask.options)
            except ContextOverflow as exc:
                raise tokens_exceeded(exc.tokens, exc.limit) from None
            readings.append(result.probabilities)
            usage = usage + result.usage
        return Readings(tuple(readings), input_tokens, usage)

    return work


def usage_headers(usage: Usage) -> dict[str, str]:
    """What the request really cost (depends on the KV cache, so kept out of the body)."""
    return {
        "X-Anvil-Evaluated-Tokens": str(usage.evaluated_tokens),
        "X-Anvil-Reused-Tokens": str(usage.reused_tokens),
        "X-Anvil-Trie-Tokens": str(usage.distinct_tokens),
    }

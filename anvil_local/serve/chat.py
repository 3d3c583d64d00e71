"""POST /v1/chat/completions, minimal: one user message (after an optional system message),
greedy, non-streaming, with `max_tokens`, `stop`, and `response_format` (a JSON schema held
by the grammar). What DAG task nodes need from a remote judge, and no more."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import ContextOverflow, GenerationError
from anvil_local.judge import GenerationResult, Judge, Prompt
from anvil_local.judge.trie import PromptTrie
from anvil_local.serve.engine import Engine, Ticket
from anvil_local.serve.errors import invalid, tokens_exceeded
from anvil_local.serve.settings import Limits
from anvil_local.serve.wire import (
    ChatChoice,
    ChatChoiceMessage,
    ChatRequest,
    ChatResponse,
    ChatUsage,
    TextPart,
)


@dataclass(frozen=True)
class ChatPlan:
    system: str | None
    prompt: Prompt  # one user message, or the extension's verbatim prompt
    max_tokens: int | None
    stop: tuple[str, ...]
    schema: dict[str, Any] | None
    regex: str | None = None


def _text(content: str | list[TextPart]) -> str:
    return content if isinstance(content, str) else "".join(p.text for p in content)


def plan(request: ChatRequest, limits: Limits) -> ChatPlan:
    """What to generate, or a one-line refusal of what this endpoint does not do."""
    if request.stream:
        raise invalid("streaming is not supported: leave 'stream' out or set it to false")
    if request.n not in (None, 1):
        raise invalid("'n' must be 1: decoding is greedy, so every choice would be the same")
    if request.temperature not in (None, 0):
        raise invalid("decoding is greedy: 'temperature' must be 0 or left out")
    if request.top_p not in (None, 1):
        raise invalid("decoding is greedy: 'top_p' must be 1 or left out")
    messages = list(request.messages)
    system = None
    if messages and messages[0].role == "system":
        system = _text(messages.pop(0).content)
    if len(messages) != 1 or messages[0].role != "user":
        raise invalid(
            "send one user message, after at most one system message: this endpoint "
            "answers single prompts, not conversations"
        )
    budget = request.max_completion_tokens or request.max_tokens
    if budget is not None and not 1 <= budget <= limits.max_tokens:
        raise invalid(f"'max_tokens' must be 1 to {limits.max_tokens}, got {budget}")
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    schema = None
    form = request.response_format
    if form is not None and form.type == "json_schema":
        if form.json_schema is None:
            raise invalid("response_format of type json_schema needs 'json_schema'")
        schema = form.json_schema.schema_
    elif form is not None and form.type == "json_object":
        schema = {"type": "object"}
    prompt = Prompt((), _text(messages[0].content))
    regex = None
    if request.anvil is not None:  # the private extension: the prompt as metrics lay it out
        if system is not None:
            raise invalid("the 'anvil' extension's prompt has the judge's own system message")
        prompt = Prompt(tuple(request.anvil.prompt.blocks), request.anvil.prompt.question)
        regex = request.anvil.regex
        if regex is not None and schema is not None:
            raise invalid("give a response_format or the extension's regex, not both")
    return ChatPlan(system, prompt, budget, stop, schema, regex)


def generate(chat: ChatPlan, limits: Limits) -> Callable[[Judge, Ticket], GenerationResult]:
    def work(judge: Judge, ticket: Ticket) -> GenerationResult:
        ticket.check()
        if chat.system is not None:
            judge = judge.with_system(chat.system)
            judge.trie = PromptTrie()  # each request's own, as the lane does for the judge
        prompt = chat.prompt
        budget = chat.max_tokens
        if budget is None:  # as much as the limit and the context allow
            room = judge.runtime.n_ctx - len(judge.prompt_tokens(prompt))
            budget = max(1, min(limits.max_tokens, room))
        try:
            return judge.generate(
                prompt, budget, schema=chat.schema, regex=chat.regex, stop=chat.stop
            )
        except ContextOverflow as exc:
            raise tokens_exceeded(exc.tokens, exc.limit) from None
        except GenerationError as exc:
            raise invalid(f"{exc}; raise max_tokens") from None
        except (ValueError, TypeError, RuntimeError) as exc:  # a schema or regex not compiled
            if chat.schema is None and chat.regex is None:
                raise
            what = "response_format's schema" if chat.schema is not None else "regex"
            raise invalid(f"the {what} cannot be compiled into a grammar: {exc}") from None

    return work


async def chat_completion(
    engine: Engine, request: ChatRequest, gone: Callable[[], Awaitable[None]] | None
) -> tuple[ChatResponse, dict[str, Any]]:
    chat = plan(request, engine.limits)
    served = engine.get(request.model)
    result = await engine.run(served, generate(chat, engine.limits), gone)
    digest = hashlib.sha256(request.model_dump_json().encode()).hexdigest()[:24]
    prompt_tokens = result.usage.prompt_tokens
    response = ChatResponse(
        id=f"chatcmpl-{digest}",
        model=served.name,
        choices=[
            ChatChoice(
                message=ChatChoiceMessage(content=result.text),
                finish_reason="stop" if result.finished else "length",
            )
        ],
        usage=ChatUsage(
            prompt_tokens=prompt_tokens,
            completion_tokens=result.tokens,
            total_tokens=prompt_tokens + result.tokens,
        ),
        anvil={"identity": served.identity} if request.anvil is not None else None,
    )
    headers = {
        "X-Anvil-Evaluated-Tokens": str(result.usage.evaluated_tokens),
        "X-Anvil-Reused-Tokens": str(result.usage.reused_tokens),
    }
    return response, headers

"""Chat templates: turn (system, user) into the text around the user message.

The template is rendered once with a sentinel in place of the user message and split there:
the head (up to the user message) and tail (after it, up to the start of the answer) are
template pieces, tokenized with control tokens enabled; everything between them is test-case
text, tokenized with control tokens disabled, so case text cannot forge a turn.

Any chat template a GGUF carries is rendered in the sandbox its authors wrote it for
(`chat_env`). A template that refuses the system role gets the system text merged into the
first user message. Reasoning models are prompted with thinking off: the switches templates
take (`enable_thinking=False` and its cousins), else the empty reasoning block the template
itself renders for an answer, else the block the generation prompt opens, closed empty; the
verdict is read where the answer starts. Only when none of this renders does the judge fall
back to a plain prompt, and `reason` says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jinja2

from anvil_local.judge.chat_env import CALLER_DEFAULTS, chat_environment
from anvil_local.judge.reasoning import close_block, closer_in, mentions_reasoning, open_block

SYSTEM_PROMPT = (
    "You are a careful, impartial evaluator. You answer each question about a test case "
    "briefly and exactly in the requested form."
)
_SENTINEL = "\x00ANVIL-USER-MESSAGE\x00"
_ANSWER = "\x00ANVIL-ANSWER\x00"
_REASONING = "\x00ANVIL-REASONING\x00"

#: The switches reasoning templates take, thinking off and on (each template reads its own).
THINKING_OFF: dict[str, Any] = {
    "enable_thinking": False,
    "thinking": False,
    "reasoning": False,
    "thinking_budget": 0,
}
THINKING_ON: dict[str, Any] = {"enable_thinking": True, "thinking": True, "reasoning": True}
#: Where templates look for an assistant turn's reasoning, in the order tried.
_REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")
_HEADER = "the template's answer header"
#: What a template's rendering can raise (Jinja's own errors, and Python's from its
#: expressions: a None concatenated, a missing key).
_RENDER_ERRORS = (
    jinja2.TemplateError,
    TypeError,
    ValueError,
    KeyError,
    IndexError,
    AttributeError,
)
_EMPTY = "the template's empty reasoning block"


@dataclass(frozen=True)
class TemplateParts:
    """The template pieces around the user message, and how they were obtained.

    `source` is "gguf" (the model's template as it is), "merged" (the template refuses or
    drops the system role: the system text opens the user message) or "plain" (no usable
    template; `reason` says why). `tail` ends where the answer starts, thinking off.
    `think_tail` is the tail that lets a reasoning model think (None for other models) and
    `think_end` the text that closes its reasoning. `turn_end` is how the template ends an
    answered turn (its first token is an end-of-turn token); `bos` says the template writes
    the BOS token itself (it is cut from `head`: the judge adds the token once).
    """

    head: str
    tail: str
    source: str  # "gguf", "merged" or "plain"
    reason: str = ""
    think_tail: str | None = None
    think_end: str = ""
    thinking_off: str = ""  # how thinking was turned off ("" when the model does not think)
    turn_end: str = ""
    bos: bool = False

    @property
    def reasoning(self) -> bool:
        """The template prompts a model that thinks before it answers."""
        return self.think_tail is not None

    def describe(self) -> str:
        """One line for `anvil doctor` and `anvil models add`."""
        if self.source == "plain":
            return f"plain prompt, no chat turns ({self.reason})"
        if self.source == "merged":
            return f"GGUF, system text merged into the first user message ({self.reason})"
        return "GGUF"


def plain_parts(system: str = SYSTEM_PROMPT, reason: str = "") -> TemplateParts:
    """The fallback for models without a usable chat template (base models)."""
    return TemplateParts(
        head=f"{system}\n\n", tail="\n\nAnswer: ", source="plain", reason=reason, turn_end=""
    )


class _Renderer:
    """One compiled template and the constant context it is rendered with."""

    def __init__(self, template: str, bos_token: str, eos_token: str) -> None:
        self.compiled = chat_environment().from_string(template)
        self.context = {**CALLER_DEFAULTS, "bos_token": bos_token, "eos_token": eos_token}

    def render(self, messages: list[dict[str, Any]], generation: bool, **switches: Any) -> str:
        return self.compiled.render(
            messages=messages, add_generation_prompt=generation, **self.context, **switches
        )

    def after_user(self, messages: list[dict[str, Any]], **switches: Any) -> str:
        """The generation prompt's text after the user message."""
        return self.render(messages, True, **switches).split(_SENTINEL, 1)[1]

    def answered(self, messages: list[dict[str, Any]], **extra: Any) -> tuple[str, str] | None:
        """An answered turn, thinking off: (text from the user message to the answer, text
        after the answer); None when the template cannot render one."""
        turn = {"role": "assistant", "content": _ANSWER, **extra}
        try:
            text = self.render([*messages, turn], False, **THINKING_OFF)
        except _RENDER_ERRORS:
            return None
        if text.count(_SENTINEL) != 1 or text.count(_ANSWER) != 1:
            return None
        before, after = text.split(_SENTINEL, 1)[1].split(_ANSWER)
        return before, after


def render_parts(
    template: str | None, system: str = SYSTEM_PROMPT, bos_token: str = "", eos_token: str = ""
) -> TemplateParts:
    """Split a Jinja chat template around the user message; plain fallback (with the reason)
    if no rendering of it gives one user turn."""
    if not template:
        return plain_parts(system, "the GGUF carries no chat template")
    try:
        renderer = _Renderer(template, bos_token, eos_token)
    except jinja2.TemplateError as exc:
        return plain_parts(system, f"the chat template does not parse: {_short(exc)}")
    layouts = (
        ("gguf", [{"role": "system", "content": system}, {"role": "user", "content": _SENTINEL}]),
        ("merged", [{"role": "user", "content": f"{system}\n\n{_SENTINEL}"}]),
    )
    refusal = ""
    for source, messages in layouts:
        try:
            text = renderer.render(messages, True, **THINKING_OFF)
        except _RENDER_ERRORS as exc:
            refusal = refusal or _short(exc)
            continue
        if text.count(_SENTINEL) != 1:
            refusal = refusal or "the user message does not appear exactly once"
            continue
        head, _ = text.split(_SENTINEL)
        if system not in head:
            refusal = refusal or "the template drops the system message"
            continue
        reason = "" if source == "gguf" else refusal
        return _finish(renderer, messages, head, source, reason, bos_token)
    return plain_parts(system, f"the chat template cannot render a user turn: {refusal}")


def _finish(
    renderer: _Renderer,
    messages: list[dict[str, Any]],
    head: str,
    source: str,
    reason: str,
    bos_token: str,
) -> TemplateParts:
    off = renderer.after_user(messages, **THINKING_OFF)
    try:
        on = renderer.after_user(messages, **THINKING_ON)
    except _RENDER_ERRORS:
        on = off
    bare = renderer.answered(messages)
    empty = _empty_reasoning(renderer, messages)
    tail, how = _answer_tail(off, bare, empty, switch=on != off)
    reasoning = on != off or empty is not None or bool(how) or mentions_reasoning(tail)
    think_end = _think_end(on, tail, empty) if reasoning else ""
    think_tail = on if reasoning and on != tail and think_end else None
    if reasoning and not how:
        how = "the template's thinking switch" if on != off else ""
    bos = bool(bos_token) and head.startswith(bos_token)
    return TemplateParts(
        head=head[len(bos_token) :] if bos else head,
        tail=tail,
        source=source,
        reason=reason,
        think_tail=think_tail,
        think_end=think_end,
        thinking_off=how if reasoning else "",
        turn_end=bare[1] if bare else "",
        bos=bos,
    )


def _empty_reasoning(renderer: _Renderer, messages: list[dict[str, Any]]) -> tuple[str, str] | None:
    """How the template writes an answered turn's reasoning block: (text from the user
    message up to the reasoning, text from the reasoning up to the answer); None when it
    writes none."""
    for key in _REASONING_KEYS:
        turn = renderer.answered(messages, **{key: _REASONING})
        if turn is not None and turn[0].count(_REASONING) == 1:
            opened, closed = turn[0].split(_REASONING)
            return opened, closed
    return None


def _answer_tail(
    generation: str,
    bare: tuple[str, str] | None,
    empty: tuple[str, str] | None,
    switch: bool,
) -> tuple[str, str]:
    """Where the answer starts, thinking off, and how thinking was turned off ("" when the
    generation prompt is already that place).

    The candidates are the template's own answered turn, as it writes it without reasoning
    (`bare`) and with an empty reasoning block (`empty`): the first that continues the
    generation prompt wins. A template with a thinking switch (`switch`) has turned thinking
    off already, so its plain answer comes first; one without (Kimi-K2-Thinking, gpt-oss)
    would think unless its empty block is written for it."""
    candidates = []
    if bare is not None:
        candidates.append((bare[0], _HEADER))
    if empty is not None:
        candidates.insert(len(candidates) if switch else 0, (empty[0] + empty[1], _EMPTY))
    for text, how in candidates:
        if text.startswith(generation) and not open_block(text):
            return text, ("" if text == generation else how)
    if empty is not None and generation.startswith(empty[0]):  # it writes the block's opening
        rest, closing = generation[len(empty[0]) :], empty[1]
        closes = closer_in(closing) or closing.strip()
        if closes and closes in rest:  # ... and closes it (Seed-OSS's thinking budget 0)
            return generation + closing[closing.index(closes) + len(closes) :], ""
        return generation + closing, _EMPTY
    if open_block(generation):
        return close_block(generation), "closing the reasoning block the prompt opens"
    if bare is not None:  # a closed empty block where the answer has a header (Command R7B)
        size = next(
            (i for i, (a, b) in enumerate(zip(generation, bare[0], strict=False)) if a != b),
            min(len(generation), len(bare[0])),
        )
        shared = generation[: generation.rfind(">", 0, size) + 1]  # up to a whole marker
        extra, header = generation[len(shared) :], bare[0][len(shared) :]
        if (
            shared
            and mentions_reasoning(extra)
            and header.startswith(("<", "["))
            and not mentions_reasoning(header)
        ):
            return generation + header, _HEADER
    return generation, ""


def _think_end(on: str, tail: str, empty: tuple[str, str] | None) -> str:
    """The text that ends a model's reasoning and opens its answer ("" if unknown)."""
    if empty is not None and empty[1].strip():
        return empty[1].lstrip()
    found = open_block(on)
    if found is not None:
        return found[1] + ("\n\n" if on.endswith("\n") else "")
    closes = closer_in(tail)
    return tail[tail.rfind(closes) :] if closes else ""


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."

"""Chat templates: turn (system, user) into the text around the user message.

The template is rendered once with a sentinel in place of the user message and split there:
the head (up to the user message) and tail (after it, up to the start of the answer) are
template pieces, tokenized with control tokens enabled; everything between them is test-case
text, tokenized with control tokens disabled, so case text cannot forge a turn.
"""

from __future__ import annotations

from dataclasses import dataclass

import jinja2
import jinja2.sandbox

SYSTEM_PROMPT = (
    "You are a careful, impartial evaluator. You answer each question about a test case "
    "briefly and exactly in the requested form."
)
_SENTINEL = "\x00ANVIL-USER-MESSAGE\x00"


@dataclass(frozen=True)
class TemplateParts:
    head: str
    tail: str
    source: str  # "gguf" or "plain"


def plain_parts(system: str = SYSTEM_PROMPT) -> TemplateParts:
    """The fallback for models without a chat template (base models)."""
    return TemplateParts(head=f"{system}\n\n", tail="\n\nAnswer: ", source="plain")


def render_parts(
    template: str | None, system: str = SYSTEM_PROMPT, bos_token: str = "", eos_token: str = ""
) -> TemplateParts:
    """Split a Jinja chat template around the user message; plain fallback if unusable."""
    if not template:
        return plain_parts(system)
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message: str) -> None:
        raise jinja2.TemplateError(message)

    env.globals["raise_exception"] = raise_exception
    try:
        compiled = env.from_string(template)
        messages = [
            {"role": "system", "content": system},
            {"role": "user", "content": _SENTINEL},
        ]
        text = compiled.render(
            messages=messages,
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except jinja2.TemplateError:
        return plain_parts(system)
    if text.count(_SENTINEL) != 1:
        return plain_parts(system)
    head, tail = text.split(_SENTINEL)
    if system not in head:  # template dropped the system message: keep it in the user turn
        head = head + system + "\n\n"
    return TemplateParts(head=head, tail=tail, source="gguf")

"""The Jinja sandbox chat templates are written for.

Chat templates in GGUF files are written for the renderer of Hugging Face transformers (and
llama.cpp's copy of it): a sandboxed environment with `{% break %}`/`{% continue %}`, a
`{% generation %}` block tag, a `tojson` filter that takes `indent`, `separators`,
`ensure_ascii` and `sort_keys`, and the globals `raise_exception` and `strftime_now`. Without
them a template fails to render and the judge would lose the model's chat format.

`strftime_now` gives a fixed date, not today's: a template that writes the date into the
system turn (Mistral-Small, gpt-oss, Llama 3.x) would otherwise change the prompt, and so
the scores and the cache keys, every day.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, ClassVar

import jinja2
import jinja2.ext
import jinja2.sandbox

#: The date templates see (the one Llama 3.1's own template falls back to).
TEMPLATE_DATE = datetime(2024, 7, 26)

#: Variables a template may read from its caller beyond the messages, with the values a judge
#: gives: llama.cpp passes `functions` and `datetime` to firefunction-v2 this way.
CALLER_DEFAULTS: dict[str, Any] = {
    "functions": "",
    "datetime": TEMPLATE_DATE.strftime("%b %d %Y %H:%M:%S GMT"),
}


class TemplateRaised(jinja2.TemplateError):
    """A template refused the conversation (`raise_exception`), with the template's words."""


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` (marks assistant text for training): renders
    its body unchanged."""

    tags: ClassVar[set[str]] = {"generation"}

    def parse(self, parser: Any) -> Any:
        parser.stream.skip(1)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise TemplateRaised(message)


def _strftime_now(fmt: str) -> str:
    return TEMPLATE_DATE.strftime(fmt)


def chat_environment() -> jinja2.sandbox.ImmutableSandboxedEnvironment:
    """A sandbox with what the usual chat renderer provides (`namespace`, `range`, loop
    controls and the rest of Jinja's own globals included)."""
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env

"""Grammars for constrained generation, through outlines' llguidance backend.

A logits processor is built once per grammar and reused (reset before each generation), and
is applied by our own decode loop, never through outlines' generate path, which resets the
KV cache after every call. llguidance (unlike outlines_core) also handles alternatives that
are prefixes of one another.
"""

from __future__ import annotations

import json
import re
from typing import Any


class GrammarFactory:
    def __init__(self, llama: Any) -> None:
        import outlines
        from outlines.backends.llguidance import LLGuidanceBackend

        self._backend = LLGuidanceBackend(outlines.from_llamacpp(llama))
        self._cache: dict[str, Any] = {}

    def json_schema(self, schema: dict[str, Any]) -> Any:
        key = "json:" + json.dumps(schema, sort_keys=True)
        if key not in self._cache:
            self._cache[key] = self._backend.get_json_schema_logits_processor(json.dumps(schema))
        return self._cache[key]

    def choice(self, options: list[str]) -> Any:
        """Exactly one of `options` (order kept; prefixes such as No/None both allowed)."""
        return self.regex("(" + "|".join(re.escape(o) for o in options) + ")")

    def regex(self, pattern: str) -> Any:
        key = "regex:" + pattern
        if key not in self._cache:
            self._cache[key] = self._backend.get_regex_logits_processor(pattern)
        return self._cache[key]

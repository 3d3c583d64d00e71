"""Grammars for constrained generation, through outlines' llguidance backend.

A logits processor is built once per grammar and reused (reset before each generation), and
is applied by our own decode loop, never through outlines' generate path, which resets the
KV cache after every call. llguidance (unlike outlines_core) also handles alternatives that
are prefixes of one another.
"""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from typing import Any

#: Grammars kept built per model.
CACHED = 64


class GrammarFactory:
    def __init__(self, llama: Any) -> None:
        import outlines
        from outlines.backends.llguidance import LLGuidanceBackend

        self._backend = LLGuidanceBackend(outlines.from_llamacpp(llama))
        # the most recently used grammars (a server's clients may send any number of schemas)
        self._cache: OrderedDict[str, Any] = OrderedDict()

    def _kept(self, key: str, build: Any) -> Any:
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = build()
            if len(self._cache) > CACHED:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return found

    def json_schema(self, schema: dict[str, Any]) -> Any:
        text = json.dumps(schema)
        key = "json:" + json.dumps(schema, sort_keys=True)
        return self._kept(key, lambda: self._backend.get_json_schema_logits_processor(text))

    def choice(self, options: list[str]) -> Any:
        """Exactly one of `options` (order kept; prefixes such as No/None both allowed)."""
        return self.regex("(" + "|".join(re.escape(o) for o in options) + ")")

    def regex(self, pattern: str) -> Any:
        return self._kept(
            "regex:" + pattern, lambda: self._backend.get_regex_logits_processor(pattern)
        )

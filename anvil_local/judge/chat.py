"""ChatFormat: a model's chat template turned into tokens, and how its answers are spelled.

Three things decide whether a verdict is read where the model would write it:

- **Fragments.** A prompt is tokenized in pieces (template head, each block, the question,
  template tail) so a case's tokens never depend on what came before. A tokenizer that
  writes a space before every fragment (SentencePiece's dummy prefix: Llama 2, Mistral v1,
  Phi-3) would put one at the start of every block; pieces after the head are tokenized as
  the continuation of a line instead, as they are in the whole prompt.
- **Options in context.** An option's tokens are those it gets written right after the tail
  (tokenized together, the tail's tokens taken off), so "10" and " Yes" are spelled as the
  model would spell its own answer.
- **Turn markers stay the template's.** Case text never yields a token the template marks
  turns with, even where llama.cpp matches one in plain text.
- **Leading space.** A tail that ends in a space ("Answer: ") keeps it with the answer, and
  one that ends in text with no separator ("Assistant:") gets one: the answer is " Yes".

End-of-turn tokens are the model's own (EOS, EOT) plus the token that ends an answered turn
in its template (`<end_of_turn>`, `<|eot_id|>`, `<|return|>`).
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from anvil_local.judge.reasoning import closer_in
from anvil_local.judge.template import TemplateParts

_ANCHOR = "\n"


class Vocab(Protocol):
    """What a chat format needs from a model: its tokenizer (a vocab-only load will do)."""

    end_ids: tuple[int, ...]
    bos_id: int
    add_bos: bool

    def tokenize(self, text: str, special: bool) -> list[int]: ...
    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str: ...


class ChatFormat:
    """Head and tail tokens, fragment and option tokenization, end tokens of one model."""

    def __init__(self, vocab: Any, parts: TemplateParts) -> None:
        self.vocab = vocab
        self.parts = parts
        self.space_prefix = bool(getattr(vocab, "space_prefix", False))
        self._anchors: dict[bool, list[int]] = {}
        bos = (vocab.add_bos or parts.bos) and vocab.bos_id >= 0
        self.head = ([vocab.bos_id] if bos else []) + vocab.tokenize(parts.head, special=True)
        self.markers: set[int] = set()  # the template's own control tokens (see `fragment`)
        self._marker_names: list[str] = []
        tail = parts.tail.rstrip(" ")
        self.lead = " " if tail != parts.tail and tail else ""
        self.tail_text = tail if self.lead else parts.tail
        self.tail = self.fragment(self.tail_text, special=True)
        if not self.lead and self.tail_text[-1:].strip() and not self._special(self.tail[-1]):
            self.lead = " "  # the tail ends in text: the answer is a new word
        self.end_ids = self._end_ids()
        structure = parts.head + parts.tail + (parts.think_tail or "") + parts.think_end
        for token in vocab.tokenize(structure + parts.turn_end, special=True):
            name = vocab.detokenize([token], special=True)
            # a marker: a special token with a name (not whitespace, which some vocabularies
            # keep as user-defined tokens)
            if self._special(token) and len(name.strip()) >= 2:
                self.markers.add(token)
        self._marker_names = [vocab.detokenize([t], special=True) for t in sorted(self.markers)]
        self.think_tail: list[int] | None = None
        self.think_stop = ""
        if parts.think_tail is not None and parts.think_end:
            self.think_tail = self.fragment(parts.think_tail, special=True)
            self.think_stop = closer_in(parts.think_end) or parts.think_end.strip()
        self._options: dict[str, list[int]] = {}

    def _special(self, token: int) -> bool:
        is_special = getattr(self.vocab, "is_special", None)
        if is_special is not None:
            return bool(is_special(token))
        return self.vocab.detokenize([token]) == ""  # control tokens have no text

    def _end_ids(self) -> tuple[int, ...]:
        ids = list(self.vocab.end_ids)
        turn_end = self.parts.turn_end.lstrip("\n")
        if turn_end:
            first = self.vocab.tokenize(turn_end, special=True)[:1]
            if first and first[0] not in ids and self._special(first[0]):
                ids.append(first[0])
        return tuple(ids)

    def fragment(self, text: str, special: bool) -> list[int]:
        """Tokens of `text` as a piece of a prompt after its head (see the module docstring).
        Without `special`, no token the template marks its turns with comes out, even one
        llama.cpp matches in plain text (a user-defined token such as Command R's
        `<|CHATBOT_TOKEN|>`): the text is cut after the first character of every such
        marker, and the pieces are read as text."""
        tokens = self._fragment(text, special)
        if special or not self.markers.intersection(tokens):
            return tokens
        starts = {
            m.start() for name in self._marker_names for m in re.finditer(re.escape(name), text)
        }
        cuts = sorted(i + 1 for i in starts)
        bounds = [0, *cuts, len(text)]
        return [t for a, b in itertools.pairwise(bounds) for t in self._fragment(text[a:b], False)]

    def _fragment(self, text: str, special: bool) -> list[int]:
        if not self.space_prefix or not text:
            return self.vocab.tokenize(text, special=special)
        anchor = self._anchors.get(special)
        if anchor is None:
            anchor = self._anchors[special] = self.vocab.tokenize(_ANCHOR, special=special)
        joined = self.vocab.tokenize(_ANCHOR + text, special=special)
        if joined[: len(anchor)] == anchor:
            return joined[len(anchor) :]
        return self.vocab.tokenize(text, special=special)

    def option_tokens(self, label: str) -> list[int]:
        """The tokens of answer option `label` written right after the tail (kept)."""
        cached = self._options.get(label)
        if cached is None:
            cached = self._options[label] = self.answer_tokens(label)
        return cached

    def answer_tokens(self, text: str) -> list[int]:
        """The tokens of `text` as the model's answer, written right after the tail."""
        answer = self.lead + text
        tokens = self.fragment(answer, special=False)
        if self.vocab.tokenize(text, special=True) == self.vocab.tokenize(text, special=False):
            joined = self.fragment(self.tail_text + answer, special=True)
            if joined[: len(self.tail)] == self.tail and len(joined) > len(self.tail):
                tokens = joined[len(self.tail) :]
        return tokens

    def answer_text(self, text: str) -> str:
        """Generated text without the leading space the format puts before an answer."""
        return text[1:] if self.lead and text.startswith(self.lead) else text

    def think_bridge(self, reasoning: str) -> list[int]:
        """Tokens that close a reasoning block and open the answer, after `reasoning` (the
        reasoning text so far, control tokens written out): the rest of the template's
        closing text when the model has written the closing marker, else all of it."""
        end = self.parts.think_end
        at = reasoning.rfind(self.think_stop) if self.think_stop else -1
        if at >= 0:
            end = end[end.find(self.think_stop) + len(self.think_stop) :]
        return self.fragment(end, special=True) if end else []

    def describe_tokens(self, tokens: Sequence[int]) -> str:
        """Tokens as their texts, for reports: `"1" "0"`."""
        return " ".join(
            json.dumps(self.vocab.detokenize([t], special=True), ensure_ascii=False) for t in tokens
        )

"""The judge: three primitives over a loaded model, each returning a typed result.

- `choose(prompt, options)`: the probability of every option, read from the logits; the
  verdict is the most probable option (ties: the first declared), so a trace never shows a
  verdict its own probabilities contradict.
- `score(prompt, lo, hi)`: the probability of every integer in [lo, hi] and the weighted score.
- `generate(prompt, max_tokens, schema=None)`: greedy text, optionally grammar-constrained.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from anvil_local.errors import ContextOverflow, GenerationError, ModelError
from anvil_local.judge.chat import ChatFormat
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.options import argmax_first, checked_options, option_probabilities
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import (
    ChoiceResult,
    GenerationResult,
    HiddenStateResult,
    LikelihoodResult,
    ScoreResult,
    Usage,
)
from anvil_local.judge.template import SYSTEM_PROMPT, TemplateParts, render_parts
from anvil_local.judge.trie import PromptTrie

log = logging.getLogger(__name__)


#: The most tokens a reasoning model may think before its answer, when thinking is on.
THINK_BUDGET = 1024


class Runtime(Protocol):
    """What the judge needs from a model (LlamaRuntime; a fake in unit tests)."""

    n_ctx: int
    end_ids: tuple[int, ...]
    bos_id: int
    add_bos: bool
    space_prefix: bool

    @property
    def chat_template(self) -> str | None: ...
    def tokenize(self, text: str, special: bool) -> list[int]: ...
    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str: ...
    def is_special(self, token: int) -> bool: ...
    def evaluate(
        self, tokens: Sequence[int], exact: bool = True
    ) -> tuple[np.ndarray, int, int]: ...
    def logprobs(self, tokens: Sequence[int], start: int) -> tuple[list[float], int, int]: ...
    def grammars(self) -> Any: ...


class Judge:
    """A model with its chat template, a tokenization cache and token counters."""

    def __init__(
        self, runtime: Runtime, model: ResolvedModel, template: TemplateParts | None = None
    ) -> None:
        self.runtime = runtime
        self.model = model
        self.template = template or model_template(runtime)
        if self.template.source == "plain":
            log.warning(
                "%s: prompting with the plain layout, without chat turns: %s",
                model.name,
                self.template.reason,
            )
        self.format = ChatFormat(runtime, self.template)
        self.thinking = bool(model.settings.thinking) and self.format.think_tail is not None
        self._head = self.format.head
        self._tail = self.format.tail
        self._block_cache: OrderedDict[str, list[int]] = OrderedDict()
        self._systems: OrderedDict[str, Judge] = OrderedDict()
        self.usage = Usage()
        self.trie = PromptTrie()  # every sequence evaluated, for the distinct-token count

    # -- loading -------------------------------------------------------------------------

    @classmethod
    def load(cls, model: ResolvedModel) -> Judge:
        """Load the model's file with its settings (a `JudgePool` shares loaded judges)."""
        from anvil_local.judge.runtime import LlamaRuntime

        adapter = Path(model.adapter) if model.adapter else None
        return cls(LlamaRuntime(Path(model.path), model.settings, adapter), model)

    def with_system(self, system: str) -> Judge:
        """This model prompted under another system message (a chat completion's own): a
        judge over the same loaded model and KV cache, made once per system text. Use it
        where this judge is used (the same thread): they share one llama context."""
        sibling = self._systems.get(system)
        if sibling is None:
            sibling = Judge(self.runtime, self.model, model_template(self.runtime, system))
            self._systems[system] = sibling
            if len(self._systems) > 8:
                self._systems.popitem(last=False)
        else:
            self._systems.move_to_end(system)
        return sibling

    def close(self) -> None:
        """Free the model's native memory (a runtime without `close` holds none)."""
        close = getattr(self.runtime, "close", None)
        if close is not None:
            close()

    # -- prompt -> tokens ----------------------------------------------------------------

    def _block_tokens(self, text: str) -> list[int]:
        cached = self._block_cache.get(text)
        if cached is None:
            cached = self.format.fragment(text, special=False)
            self._block_cache[text] = cached
            if len(self._block_cache) > 512:
                self._block_cache.popitem(last=False)
        else:
            self._block_cache.move_to_end(text)
        return cached

    def prompt_tokens(self, prompt: Prompt) -> list[int]:
        """Template head, each block and the question tokenized on their own, template tail."""
        tokens = list(self._head)
        for block in prompt.blocks:
            tokens += self._block_tokens(block)
        tokens += self.format.fragment(prompt.question, special=False)
        tokens += self._tail
        return tokens

    def _checked_tokens(
        self, prompt: Prompt, answer_budget: int, thinking: bool = False
    ) -> list[int]:
        tokens = self.prompt_tokens(prompt)
        if thinking:  # the tail that lets the model think instead
            assert self.format.think_tail is not None
            tokens = tokens[: len(tokens) - len(self._tail)] + self.format.think_tail
        if len(tokens) + answer_budget > self.runtime.n_ctx:
            raise ContextOverflow(len(tokens) + answer_budget, self.runtime.n_ctx, prompt.case_id)
        return tokens

    def _record(self, usage: Usage) -> Usage:
        if self.trie.overflowed:  # the distinct count stopped: say so wherever it is shown
            usage = dataclasses.replace(usage, trie_capped=True)
        self.usage = self.usage + usage
        return usage

    # -- primitives ----------------------------------------------------------------------

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        """Pick one of `options` (declared order kept) with the probability of each."""
        start = time.perf_counter()
        labels, stripped = checked_options(options)
        sequences = [self.format.option_tokens(s) for s in stripped]
        tokens = self._checked_tokens(prompt, max(len(s) for s in sequences) + 1)
        root, reused, evaluated = self.runtime.evaluate(tokens)
        extra = 0
        distinct = self.trie.add(tokens)

        def logits_after(path: tuple[int, ...]) -> np.ndarray:
            nonlocal extra, distinct
            logits, _, n = self.runtime.evaluate(tokens + list(path))
            extra += n
            distinct += self.trie.add(tokens + list(path))
            return logits

        probs, _ = option_probabilities(sequences, root, logits_after, self.format.end_ids)
        usage = self._record(Usage(len(tokens), reused, evaluated + extra, 1, distinct))
        return ChoiceResult(
            options=labels,
            probabilities=tuple(probs),
            index=argmax_first(probs),
            usage=usage,
            seconds=time.perf_counter() - start,
        )

    def score(self, prompt: Prompt, lo: int, hi: int) -> ScoreResult:
        """The exact distribution over the integers lo..hi (multi-digit values included)."""
        if lo > hi:
            raise ValueError(f"empty score range {lo}..{hi}")
        result = self.choose(prompt, [str(v) for v in range(lo, hi + 1)])
        return ScoreResult(lo, hi, result.probabilities, result.usage, result.seconds)

    def likelihood(self, prompt: Prompt, continuation: str) -> LikelihoodResult:
        """How likely the model finds `continuation` as its answer to `prompt`: the
        log-probability of each of its tokens, read in one pass (no generation)."""
        start = time.perf_counter()
        answer = self.format.answer_tokens(continuation)
        if not answer:
            raise ValueError("likelihood() needs a non-empty continuation")
        tokens = self._checked_tokens(prompt, len(answer))
        values, reused, evaluated = self.runtime.logprobs(tokens + answer, len(tokens))
        distinct = self.trie.add(tokens + answer)
        usage = self._record(Usage(len(tokens) + len(answer), reused, evaluated, 1, distinct))
        pieces = tuple(self.runtime.detokenize([t]) for t in answer)
        return LikelihoodResult(pieces, tuple(values), usage, time.perf_counter() - start)

    def hidden_state(self, prompt: Prompt) -> HiddenStateResult:
        """The model's hidden state where it would answer `prompt` (the position whose
        logits `choose` reads), from an exact evaluation of the same tokens: after a
        `choose` on this prompt only its last two tokens are decoded again."""
        start = time.perf_counter()
        read = getattr(self.runtime, "hidden_state", None)
        if read is None:
            raise ModelError(f"{self.model.name}: this runtime reads no hidden states")
        tokens = self._checked_tokens(prompt, 0)
        state, reused, evaluated = read(tokens)
        distinct = self.trie.add(tokens)
        usage = self._record(Usage(len(tokens), reused, evaluated, 1, distinct))
        return HiddenStateResult(tuple(float(v) for v in state), usage, time.perf_counter() - start)

    def generate(
        self,
        prompt: Prompt,
        max_tokens: int,
        schema: dict[str, Any] | None = None,
        regex: str | None = None,
        stop: Sequence[str] = (),
    ) -> GenerationResult:
        """Greedy text of at most `max_tokens` tokens; with `schema` (JSON schema) or `regex`
        the text is constrained by a grammar and must complete inside the budget. Text ends
        before the first `stop` string that appears (which counts as finishing).

        With thinking on (a reasoning model whose catalogue entry or settings ask for it),
        the model first thinks, unconstrained, for up to THINK_BUDGET tokens; its reasoning
        is closed the way its template closes it, and the answer that follows is the text
        returned (the budget, grammar and stop strings apply to the answer alone)."""
        start = time.perf_counter()
        tokens = self._checked_tokens(prompt, max_tokens, thinking=self.thinking)
        processor = None
        if schema is not None:
            processor = self.runtime.grammars().json_schema(schema)
        elif regex is not None:
            processor = self.runtime.grammars().regex(regex)
        reused = evaluated = 0
        if self.thinking:
            budget = self.runtime.n_ctx - len(tokens) - max_tokens - 16
            thought, _, reused, evaluated = self._greedy(
                tokens, max(0, min(THINK_BUDGET, budget)), None, [self.format.think_stop], True
            )
            reasoning = self.runtime.detokenize(thought, special=True)
            tokens = tokens + thought + self.format.think_bridge(reasoning)
            if len(tokens) + max_tokens > self.runtime.n_ctx:
                raise ContextOverflow(len(tokens) + max_tokens, self.runtime.n_ctx, prompt.case_id)
        out, finished, again, more = self._greedy(tokens, max_tokens, processor, stop)
        reused, evaluated = (again, more) if not self.thinking else (reused, evaluated + more)
        distinct = self.trie.add(tokens + out)
        usage = self._record(Usage(len(tokens), reused, evaluated, 1, distinct))
        text = self.format.answer_text(self.runtime.detokenize(out))
        if self.thinking:
            text = text.lstrip("\n")  # the newlines a template puts after its reasoning
        cut = min((i for i in (text.find(x) for x in stop if x) if i >= 0), default=-1)
        if cut >= 0:
            text, finished = text[:cut], True
        if processor is not None and not finished:
            raise GenerationError(
                f"constrained output did not complete within {max_tokens} tokens: {text[:80]!r}..."
            )
        return GenerationResult(text, len(out), finished, usage, time.perf_counter() - start)

    def _greedy(
        self,
        tokens: list[int],
        max_tokens: int,
        processor: Any = None,
        stop: Sequence[str] = (),
        special: bool = False,
    ) -> tuple[list[int], bool, int, int]:
        """Greedy decode after `tokens` (masked by a grammar processor if given), until an end
        token, the budget, or a `stop` string in the text (control tokens written out if
        `special`); returns (new tokens, ended by itself, tokens reused, tokens evaluated)."""
        if processor is not None:
            processor.reset()
        logits, reused, evaluated = self.runtime.evaluate(tokens)
        sequence = list(tokens)
        out: list[int] = []
        end_ids = set(self.format.end_ids)
        while len(out) < max_tokens:
            if processor is not None:
                logits = processor(np.asarray(sequence, dtype=np.int64), logits)
            token = int(np.argmax(logits))
            if token in end_ids:
                return out, True, reused, evaluated
            out.append(token)
            sequence.append(token)
            if stop and any(x and x in self.runtime.detokenize(out, special) for x in stop):
                return out, True, reused, evaluated
            if len(out) >= max_tokens:
                break
            logits, _, n = self.runtime.evaluate(sequence, exact=False)
            evaluated += n
        return out, False, reused, evaluated

    def decode_choice(self, prompt: Prompt, options: Sequence[str]) -> str:
        """What a greedy decoder constrained to `options` answers: an outlines grammar (built
        once per option set) applied in our own decode loop. Diagnostic only: the verdict of
        `choose` is the most probable option, which this can differ from when options share a
        prefix (the decoder commits to the likeliest first token, not the likeliest answer)."""
        stripped = [str(o).strip() for o in options]
        budget = max(len(o.encode("utf-8")) for o in stripped) + 1
        tokens = self._checked_tokens(prompt, budget)
        processor = self.runtime.grammars().choice(stripped)
        out, _, reused, evaluated = self._greedy(tokens, budget, processor)
        self._record(Usage(len(tokens), reused, evaluated, 1, self.trie.add(tokens + out)))
        return self.format.answer_text(self.runtime.detokenize(out))


def model_template(runtime: Runtime, system: str = SYSTEM_PROMPT) -> TemplateParts:
    """The model's own chat template split for judging, with its BOS and EOS texts."""

    def text(token: int) -> str:
        return runtime.detokenize([token], special=True) if token >= 0 else ""

    eos = runtime.end_ids[0] if runtime.end_ids else -1
    return render_parts(
        runtime.chat_template, system, bos_token=text(runtime.bos_id), eos_token=text(eos)
    )

"""The llama.cpp side of the judge: load a GGUF, tokenize, evaluate with KV-prefix reuse.

`LlamaVocab` is the tokenizer and chat metadata alone (a `vocab_only` load: what `anvil
doctor`, `anvil models add` and the template compatibility test read); `LlamaRuntime` adds
the weights and evaluation.

`evaluate(tokens)` keeps the longest common prefix with the previous call in the KV cache and
decodes only the rest, then returns the next-token logits read straight from llama.cpp
(`llama_get_logits_ith`), so no `logits_all` array is needed.
"""

from __future__ import annotations

import ctypes
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from anvil_local.errors import ModelError, ModelLoadError
from anvil_local.judge.architecture import unfit_reason
from anvil_local.judge.native import ensure_native_ok
from anvil_local.judge.settings import JudgeSettings

log = logging.getLogger(__name__)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # binary search on list-slice equality (C speed) instead of a Python loop
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def batches(count: int, size: int) -> list[int]:
    """Batch sizes for decoding `count` tokens, each at most `size`, none of one token unless
    `count` is 1 (see LlamaRuntime.evaluate)."""
    if count <= 0:
        return []
    if size < 2:
        return [1] * count  # nothing else is possible (the CLI asks for at least 2)
    sizes = [size] * (count // size)
    rest = count % size
    if rest:
        sizes.append(rest)
    if len(sizes) > 1 and sizes[-1] == 1:
        sizes[-2] -= 1
        sizes[-1] = 2
    return sizes


class LlamaVocab:
    """A GGUF's tokenizer and chat metadata (`vocab_only` loads only these, in a moment)."""

    def __init__(self, path: Path, llama=None) -> None:
        import llama_cpp

        self._llama_cpp = llama_cpp
        if llama is None:
            try:
                llama = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise ModelLoadError(f"cannot load model {path}: {exc}") from exc
        self.llama = llama
        self.path = path
        self.n_vocab = llama.n_vocab()
        self.metadata: dict[str, str] = dict(llama.metadata)
        unfit = unfit_reason(self.metadata)
        if unfit is not None:
            raise ModelLoadError(f"{path.name} is {unfit}; a judge must be a chat (decoder) model")
        self._vocab = llama_cpp.llama_model_get_vocab(llama.model)
        self.end_ids = self._end_tokens()
        self.bos_id = llama.token_bos()
        self.add_bos = self.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"
        self.space_prefix = self._adds_space_prefix()

    def _end_tokens(self) -> tuple[int, ...]:
        lib = self._llama_cpp
        ids = []
        for token in (lib.llama_vocab_eos(self._vocab), lib.llama_vocab_eot(self._vocab)):
            valid = 0 <= token < self.n_vocab and lib.llama_vocab_is_eog(self._vocab, token)
            if valid and token not in ids:
                ids.append(token)
        if not ids:
            raise ModelLoadError("the model defines no end-of-generation token")
        return tuple(ids)

    def _adds_space_prefix(self) -> bool:
        """Whether the tokenizer writes a space before text that opens a fragment
        (SentencePiece's dummy prefix: "Yes" alone becomes " Yes")."""
        tokens = self.tokenize("a", special=False)
        return bool(tokens) and self.piece(tokens[0]).startswith(b" ")

    @property
    def chat_template(self) -> str | None:
        return self.metadata.get("tokenizer.chat_template")

    def tokenize(self, text: str, special: bool) -> list[int]:
        """Tokens of `text`; control-token strings become control tokens only if `special`."""
        if not text:
            return []
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=special)

    def piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (no 32-byte limit, unlike Llama.detokenize); control tokens
        are written out only if `special`."""
        size = 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = self._llama_cpp.llama_token_to_piece(self._vocab, token, buf, size, 0, special)
            if n >= 0:
                return buf.raw[:n]
            size = -n

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str:
        return b"".join(self.piece(t, special) for t in tokens).decode("utf-8", errors="replace")

    def is_special(self, token: int) -> bool:
        """A control or user-defined token (a turn marker, not text)."""
        lib = self._llama_cpp
        attr = lib.llama_vocab_get_attr(self._vocab, token)
        return bool(attr & (lib.LLAMA_TOKEN_ATTR_CONTROL | lib.LLAMA_TOKEN_ATTR_USER_DEFINED))

    def is_control(self, token: int) -> bool:
        """A control token: llama.cpp never makes one from text tokenized without `special`."""
        lib = self._llama_cpp
        return bool(lib.llama_vocab_get_attr(self._vocab, token) & lib.LLAMA_TOKEN_ATTR_CONTROL)

    def is_end(self, token: int) -> bool:
        """llama.cpp counts `token` as an end of generation."""
        return 0 <= token < self.n_vocab and bool(
            self._llama_cpp.llama_vocab_is_eog(self._vocab, token)
        )

    def close(self) -> None:
        llama, self.llama = self.llama, None
        if llama is not None:
            llama.close()


class LlamaRuntime(LlamaVocab):
    """One loaded model with one KV sequence. Not thread-safe: one per process."""

    def __init__(self, path: Path, settings: JudgeSettings, adapter: Path | None = None) -> None:
        threads = settings.thread_count()
        # before llama.cpp is loaded here: a library this CPU cannot run crashes a child, not us
        ensure_native_ok(path, threads, settings.n_gpu_layers)
        import llama_cpp

        try:
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=settings.n_ctx,
                n_batch=settings.n_batch,
                n_ubatch=settings.n_batch,
                n_threads=threads,
                n_threads_batch=threads,
                n_gpu_layers=settings.n_gpu_layers,
                seed=settings.seed,
                logits_all=False,
                swa_full=True,  # sliding-window models: keep the full cache so rewinds are exact
                lora_path=str(adapter) if adapter is not None else None,
                verbose=False,
            )
        except (ValueError, RuntimeError) as exc:
            extra = f" with adapter {adapter}" if adapter is not None else ""
            raise ModelLoadError(f"cannot load model {path}{extra}: {exc}") from exc
        try:
            super().__init__(path, llama)
        except ModelLoadError:
            llama.close()
            raise
        self.n_ctx = llama.n_ctx()
        self.n_embd = llama.n_embd()
        self.n_batch = settings.n_batch
        self._tokens: list[int] = []
        self._exact = 0  # leading cache entries computed as a cold evaluation would
        # the last `logprobs` call (its token list, start, values), while the cache holds it
        self._scored: tuple[list[int], int, list[float]] | None = None
        self._grammars = None

    def evaluate(self, tokens: Sequence[int], exact: bool = True) -> tuple[np.ndarray, int, int]:
        """Logits after `tokens`; returns (logits, tokens reused, tokens evaluated).

        With `exact` (every prompt and option read), the logits are those of a cold evaluation
        of `tokens`, whatever was evaluated before. llama.cpp's CPU kernels give a one-token
        batch other numbers than a batch of two or more (measured: up to 0.75 in a logit for
        SmolLM2 Q4_1), while every split into batches of two or more tokens matches a cold
        evaluation bit for bit. So an exact call never decodes a batch of one token (short of
        a one-token prompt): it decodes at least the last two tokens, cuts a long suffix so
        that its last batch is not one token, and reuses only cache entries that were computed
        that way.

        Without `exact` (greedy generation, one token at a time) the new token is decoded
        alone, which is cheaper; the text stays deterministic, and the positions decoded so
        are never reused by an exact call.
        """
        tokens = list(tokens)
        if not tokens:
            raise ValueError("nothing to evaluate")
        if len(tokens) > self.n_ctx:
            raise ModelError(f"{len(tokens)} tokens exceed the context of {self.n_ctx}")
        common = common_prefix(self._tokens, tokens)
        if exact:
            keep = max(0, min(common, self._exact, len(tokens) - 2))
        else:
            keep = min(common, len(tokens) - 1)
        llama = self.llama
        llama.n_tokens = keep
        self._tokens = self._tokens[:keep]
        self._exact = min(self._exact, keep)
        sizes = batches(len(tokens) - keep, self.n_batch) if exact else [len(tokens) - keep]
        try:
            for size in sizes:
                start = llama.n_tokens
                llama.eval(tokens[start : start + size])
        except RuntimeError as exc:
            self._tokens = []
            self._exact = 0
            llama.n_tokens = 0
            raise ModelError(f"llama.cpp failed to decode: {exc}") from exc
        self._tokens = tokens
        if exact:
            self._exact = len(tokens)
        ptr = self._llama_cpp.llama_get_logits_ith(llama.ctx, -1)
        logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()
        return logits, keep, len(tokens) - keep

    def hidden_state(self, tokens: Sequence[int]) -> tuple[np.ndarray, int, int]:
        """The model's last hidden state (after its final norm) at the last of `tokens`;
        returns (state, tokens reused, tokens evaluated). The same exact evaluation as
        `evaluate`, with llama.cpp's embeddings switched on for it: the logits it leaves
        are bit-identical (measured), so a question just asked costs two tokens more. While
        embeddings are on llama.cpp keeps every token of a batch as an output (it says so in
        a warning, silenced here)."""
        import llama_cpp._logger as llama_log

        lib, ctx = self._llama_cpp, self.llama.ctx
        level = llama_log.logger.level
        llama_log.logger.setLevel(logging.CRITICAL)
        lib.llama_set_embeddings(ctx, True)
        try:
            # an exact evaluation always decodes the last two tokens: with embeddings on
            _, reused, evaluated = self.evaluate(tokens)
            ptr = lib.llama_get_embeddings_ith(ctx, -1)
            if not ptr:
                raise ModelError("llama.cpp gave no hidden state for this model")
            state = np.ctypeslib.as_array(ptr, shape=(self.n_embd,)).astype(np.float64)
        finally:
            lib.llama_set_embeddings(ctx, False)
            llama_log.logger.setLevel(level)
        return state, reused, evaluated

    def prefill(self, tokens: Sequence[int]) -> tuple[int, int]:
        """Make the KV cache hold exactly `tokens`, computed as an exact `evaluate` would,
        when no logits are needed after them; returns (tokens reused, tokens evaluated).
        A prefix already there is kept as it is (nothing re-read); otherwise `evaluate`."""
        tokens = list(tokens)
        if min(common_prefix(self._tokens, tokens), self._exact) < len(tokens):
            _, reused, evaluated = self.evaluate(tokens)
            return reused, evaluated
        self.llama.n_tokens = len(tokens)
        self._tokens = tokens
        self._exact = len(tokens)
        return len(tokens), 0

    def _continued(self, tokens: list[int], start: int) -> list[float]:
        """The values the previous `logprobs` call already holds for this one: targets
        start, start + 1, ... whose whole prefix is the same (a summary that opens like the
        previous one), while the KV cache still holds that call."""
        last = self._scored
        if last is None or last[0] is not self._tokens:
            return []
        previous, previous_start, values = last
        if previous_start > start:
            return []
        common = min(common_prefix(previous, tokens), self._exact)
        return values[start - previous_start : max(0, common - previous_start)]

    def logprobs(self, tokens: Sequence[int], start: int) -> tuple[list[float], int, int]:
        """log P(tokens[j] | tokens[:j]) for every j >= start, in one pass over the
        continuation; returns (log-probabilities, tokens reused, tokens evaluated).

        Values for a leading part of the continuation that the previous call shared are
        taken from it; the prefix before the rest is filled as `prefill` does (its KV entries
        reused when already there); the rest is decoded in batches of two or more tokens with
        the logits of every position kept, so each value is what a cold evaluation ending at
        that position gives."""
        tokens = list(tokens)
        if not 2 <= start < len(tokens):
            raise ValueError("logprobs needs a prefix of 2+ tokens and a continuation")
        kept = self._continued(tokens, start)
        first = min(start + len(kept), len(tokens) - 1)  # the first target to compute
        values = kept[: first - start]
        position = first - 1
        reused, evaluated = self.prefill(tokens[:position])
        llama, lib = self.llama, self._llama_cpp
        try:
            llama._ctx.kv_cache_seq_rm(-1, position, -1)
            for size in batches(len(tokens) - position, self.n_batch):
                chunk = tokens[position : position + size]
                llama._batch.set_batch(batch=chunk, n_past=position, logits_all=True)
                llama._ctx.decode(llama._batch)
                llama.input_ids[position : position + size] = chunk
                llama.n_tokens = position + size
                rows = np.ctypeslib.as_array(
                    lib.llama_get_logits(llama.ctx), shape=(size, self.n_vocab)
                ).astype(np.float64)
                for i in range(size):
                    target = position + i + 1
                    if first <= target < len(tokens):
                        row = rows[i]
                        top = row.max()
                        log_total = top + np.log(np.exp(row - top).sum())
                        values.append(float(row[tokens[target]] - log_total))
                position += size
        except RuntimeError as exc:
            self._tokens, self._exact, llama.n_tokens = [], 0, 0
            raise ModelError(f"llama.cpp failed to decode: {exc}") from exc
        self._tokens = tokens
        self._exact = len(tokens)
        self._scored = (tokens, start, values)
        return values, reused, evaluated + len(tokens) - (first - 1)

    def grammars(self):
        """The grammar factory for this model (built on first use)."""
        if self._grammars is None:
            from anvil_local.judge.grammar import GrammarFactory

            self._grammars = GrammarFactory(self.llama)
        return self._grammars

    def close(self) -> None:
        """Free llama.cpp's model and context now rather than at garbage collection; the
        runtime cannot be used after (an AttributeError, not a read of freed memory)."""
        llama, self.llama = self.llama, None
        self._grammars = None
        if llama is not None:
            llama.close()

"""Stand-ins for the model: a fake llama runtime (byte tokens, scripted logits) and a fake
judge (scripted answers, call history) for graph and runner logic."""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from anvil_local.judge.judge import Judge
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import (
    ChoiceResult,
    GenerationResult,
    HiddenStateResult,
    LikelihoodResult,
    ScoreResult,
    Usage,
)
from anvil_local.judge.runtime import common_prefix

IM_START, IM_END, EOT = 256, 257, 258
N_VOCAB = 300
CHATML = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content']"
    " + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)
_SPECIALS = {"<|im_start|>": IM_START, "<|im_end|>": IM_END}


def logits_from(probs: dict[Any, float], floor: float = -50.0) -> np.ndarray:
    """Logits whose softmax over the given tokens (str of one byte, or ids) is `probs`."""
    logits = np.full(N_VOCAB, floor, dtype=np.float32)
    for key, p in probs.items():
        token = ord(key) if isinstance(key, str) else key
        logits[token] = math.log(p) if p > 0 else floor
    return logits


class FakeRuntime:
    """One byte = one token; `script(tokens)` gives the next-token logits."""

    n_ctx = 4096
    end_ids = (IM_END, EOT)
    bos_id = 1
    add_bos = False
    space_prefix = False
    chat_template = CHATML

    def __init__(self, script: Callable[[list[int]], np.ndarray] | None = None, n_ctx: int = 4096):
        self.script = script or (lambda tokens: np.zeros(N_VOCAB, dtype=np.float32))
        self.n_ctx = n_ctx
        self.state: list[int] = []
        self.evaluated: list[int] = []  # tokens evaluated per evaluate() call

    def tokenize(self, text: str, special: bool) -> list[int]:
        out: list[int] = []
        i = 0
        while i < len(text):
            if special:
                hit = next((s for s in _SPECIALS if text.startswith(s, i)), None)
                if hit:
                    out.append(_SPECIALS[hit])
                    i += len(hit)
                    continue
            out.extend(text[i].encode("utf-8"))
            i += 1
        return out

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str:
        names = {v: k for k, v in _SPECIALS.items()}
        if special:
            return "".join(
                names.get(t, "") if t >= 256 else bytes([t]).decode("latin-1") for t in tokens
            )
        return bytes(t for t in tokens if t < 256).decode("utf-8", errors="replace")

    def is_special(self, token: int) -> bool:
        return token >= 256

    def evaluate(self, tokens: Sequence[int], exact: bool = True) -> tuple[np.ndarray, int, int]:
        tokens = list(tokens)
        keep = min(common_prefix(self.state, tokens), len(tokens) - 1)
        self.state = tokens
        self.evaluated.append(len(tokens) - keep)
        return self.script(tokens), keep, len(tokens) - keep

    def grammars(self) -> Any:
        raise NotImplementedError("no grammars in the fake runtime")


def fake_judge(script: Callable[[list[int]], np.ndarray] | None = None, **kw: Any) -> Judge:
    return Judge(FakeRuntime(script, **kw), ResolvedModel("fake", "/fake.gguf", "f" * 64))


def answer_text(runtime: FakeRuntime, tokens: list[int]) -> str:
    """The text generated so far after the assistant turn started."""
    marker = runtime.tokenize("<|im_start|>assistant\n", special=True)
    for i in range(len(tokens) - len(marker), -1, -1):
        if tokens[i : i + len(marker)] == marker:
            return runtime.detokenize(tokens[i + len(marker) :])
    return ""


class FakeJudge:
    """Scripted answers keyed by a substring of the question; records every call."""

    def __init__(
        self,
        choices: dict[str, Sequence[float]] | None = None,
        scores: dict[str, Sequence[float]] | None = None,
        texts: dict[str, str] | None = None,
        sha: str = "a" * 64,
        likelihoods: dict[str, Sequence[float]] | None = None,
    ) -> None:
        self.choices = choices or {}
        self.scores = scores or {}
        self.texts = texts or {}
        self.likelihoods = likelihoods or {}
        self.model = ResolvedModel("fake-judge", "/fake-judge.gguf", sha)
        self.usage = Usage()
        self.calls: list[tuple[str, Prompt, Any]] = []

    def _lookup(self, table: dict[str, Any], question: str, default: Any) -> Any:
        for key, value in table.items():
            if key in question:
                return value
        return default

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        self.calls.append(("choose", prompt, tuple(options)))
        probs = self._lookup(self.choices, prompt.question, [1 / len(options)] * len(options))
        assert len(probs) == len(options), (prompt.question, options, probs)
        best = max(range(len(probs)), key=lambda i: (probs[i], -i))
        return ChoiceResult(tuple(options), tuple(probs), best, Usage(10, 5, 5, 1), 0.001)

    def score(self, prompt: Prompt, lo: int, hi: int) -> ScoreResult:
        self.calls.append(("score", prompt, (lo, hi)))
        n = hi - lo + 1
        probs = self._lookup(self.scores, prompt.question, [1 / n] * n)
        assert len(probs) == n
        return ScoreResult(lo, hi, tuple(probs), Usage(10, 5, 5, 1), 0.001)

    def generate(
        self, prompt: Prompt, max_tokens: int, schema: Any = None, regex: str | None = None
    ) -> GenerationResult:
        self.calls.append(("generate", prompt, regex or schema))
        text = self._lookup(self.texts, prompt.question, "generated text")
        return GenerationResult(text, len(text), True, Usage(10, 5, 5, 1), 0.001)

    def decode_choice(self, prompt: Prompt, options: Sequence[str]) -> str:
        self.calls.append(("decode", prompt, tuple(options)))
        return self._lookup(self.texts, prompt.question, options[-1])

    def hidden_state(self, prompt: Prompt) -> HiddenStateResult:
        """A state of 16 numbers drawn from the prompt's text (the same prompt, the same
        state)."""
        self.calls.append(("hidden_state", prompt, ()))
        seed = zlib.crc32(("".join(prompt.blocks) + prompt.question).encode())
        state = np.random.default_rng(seed).normal(size=16)
        return HiddenStateResult(tuple(float(v) for v in state), Usage(10, 5, 5, 1), 0.001)

    def likelihood(self, prompt: Prompt, continuation: str) -> LikelihoodResult:
        """Scripted by whether the prompt holds a case field: `likelihoods` maps a substring
        of the prompt's blocks to the log-probabilities of the continuation's words. Each word
        is one token, with its leading space as a real tokenizer writes it."""
        self.calls.append(("likelihood", prompt, continuation))
        words = tuple(re.findall(r"\s*\S+", continuation))
        text = "".join(prompt.blocks)
        values = self._lookup(self.likelihoods, text, [-1.0] * len(words))
        return LikelihoodResult(words, tuple(values), Usage(10, 5, 5, 1), 0.001)

    def kinds(self) -> list[str]:
        return [kind for kind, _, _ in self.calls]


LABEL = {"Yes": "yes", "No": "no", "Unclear": "idk"}


class VerdictJudge(FakeJudge):
    """A judge of the decomposed metrics' verdicts (yes / no / idk): each question is
    answered by the first scripted key found in its question (the item is asked there) or,
    failing that, its blocks; or by `order`, in turn. The verdict gets 0.8, the other
    answers share the rest; an unscripted question answers yes."""

    def __init__(
        self,
        answers: dict[str, str] | None = None,
        texts: dict[str, str] | None = None,
        order: Sequence[str] | None = None,
    ) -> None:
        super().__init__(texts=texts)
        self.answers = answers or {}
        self.order = list(order or [])  # verdicts given in turn, cycling, before `answers`
        self.asked = 0

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        self.calls.append(("choose", prompt, tuple(options)))
        wanted = "yes"
        if self.order:
            wanted = self.order[self.asked % len(self.order)]
        self.asked += 1
        places = () if self.order else (prompt.question, "".join(prompt.blocks[1:]))
        for where in places:
            hit = next((v for k, v in self.answers.items() if k in where), None)
            if hit is not None:
                wanted = hit
                break
        values = [LABEL[o] for o in options]
        assert wanted in values, (wanted, options)
        rest = 0.2 / (len(options) - 1)
        probs = tuple(0.8 if v == wanted else rest for v in values)
        return ChoiceResult(tuple(options), probs, values.index(wanted), Usage(10, 5, 5, 1), 0.0)

    def generate(self, prompt: Prompt, max_tokens: int, schema=None, regex=None):
        self.calls.append(("generate", prompt, schema))
        text = self._lookup(self.texts, prompt.question, "[]")
        return GenerationResult(text, len(text), True, Usage(10, 5, 5, 1), 0.0)

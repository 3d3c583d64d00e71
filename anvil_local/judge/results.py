"""Typed results of the judge primitives, with the token bookkeeping of each call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from anvil_local.judge.prompt import Prompt


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more calls: the prompt's length, the part reused from the KV cache,
    what llama.cpp actually evaluated (prompt suffix + answer decodes), and how many token
    positions were new to the run's prompt trie (see `judge/trie.py`), and whether that count
    stopped at the trie's limit (the distinct figure is then too small)."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    evaluated_tokens: int = 0
    calls: int = 0
    distinct_tokens: int = 0
    trie_capped: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.reused_tokens + other.reused_tokens,
            self.evaluated_tokens + other.evaluated_tokens,
            self.calls + other.calls,
            self.distinct_tokens + other.distinct_tokens,
            bool(self.trie_capped or other.trie_capped),
        )

    def to_dict(self) -> dict[str, int]:
        data = {
            "prompt_tokens": self.prompt_tokens,
            "reused_tokens": self.reused_tokens,
            "evaluated_tokens": self.evaluated_tokens,
            "calls": self.calls,
            "distinct_tokens": self.distinct_tokens,
        }
        if self.trie_capped:
            data["trie_capped"] = 1
        return data


@dataclass(frozen=True)
class HiddenStateResult:
    """The judge's last hidden state at the end of a prompt (where it would answer)."""

    state: tuple[float, ...]
    usage: Usage
    seconds: float


@dataclass(frozen=True)
class ChoiceResult:
    """One option picked from a declared list, with the probability of every option."""

    options: tuple[str, ...]
    probabilities: tuple[float, ...]
    index: int
    usage: Usage
    seconds: float

    @property
    def choice(self) -> str:
        return self.options[self.index]

    def distribution(self) -> dict[str, float]:
        return dict(zip(self.options, self.probabilities, strict=True))


@dataclass(frozen=True)
class ScoreResult:
    """The probability of every integer in [lo, hi] and the probability-weighted score."""

    lo: int
    hi: int
    probabilities: tuple[float, ...]
    usage: Usage
    seconds: float

    @property
    def weighted(self) -> float:
        return sum((self.lo + i) * p for i, p in enumerate(self.probabilities))

    @property
    def most_likely(self) -> int:
        best = max(range(len(self.probabilities)), key=lambda i: (self.probabilities[i], -i))
        return self.lo + best

    def distribution(self) -> dict[int, float]:
        return {self.lo + i: p for i, p in enumerate(self.probabilities)}


@dataclass(frozen=True)
class Ask:
    """One decision question of a batch (`decide`): a choice over `options`, or, with
    `scale` (lo, hi), a score over lo..hi."""

    prompt: Prompt
    options: tuple[str, ...] = ()
    scale: tuple[int, int] | None = None


@dataclass(frozen=True)
class GenerationResult:
    text: str
    tokens: int
    finished: bool  # ended on its own (end of turn / grammar complete), not by the budget
    usage: Usage
    seconds: float


@dataclass(frozen=True)
class LikelihoodResult:
    """The log-probability of each token of a continuation given a prompt."""

    tokens: tuple[str, ...]  # each token's text
    logprobs: tuple[float, ...]
    usage: Usage
    seconds: float

    @property
    def total(self) -> float:
        return sum(self.logprobs)

    @property
    def mean(self) -> float:
        return self.total / len(self.logprobs)

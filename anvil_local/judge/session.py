"""JudgeSession: what a metric is handed to judge one case.

A session holds a judge (or the resolved model to load one from, through a `JudgePool`, on
first use), the model's identity and where generated G-Eval steps are kept. Metrics receive
it explicitly: they never load or download a model and never open a cache themselves.
Opening a session on a model name is `anvil_local.models.open_session`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Protocol

from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.pool import JudgePool, process_pool
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import (
    Ask,
    ChoiceResult,
    GenerationResult,
    HiddenStateResult,
    LikelihoodResult,
    ScoreResult,
    Usage,
)


class StepsStore(Protocol):
    """Where generated evaluation steps outlive a process (the on-disk cache)."""

    def get_steps(self, key: str) -> list[str] | None: ...
    def put_steps(self, key: str, steps: list[str]) -> None: ...
    def get_prior(self, key: str) -> list[float] | None: ...
    def put_prior(self, key: str, prior: list[float]) -> None: ...


class JudgeSession:
    """The judge's primitives (choose, score, generate) plus model identity and steps."""

    def __init__(
        self,
        judge: Any = None,
        steps: StepsStore | None = None,
        model: ResolvedModel | None = None,
        pool: JudgePool | None = None,
    ) -> None:
        if judge is None and model is None:
            raise ValueError("a session needs a judge or a model to load")
        self._judge = judge
        self._pool = pool
        #: While a case's metrics run side by side (`judge/rounds.py`), what answers their
        #: decisions.
        self.rounds: Any = None
        self.model: ResolvedModel = model if model is not None else judge.model
        self.steps_store = steps
        self._steps: dict[str, list[str]] = {}
        self._priors: dict[str, list[float]] = {}
        # prefetched readings, each with the number of `likelihood` calls still owed it
        self._likelihoods: dict[tuple[Prompt, str], tuple[LikelihoodResult, int]] = {}
        # readings kept while `shared_reads` is open, for every identical call
        self._shared: dict[tuple[Prompt, str], LikelihoodResult] | None = None

    @property
    def judge(self) -> Any:
        """The loaded judge; a session opened on a model loads it on first use, so metrics
        that never ask the judge (code metrics) never load a model."""
        if self._judge is None:
            self._judge = (self._pool or process_pool()).get(self.model)
        return self._judge

    def choose(self, prompt: Prompt, options: Sequence[str]) -> ChoiceResult:
        if self.rounds is not None:
            return self.rounds.ask([Ask(prompt, tuple(options))])[0]  # type: ignore[return-value]
        return self.judge.choose(prompt, options)

    def score(self, prompt: Prompt, lo: int, hi: int) -> ScoreResult:
        if self.rounds is not None:
            return self.rounds.ask([Ask(prompt, scale=(lo, hi))])[0]  # type: ignore[return-value]
        return self.judge.score(prompt, lo, hi)

    def decide(self, asks: Sequence[Ask]) -> list[ChoiceResult | ScoreResult]:
        """Several questions that do not depend on each other's answers (a metric's verdicts
        on the items of one case): a remote judge sends them together (`RemoteJudge.decide`),
        a local one answers them in order."""
        if self.rounds is not None:
            return self.rounds.ask(asks)
        return decide(self.judge, asks)

    @property
    def batches(self) -> bool:
        """Whether the judge answers a batch in fewer requests than its questions (a
        decision server): then a case's metrics are judged side by side (`judge/rounds.py`)."""
        return bool(self.model.remote)

    def generate(
        self,
        prompt: Prompt,
        max_tokens: int,
        schema: dict[str, Any] | None = None,
        regex: str | None = None,
        stop: Sequence[str] = (),
    ) -> GenerationResult:
        if stop:  # judges without stop strings (test stand-ins) keep working without them
            return self.judge.generate(prompt, max_tokens, schema=schema, regex=regex, stop=stop)
        return self.judge.generate(prompt, max_tokens, schema=schema, regex=regex)

    def decode_choice(self, prompt: Prompt, options: Sequence[str]) -> str:
        return self.judge.decode_choice(prompt, options)

    def hidden_state(self, prompt: Prompt) -> HiddenStateResult:
        return self.judge.hidden_state(prompt)

    def likelihood(self, prompt: Prompt, continuation: str) -> LikelihoodResult:
        key = (prompt, continuation)
        kept = self._likelihoods.get(key)
        if kept is None:
            shared = None if self._shared is None else self._shared.get(key)
            if shared is not None:
                return _again(shared)
            result = self.judge.likelihood(prompt, continuation)
            if self._shared is not None:
                self._shared[key] = result
            return result
        result, owed = kept
        if owed > 1:  # later hand-outs read nothing: their usage says so
            self._likelihoods[key] = (_again(result), owed - 1)
        else:
            del self._likelihoods[key]
        return result

    def prefetch_likelihood(self, prompt: Prompt, continuation: str) -> None:
        """Read a likelihood now and keep it for the next identical `likelihood` call, once
        per prefetch: two metrics that prefetch the same reading (two contrasts with one
        task) both find it, instead of the second reading it between two documents' prompts
        and evicting the document. The values are those of a cold read (prefix reuse in the
        KV cache is exact)."""
        key = (prompt, continuation)
        kept = self._likelihoods.get(key)
        if kept is None:
            self._likelihoods[key] = (self.judge.likelihood(prompt, continuation), 1)
        else:
            self._likelihoods[key] = (kept[0], kept[1] + 1)

    @contextlib.contextmanager
    def shared_reads(self) -> Iterator[None]:
        """While open, an identical `likelihood` call is read once and handed out again:
        two members of a features metric that read the same prompt (two likelihood metrics
        with one task) share the reading instead of the second reading it again after the
        first one's other cases. The values are those of the one read. Nested, the
        outermost one decides when they are forgotten."""
        if self._shared is not None:
            yield
            return
        self._shared = {}
        try:
            yield
        finally:
            self._shared = None

    def drop_prefetched(self) -> None:
        """Forget prefetched readings nobody asked for (a DAG's likelihood node that a walk
        did not reach): called at the end of each prefix group, so none pile up in a run."""
        self._likelihoods.clear()

    @property
    def usage(self) -> Usage:
        return self.judge.usage if self._judge is not None else Usage()

    def remembered_steps(self, key: str, make: Callable[[], list[str]]) -> list[str]:
        """Steps under `key`: from this session, else the store, else made (and kept)."""
        steps = self._steps.get(key)
        if steps is None and self.steps_store is not None:
            steps = self.steps_store.get_steps(key)
        if steps is None:
            steps = make()
            if self.steps_store is not None:
                self.steps_store.put_steps(key, steps)
        self._steps[key] = steps
        return steps

    def remembered_prior(
        self, key: str, make: Callable[[], list[float]]
    ) -> tuple[list[float], bool]:
        """A contextual prior under `key` (from this session, else the store, else made and
        kept); also whether it was made now (its tokens then count for the caller)."""
        prior = self._priors.get(key)
        store = self.steps_store if hasattr(self.steps_store, "get_prior") else None
        if prior is None and store is not None:
            prior = store.get_prior(key)
        made = prior is None
        if prior is None:
            prior = make()
            if store is not None:
                store.put_prior(key, prior)
        self._priors[key] = prior
        return prior, made


def _again(result: LikelihoodResult) -> LikelihoodResult:
    """A reading handed out a second time: it read nothing, and its usage says so."""
    tokens = result.usage.prompt_tokens
    return replace(result, usage=Usage(tokens, tokens), seconds=0.0)


def answer_one(judge: Any, ask: Ask) -> ChoiceResult | ScoreResult:
    """One question of a batch on a judge (or session) that answers one at a time."""
    if ask.scale is None:
        return judge.choose(ask.prompt, ask.options)
    return judge.score(ask.prompt, *ask.scale)


def decide(judge: Any, asks: Sequence[Ask]) -> list[ChoiceResult | ScoreResult]:
    """`judge.decide(asks)` for any judge or session that has it; one at a time for one
    without (a local judge, a test stand-in)."""
    if hasattr(judge, "decide"):
        return judge.decide(asks)
    return [answer_one(judge, ask) for ask in asks]

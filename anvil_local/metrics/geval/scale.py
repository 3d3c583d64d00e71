"""What a G-Eval answers on, chosen once per metric: a score range (lo..hi, the score the
probability-weighted mean) or a strict Yes/No verdict (the score 1 or 0).

A scale owns everything that differs between the two: the options, the task sentence and
the cue, the line a panel member states its scale with, which answers an example may give,
how the judge is read and how the reading becomes a score and fills the trace. Each reading
keeps its own type (a ScoreResult, a ChoiceResult) from the judge to the trace.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import ChoiceResult, ScoreResult, Usage
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.base import check_threshold
from anvil_local.metrics.calibration import contextual_choose
from anvil_local.metrics.examples import AnswerCheck, score_check, yes_no_check
from anvil_local.metrics.geval.prompts import (
    MEMBER_SCALE,
    MEMBER_SCORE_CUE,
    MEMBER_VERDICT,
    MEMBER_VERDICT_CUE,
    SCORE_CUE,
    SCORE_SUMMARY,
    SCORE_TASK,
    VERDICT_CUE,
    VERDICT_SUMMARY,
    VERDICT_TASK,
)
from anvil_local.metrics.geval.rubric import Rubric, normalise
from anvil_local.metrics.geval.trace import GEvalTrace

R = TypeVar("R", ScoreResult, ChoiceResult)


@dataclass(frozen=True)
class Outcome:
    """A judged case: its score, the phrase the reason question quotes ("score 6.40 on
    0-10"), and the tokens the reading spent."""

    score: float
    summary: str
    usage: Usage


class Scale(ABC, Generic[R]):
    """A score range or a strict verdict (see the module's docstring)."""

    #: The key of an example's answer in a metric file.
    answer_key: ClassVar[str]
    #: Whether a definition shows its rubric (a strict verdict has no use for one).
    shows_rubric: ClassVar[bool]
    #: What the judge picks from, in declared order.
    options: tuple[str, ...]

    @abstractmethod
    def threshold(self, threshold: Any) -> float:
        """The metric's threshold given the one asked for."""

    @abstractmethod
    def answer_check(self) -> AnswerCheck:
        """What turns an example's answer into the judge's reply (or rejects it)."""

    @abstractmethod
    def task(self, fields: str) -> str:
        """A single metric's task sentence; `fields` as `fields_phrase` writes them."""

    @abstractmethod
    def cue(self) -> str:
        """The cue after the case, for a metric alone."""

    @abstractmethod
    def member_cue(self, name: str) -> str:
        """The cue after the case for the panel member `name`."""

    @abstractmethod
    def member_note(self, rubric: Sequence[Rubric] | None) -> str | None:
        """The line a panel member's block states its scale with, if its rubric does not."""

    @abstractmethod
    def read(self, session: JudgeSession, prompt: Prompt) -> R:
        """The judge's answer on this scale."""

    @abstractmethod
    def of_choice(self, choice: ChoiceResult) -> R:
        """A calibrated choice among `options` as this scale's reading."""

    @abstractmethod
    def outcome(self, reading: R, trace: GEvalTrace) -> Outcome:
        """The score of a reading; fills the trace's part of this scale."""

    def judge(self, session: JudgeSession, prompt: Prompt, trace: GEvalTrace) -> Outcome:
        """Read the judge once and score its answer."""
        return self.outcome(self.read(session, prompt), trace)

    def judge_calibrated(
        self, session: JudgeSession, prompt: Prompt, prior_prompt: Prompt, trace: GEvalTrace
    ) -> Outcome:
        """Contextual calibration: the judge's choice among `options` with the distribution
        it gives `prior_prompt` (a content-free case) divided out; both kept in the trace."""
        options = list(self.options)
        found = contextual_choose(session, prompt, prior_prompt, options)
        trace.raw = dict(zip(options, found.raw, strict=True))
        trace.prior = dict(zip(options, found.prior, strict=True))
        return self.outcome(self.of_choice(found.choice), trace)


class ScoreScale(Scale[ScoreResult]):
    """Every integer in lo..hi; the score is the probability-weighted mean, normalised."""

    answer_key = "score"
    shows_rubric = True

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.options = tuple(str(v) for v in range(lo, hi + 1))

    def threshold(self, threshold: Any) -> float:
        return check_threshold(threshold)

    def answer_check(self) -> AnswerCheck:
        return score_check(self.lo, self.hi)

    def task(self, fields: str) -> str:
        return SCORE_TASK.format(fields=fields, lo=self.lo, hi=self.hi)

    def cue(self) -> str:
        return SCORE_CUE.format(lo=self.lo, hi=self.hi)

    def member_cue(self, name: str) -> str:
        return MEMBER_SCORE_CUE.format(name=name, lo=self.lo, hi=self.hi)

    def member_note(self, rubric: Sequence[Rubric] | None) -> str | None:
        return None if rubric else MEMBER_SCALE.format(lo=self.lo, hi=self.hi)

    def read(self, session: JudgeSession, prompt: Prompt) -> ScoreResult:
        return session.score(prompt, self.lo, self.hi)

    def of_choice(self, choice: ChoiceResult) -> ScoreResult:
        return ScoreResult(self.lo, self.hi, choice.probabilities, choice.usage, choice.seconds)

    def outcome(self, reading: ScoreResult, trace: GEvalTrace) -> Outcome:
        weighted = reading.weighted
        trace.score_range = (self.lo, self.hi)
        trace.distribution = {str(k): v for k, v in reading.distribution().items()}
        trace.weighted = weighted
        trace.most_likely = reading.most_likely
        summary = SCORE_SUMMARY.format(weighted=weighted, lo=self.lo, hi=self.hi)
        return Outcome(normalise(weighted, self.lo, self.hi), summary, reading.usage)


class VerdictScale(Scale[ChoiceResult]):
    """Strict mode: Yes (score 1) or No (score 0); the threshold is always 1."""

    answer_key = "verdict"
    shows_rubric = False
    options = ("Yes", "No")

    def threshold(self, threshold: Any) -> float:
        return 1.0

    def answer_check(self) -> AnswerCheck:
        return yes_no_check

    def task(self, fields: str) -> str:
        return VERDICT_TASK.format(fields=fields)

    def cue(self) -> str:
        return VERDICT_CUE

    def member_cue(self, name: str) -> str:
        return MEMBER_VERDICT_CUE.format(name=name)

    def member_note(self, rubric: Sequence[Rubric] | None) -> str | None:
        return MEMBER_VERDICT

    def read(self, session: JudgeSession, prompt: Prompt) -> ChoiceResult:
        return session.choose(prompt, list(self.options))

    def of_choice(self, choice: ChoiceResult) -> ChoiceResult:
        return choice

    def outcome(self, reading: ChoiceResult, trace: GEvalTrace) -> Outcome:
        trace.verdict, trace.probabilities = reading.choice, reading.distribution()
        summary = VERDICT_SUMMARY.format(verdict=reading.choice, p_yes=reading.probabilities[0])
        return Outcome(1.0 if reading.choice == "Yes" else 0.0, summary, reading.usage)


def scale_for(strict_mode: bool, score_range: tuple[int, int]) -> ScoreScale | VerdictScale:
    """The scale a definition asks for: a strict verdict, else its score range."""
    return VerdictScale() if strict_mode else ScoreScale(*score_range)

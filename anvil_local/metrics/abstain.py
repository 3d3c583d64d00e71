"""Abstention: a verdict the judge is not sure of is marked `uncertain` instead of trusted.

A result's **confidence** is how sure its pass/fail verdict is, from 0.5 (a coin toss) to 1:

- a DAG walked on the judge's answers: the probability of the path it took (the product of
  each chosen answer's probability), which is low when any answer on the way was a toss-up;
- any other metric (a soft DAG, G-Eval, a likelihood metric, a fitted head): its score read
  as the probability of passing, with the threshold at even odds. For a score that is a
  probability and a threshold of 0.5 (a yes/no question, a logistic head) that is
  max(score, 1 - score); otherwise the distance from the threshold, scaled to the side's
  room (a score of 1.0 or 0.0 is fully sure).

A result whose confidence is below the run's level is `uncertain`; how a gate counts it is
the run's `UncertainPolicy`. The cache keeps results as the metric produced them, so the level
can change without re-judging anything. `anvil bench --abstain-precision` fits the level that
reaches a target accuracy on the verdicts kept (`bench.abstention`).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from anvil_local.errors import DataError
from anvil_local.metrics.result import MetricResult


class UncertainPolicy(enum.StrEnum):
    """How an uncertain verdict counts: as a pass, as a fail, or as no verdict (an error for
    the exit code, its score kept)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"


def confidence(result: MetricResult) -> float | None:
    """How sure the result's verdict is, in [0.5, 1]; None for an error."""
    if result.error is not None or result.score is None:
        return None
    trace = result.trace
    path = trace.get("path_probability")
    if trace.get("type") == "dag" and trace.get("expected_score") is None and _number(path):
        return max(0.5, min(1.0, float(path)))
    return score_confidence(float(result.score), result.threshold)


def score_confidence(score: float, threshold: float) -> float:
    """The score as the probability of passing, the threshold at even odds, folded to the
    verdict's side."""
    if score >= threshold:
        room = 1.0 - threshold
        share = 1.0 if room <= 0 else (score - threshold) / room
    else:
        share = 1.0 if threshold <= 0 else (threshold - score) / threshold
    return 0.5 + 0.5 * max(0.0, min(1.0, share))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Abstention:
    """The confidence levels of a run: one for every metric, or per metric name."""

    levels: Mapping[str, float]
    default: float | None = None
    policy: UncertainPolicy = UncertainPolicy.FAIL

    @classmethod
    def parse(
        cls, items: Iterable[str], policy: str | UncertainPolicy = UncertainPolicy.FAIL
    ) -> Abstention | None:
        """`["0.7"]` (every metric) or `["Name=0.7", ...]`; None when nothing is given."""
        levels: dict[str, float] = {}
        default: float | None = None
        for item in items:
            name, sep, value = item.rpartition("=")
            level = _level(value.strip(), item)
            if not sep:
                if default is not None:
                    raise DataError(
                        f"--abstain-below {item!r}: a level for every metric is given twice"
                    )
                default = level
            elif not name.strip():
                raise DataError(f"--abstain-below expects LEVEL or METRIC=LEVEL, got {item!r}")
            else:
                levels[name.strip()] = level
        if default is None and not levels:
            return None
        return cls(levels, default, UncertainPolicy(policy))

    def level_for(self, metric: str) -> float | None:
        return self.levels.get(metric, self.default)

    def unknown(self, names: Iterable[str]) -> list[str]:
        """Levels given for metrics the run does not have (a typo, not a no-op)."""
        known = set(names)
        return [name for name in self.levels if name not in known]

    def apply(self, result: MetricResult) -> MetricResult:
        """The result with its confidence, marked uncertain (and its success set by the
        policy) when below this metric's level; unchanged when no level applies."""
        level = self.level_for(result.metric)
        if level is None:
            return result
        sure = confidence(result)
        if sure is None:
            return result
        if sure >= level:
            return dataclasses.replace(result, confidence=sure)
        success = {
            UncertainPolicy.PASS: True,
            UncertainPolicy.FAIL: False,
            UncertainPolicy.ERROR: None,
        }[self.policy]
        return dataclasses.replace(result, confidence=sure, uncertain=True, success=success)


def _level(text: str, item: str) -> float:
    try:
        level = float(text)
    except ValueError:
        raise DataError(f"--abstain-below {item!r}: the level is a number from 0.5 to 1") from None
    if not 0.5 <= level <= 1.0:
        raise DataError(
            f"--abstain-below {item!r}: the level is a confidence from 0.5 (a coin toss) to 1"
        )
    return level


def plain(result: MetricResult) -> MetricResult:
    """The result without abstention's marks (what the cache keeps)."""
    if result.confidence is None and not result.uncertain:
        return result
    success = result.success
    if result.uncertain and result.score is not None:
        success = result.score >= result.threshold
    return dataclasses.replace(result, confidence=None, uncertain=False, success=success)

"""Calibration: making a small judge's numbers mean what they say.

Two kinds, both optional:

- **Contextual** (Zhao et al. 2021, "Calibrate before use"): a small model leans towards some
  options whatever the case says (SmolLM2's G-Eval puts most of its mass on the lowest
  score). The option
  distribution on a content-free case (every field "N/A") measures that lean once per
  question and model; every verdict distribution is divided by it and renormalised.
- **Fitted**: `anvil bench --fit-calibration` fits a monotone (isotonic) map from a metric's
  score to its human label on a labelled split and writes it into the metric file, one map per
  judge model. At run time the map turns the raw score into the calibrated one; the raw score
  is kept in the result (`raw_score`). Maps are applied to a top-level metric's result, after
  the cache (the cache keeps raw results, so fitting a map never re-judges a case). A fitted
  head (`heads.Head`, from `anvil fit`) sits in the same table and is applied the same way: it
  reads several features of the result instead of its one score.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from anvil_local.cache import digest
from anvil_local.errors import MetricDefinitionError
from anvil_local.judge.options import argmax_first
from anvil_local.judge.prompt import Prompt
from anvil_local.judge.results import ChoiceResult, Usage
from anvil_local.metrics.heads import HEAD_KINDS, Head, holds_on_of
from anvil_local.metrics.result import MetricResult
from anvil_local.testcase import LLMTestCase, SingleTurnParams

log = logging.getLogger(__name__)

#: The text every field of the content-free case holds.
CONTENT_FREE = "N/A"
#: A prior below this is treated as this (an option the model never picks on empty input
#: would otherwise divide by ~0).
PRIOR_FLOOR = 1e-6


# -- contextual ------------------------------------------------------------------------


def divide_out(probabilities: Sequence[float], prior: Sequence[float]) -> tuple[float, ...]:
    """p_i / prior_i, renormalised to sum to 1 (the prior floored at PRIOR_FLOOR)."""
    if len(probabilities) != len(prior):
        raise ValueError("a prior needs one value per option")
    p = np.asarray(probabilities, dtype=float)
    q = np.maximum(np.asarray(prior, dtype=float), PRIOR_FLOOR)
    ratio = p / q
    total = ratio.sum()
    if not math.isfinite(total) or total <= 0:
        return tuple(float(v) for v in p)
    return tuple(float(v) for v in ratio / total)


@dataclass(frozen=True)
class Calibrated:
    """A choice with its distribution divided by the prior (`raw` keeps the judge's own)."""

    choice: ChoiceResult
    raw: tuple[float, ...]
    prior: tuple[float, ...]


def contextual_choose(
    session: Any, prompt: Prompt, prior_prompt: Prompt, options: Sequence[str]
) -> Calibrated:
    """`session.choose(prompt, options)` with the content-free prior divided out. The prior is
    asked first (once per question and model; kept in the session and the cache) so that the
    case's own prompts stay back to back in the KV cache."""
    key = digest(
        "prior", session.model.sha256, list(prior_prompt.blocks), prior_prompt.question, options
    )
    spent = Usage()

    def make() -> list[float]:
        nonlocal spent
        result = session.choose(prior_prompt, options)
        spent = result.usage
        return [float(p) for p in result.probabilities]

    prior, _ = session.remembered_prior(key, make)
    result = session.choose(prompt, options)
    probabilities = divide_out(result.probabilities, prior)
    choice = ChoiceResult(
        result.options,
        probabilities,
        argmax_first(probabilities),
        result.usage + spent,
        result.seconds,
    )
    return Calibrated(choice, tuple(result.probabilities), tuple(prior))


def content_free_case(params: Sequence[SingleTurnParams]) -> LLMTestCase:
    """A case whose every field the metric reads is "N/A"."""
    values: dict[str, Any] = {}
    for param in params:
        values[param.value] = CONTENT_FREE
    return LLMTestCase(**values)


# -- fitted ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ScoreMap:
    """A monotone piecewise-linear map from raw score to calibrated score (clipped at both
    ends), fitted for one model file (`sha256`) against one label."""

    scores: tuple[float, ...]
    values: tuple[float, ...]
    sha256: str
    label: str = ""
    fitted_on: str = ""
    holds_on: tuple[tuple[str, str], ...] = ()  # (format, evidence) of conversions

    def __post_init__(self) -> None:
        if not self.scores or len(self.scores) != len(self.values):
            raise MetricDefinitionError(
                "a calibration needs 'scores' and 'values' of the same non-zero length"
            )
        if any(not isinstance(v, int | float) or isinstance(v, bool) for v in self.scores):
            raise MetricDefinitionError("calibration 'scores' must be numbers")
        if any(not isinstance(v, int | float) or isinstance(v, bool) for v in self.values):
            raise MetricDefinitionError("calibration 'values' must be numbers")
        if any(b < a for a, b in zip(self.scores, self.scores[1:], strict=False)):
            raise MetricDefinitionError("calibration 'scores' must not decrease")
        if any(b < a for a, b in zip(self.values, self.values[1:], strict=False)):
            raise MetricDefinitionError("calibration 'values' must not decrease (a monotone map)")
        if any(not 0 <= v <= 1 for v in self.values):
            raise MetricDefinitionError("calibration 'values' must be between 0 and 1")
        if not isinstance(self.sha256, str) or len(self.sha256) != 64:
            raise MetricDefinitionError("a calibration needs the model's 'sha256'")

    def apply(self, score: float) -> float:
        return float(np.interp(score, self.scores, self.values))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"sha256": self.sha256}
        if self.label:
            data["label"] = self.label
        if self.fitted_on:
            data["fitted_on"] = self.fitted_on
        data["scores"] = list(self.scores)
        data["values"] = list(self.values)
        if self.holds_on:
            data["holds_on"] = dict(self.holds_on)
        return data

    @classmethod
    def from_dict(cls, data: Any, model: str) -> ScoreMap:
        if not isinstance(data, dict):
            raise MetricDefinitionError(f"calibration for {model!r} must be a table")
        known = {"sha256", "label", "fitted_on", "holds_on", "scores", "values"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise MetricDefinitionError(
                f"unknown calibration field(s) for {model!r}: {', '.join(unknown)}"
            )
        scores, values = data.get("scores"), data.get("values")
        if not isinstance(scores, list) or not isinstance(values, list):
            raise MetricDefinitionError(f"calibration for {model!r} needs 'scores' and 'values'")
        return cls(
            tuple(scores),
            tuple(values),
            data.get("sha256", ""),
            str(data.get("label", "")),
            str(data.get("fitted_on", "")),
            holds_on_of(data, model),
        )


@dataclass(frozen=True)
class Calibration:
    """Fitted maps or heads by model name (the name a results line carries)."""

    maps: dict[str, ScoreMap | Head]

    @classmethod
    def from_dict(cls, data: Any) -> Calibration:
        if not isinstance(data, dict) or not data:
            raise MetricDefinitionError("'calibration' must be a table of maps by model name")
        return cls({str(name): _entry(entry, str(name)) for name, entry in data.items()})

    def to_dict(self) -> dict[str, Any]:
        return {name: entry.to_dict() for name, entry in self.maps.items()}

    def for_model(
        self,
        name: str,
        sha256: str,
        source: tuple[str, str] | None = None,
        format: str = "",
    ) -> ScoreMap | Head | None:
        """The map (or head) that applies to this model file, else None (with a warning, once,
        where a map exists that does not apply); see `lookup`."""
        entry, why, warn = self.lookup(name, sha256, source, format)
        if warn:
            remedy = f": run with --model {source[0]}" if source is not None else ""
            _warn_once(f"calibration for {name}: {why}; scores are left uncalibrated{remedy}")
        return entry

    def lookup(
        self,
        name: str,
        sha256: str,
        source: tuple[str, str] | None = None,
        format: str = "",
    ) -> tuple[ScoreMap | Head | None, str, bool]:
        """(the map that applies, why, whether a user should be warned). The map fitted on
        this file; else, for a precision-keeping conversion (to `format`) of the model
        `source` = (name, sha256), that model's map where it records that it holds on that
        format (`holds_on`, with its evidence). A model named otherwise (a catalogue file
        given by its path) finds the map fitted on the same bytes."""
        entry = self.maps.get(name)
        if entry is None:
            entry = next((e for e in self.maps.values() if e.sha256 == sha256), None)
        if entry is None and source is not None:
            fitted = self.maps.get(source[0])
            if fitted is not None and fitted.sha256 == source[1]:
                evidence = dict(fitted.holds_on).get(format.upper())
                if evidence is not None:
                    return fitted, f"fitted on {source[0]}, holds on {format}: {evidence}", False
                held = f"not shown to hold on {format or 'this conversion'} (no 'holds_on')"
                return None, f"fitted on {source[0]}, {held}", True
        if entry is None:
            return None, "none fitted for it", False
        if entry.sha256 != sha256:
            return None, f"fitted on another file (sha256 {entry.sha256[:12]}...)", True
        return entry, "fitted on this file", False


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    """A warning about a run's calibration, once per process, not once per case."""
    if message not in _WARNED:
        _WARNED.add(message)
        log.warning("%s", message)


def _entry(data: Any, model: str) -> ScoreMap | Head:
    """A table of the calibration: a head when it names its kind, else a score map."""
    if isinstance(data, dict) and data.get("kind") in HEAD_KINDS:
        return Head.from_dict(data, model)
    return ScoreMap.from_dict(data, model)


def score_input(result: MetricResult) -> float | None:
    """The continuous raw score a fitted map reads: a soft DAG's expected score, else the
    score before calibration."""
    expected = result.trace.get("expected_score")
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return float(expected)
    return result.raw_score if result.raw_score is not None else result.score


def calibrate(
    metric: Any,
    result: MetricResult,
    model_name: str,
    sha256: str,
    source: tuple[str, str] | None = None,
    format: str = "",
) -> MetricResult:
    """The result with the metric's fitted map for this model applied (unchanged when the
    metric has none for it, or the result is an error); `source` and `format` as in
    `for_model`."""
    calibration: Calibration | None = getattr(metric, "calibration", None)
    if calibration is None or result.score is None or result.raw_score is not None:
        return result
    entry = calibration.for_model(model_name, sha256, source, format)
    if entry is None:
        return result
    if isinstance(entry, Head):
        headed = entry.apply(result)
        if headed is None:
            log.warning(
                "%s: the result lacks a feature the head for %s reads; left unfitted",
                result.metric,
                model_name,
            )
            return result
        score = headed
    else:
        raw = score_input(result)
        assert raw is not None
        score = entry.apply(raw)
    return dataclasses.replace(
        result, score=score, success=score >= result.threshold, raw_score=result.score
    )


def uncalibrated(result: MetricResult) -> MetricResult:
    """The result as the metric produced it (what the cache keeps)."""
    if result.raw_score is None:
        return result
    raw = result.raw_score
    return dataclasses.replace(result, score=raw, success=raw >= result.threshold, raw_score=None)

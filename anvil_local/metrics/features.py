"""A features metric: several metrics read on one case, their readings kept side by side.

A small judge's single numbers are weak, but several of them (how much of a summary its
document supports word for word, how likely the judge finds it given the document and
without it, the judge's P(Yes) to a question) carry different signal. A features metric runs
its members on the case and records what each read (`readings`); a head fitted to labels
(`anvil fit`, `anvil_local.metrics.heads`) combines them into the score. Until a head is
fitted for the judge model, the score is the mean of the members' scores (said in the trace).

The members read a whole prefix group in `prepare`, sharing the document's prompt prefix and
identical readings, so the group's prompt trie is read once; a member's own calibration is
not applied (the head reads raw readings).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from anvil_local.errors import (
    AnvilError,
    JudgeRefused,
    JudgeUnavailable,
    MetricDefinitionError,
    MetricTypeError,
)
from anvil_local.judge.results import Usage
from anvil_local.metrics.base import BaseMetric, MetricResult, check_name, check_threshold
from anvil_local.metrics.definitions import metric_from_dict
from anvil_local.metrics.heads import state_readings
from anvil_local.metrics.result import Trace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams


def readings(name: str, score: float, trace: dict[str, Any]) -> dict[str, float]:
    """What one member's result contributes as features: its score (a soft DAG's expected
    score: the probability mass behind its verdicts, where the score is the one walk's), and
    for a likelihood metric with a contrast its two sides (the log-probability with the
    source and without it), which a head may weigh differently. A numeric check is read as
    its value, not its score clipped to 0..1: a summary's 40 words are not 1. A hidden-state
    member adds its state's dimensions."""
    expected = trace.get("expected_score")
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        score = expected
    value = trace.get("value")
    if trace.get("type") == "check" and type(value) in (int, float):  # a bool is its score
        score = value
    found = {name: float(score)}
    if trace.get("type") == "likelihood" and trace.get("unconditional") is not None:
        found[f"{name}.conditional"] = float(trace["conditional"])
        found[f"{name}.unconditional"] = float(trace["unconditional"])
    found.update(state_readings(name, trace))
    return found


@dataclass
class FeaturesTrace(Trace):
    values: dict[str, float]  # every reading, members in declared order

    def to_dict(self) -> dict[str, Any]:
        return {"type": "features", "values": self.values}

    def lines(self) -> list[str]:
        width = max(len(k) for k in self.values)
        return [f"  {k:<{width}}  {v:.4f}" for k, v in self.values.items()]


@register_metric("features")
class FeaturesMetric(BaseMetric):
    """Members read side by side; their mean until a head is fitted."""

    title = "features metric"

    def __init__(
        self,
        name: str,
        features: Sequence[BaseMetric | dict[str, Any]],
        threshold: float = 0.5,
        model: Any = None,
    ) -> None:
        check_name(name)
        if isinstance(features, str | dict) or not list(features):
            raise MetricDefinitionError("'features' must list one or more metrics")
        members = []
        for item in features:
            member = metric_from_dict(item) if isinstance(item, dict) else item
            if not isinstance(member, BaseMetric):
                raise MetricTypeError(
                    f"a feature is a metric or its table, got {type(item).__name__}"
                )
            members.append(member)
        names = [m.name for m in members]
        if len(set(names)) != len(names):
            raise MetricDefinitionError(f"the features need distinct names: {names}")
        self.name = name
        self.features = members
        self.threshold = check_threshold(threshold)
        self.model = model

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "name": self.name,
            "features": [m.to_dict() for m in self.features],
            "threshold": self.threshold,
        }

    def required_params(self) -> list[SingleTurnParams]:
        params: list[SingleTurnParams] = []
        for member in self.features:
            params += [p for p in member.required_params() if p not in params]
        return params

    def prepare(self, cases: Sequence[LLMTestCase], session: Any) -> None:
        """Read every member over the whole group, so the group's prompts form one trie
        read once: first every member's own `prepare` (their prefetched readings are then
        shared, where two members prefetch the same one), then member by member over the
        cases, with identical readings shared (`JudgeSession.shared_reads`: two likelihood
        members with one task read one prompt). Member by member, a member whose layout
        differs reads the document once per group rather than once per case. `run` then
        takes these readings; they are the same as read one by one (a reused prefix gives
        bit-identical logits)."""
        self._readings = {}
        session = as_session(session, self.model)
        start = time.perf_counter()
        for member in self.features:
            member.prepare(cases, session)
        with session.shared_reads():
            for index, member in enumerate(self.features):
                for case in cases:
                    try:
                        result = member.run(case, session, include_reason=False)
                    except (JudgeRefused, JudgeUnavailable):
                        raise  # the judge itself is gone: not one case's error
                    except AnvilError:
                        continue  # `run` reads it again and reports the error
                    self._readings[(index, id(case))] = (case, result)
        # the group's reading time, shared evenly: what each case's result reports it cost
        share = (time.perf_counter() - start) / max(1, len(cases))
        self._prepared_seconds = {id(case): share for case in cases}

    def _reading(self, index: int, case: LLMTestCase, session: Any) -> MetricResult:
        """A member's reading of the case: prepared for its group, else read now."""
        kept = getattr(self, "_readings", {}).pop((index, id(case)), None)
        if kept is not None and kept[0] is case:
            return kept[1]
        return self.features[index].run(case, session, include_reason=False)

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        session = as_session(session, self.model)
        values: dict[str, float] = {}
        usage = Usage()
        scores = []
        with session.shared_reads():  # unprepared (one case measured): members still share
            for index, member in enumerate(self.features):
                result = self._reading(index, case, session)
                if result.error is not None or result.score is None:
                    raise AnvilError(f"feature {member.name!r} gave no score: {result.error}")
                usage = usage + result.usage
                scores.append(result.score)
                values.update(readings(member.name, result.score, result.trace.to_dict()))
        score = min(1.0, max(0.0, sum(scores) / len(scores)))
        return MetricResult(
            metric=self.name,
            score=score,
            success=score >= self.threshold,
            threshold=self.threshold,
            trace=FeaturesTrace(values),
            usage=usage,
            seconds=time.perf_counter() - start + self._prepared_share(case),
        )

    def _prepared_share(self, case: LLMTestCase) -> float:
        """This case's share of the time `prepare` spent reading its group (0 if none)."""
        return getattr(self, "_prepared_seconds", {}).pop(id(case), 0.0)

    def __repr__(self) -> str:
        names = ", ".join(m.name for m in self.features)
        return f"FeaturesMetric(name={self.name!r}, features=[{names}])"

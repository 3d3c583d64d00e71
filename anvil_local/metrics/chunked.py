"""A chunked metric: one metric asked of each piece of a long field, its scores aggregated.

A small judge trained on short premises reads a long document worse than a short one (the
faithfulness adapter's rows are 130 to 250 tokens; a news article is 500 and more). The
judges that work at this size (SummaC, AlignScore, MiniCheck) split the document into
chunks, ask each, and keep the best support: a summary is supported if some part of the
document supports it. A chunked metric does that for any metric whose score reads one text
field: the field is cut at sentence ends into pieces of at most `words` words (a sentence
longer than that is a piece of its own), the member runs once per piece, and the score is
the pieces' `max` (or `mean`, or `min`). The trace keeps every piece's score and the chosen
piece's own trace; a reason, when asked for, is the chosen piece's.

With `sentences = true` each sentence is a piece of its own. A chunked metric over the
summary's sentences whose member is a chunked metric over the document (SummaC's
zero-shot reading) asks every sentence of a summary against every piece of its document:
a multi-sentence summary is then as supported as its least supported sentence (`min`),
where asked whole one supported sentence can carry an unsupported one.
"""

from __future__ import annotations

import dataclasses
import re
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
from anvil_local.metrics.calibration import score_input
from anvil_local.metrics.definitions import metric_from_dict
from anvil_local.metrics.result import Trace
from anvil_local.models.sessions import as_session
from anvil_local.registry import register_metric
from anvil_local.testcase import LLMTestCase, SingleTurnParams

AGGREGATES = ("max", "mean", "min")
#: Fields a chunked metric may cut: the long texts of a single-turn case.
CUTTABLE = ("input", "actual_output", "expected_output")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def pieces(text: str, words: int) -> list[str]:
    """`text` cut at sentence ends (and line breaks) into runs of whole sentences of at most
    `words` words each, in order; a longer sentence is a piece of its own (so `words = 1`
    gives one sentence a piece)."""
    out: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
        if not sentence:
            continue
        n = len(sentence.split())
        if current and size + n > words:
            out.append(" ".join(current))
            current, size = [], 0
        current.append(sentence)
        size += n
    if current:
        out.append(" ".join(current))
    return out or [text]


@dataclass
class ChunkedTrace(Trace):
    field: str
    aggregate: str
    scores: list[float]  # one a piece, in the field's order
    chosen: int  # the piece whose score the aggregate is (max/min), or the best one (mean)
    member: dict[str, Any]  # the chosen piece's trace

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": "chunked",
            "field": self.field,
            "aggregate": self.aggregate,
            "scores": self.scores,
            "chosen": self.chosen,
            "member": self.member,
        }

    def lines(self) -> list[str]:
        listed = ", ".join(f"{s:.3f}" for s in self.scores)
        return [
            f"  {len(self.scores)} pieces of {self.field}: {listed}",
            f"  {self.aggregate}: piece {self.chosen + 1}",
        ]


@register_metric("chunked")
class ChunkedMetric(BaseMetric):
    """One member metric over the pieces of a long field, scores aggregated."""

    title = "chunked metric"

    def __init__(
        self,
        name: str,
        metric: BaseMetric | dict[str, Any],
        field: str = "input",
        words: int | None = None,
        aggregate: str = "max",
        sentences: bool = False,
        threshold: float = 0.5,
        include_reason: bool = False,
        model: Any = None,
    ) -> None:
        check_name(name)
        member = metric_from_dict(metric) if isinstance(metric, dict) else metric
        if not isinstance(member, BaseMetric):
            raise MetricTypeError(f"'metric' is a metric or its table, got {type(metric).__name__}")
        if field not in CUTTABLE:
            raise MetricDefinitionError(f"'field' must be one of {', '.join(CUTTABLE)}: {field!r}")
        if field not in [p.value for p in member.required_params()]:
            raise MetricDefinitionError(f"the metric {member.name!r} does not read {field!r}")
        if not isinstance(sentences, bool):
            raise MetricDefinitionError(f"'sentences' must be true or false: {sentences!r}")
        if sentences and words is not None:
            raise MetricDefinitionError("give 'words' or 'sentences = true', not both")
        if words is None:
            words = 1 if sentences else 120
        elif isinstance(words, bool) or not isinstance(words, int) or words < 10:
            raise MetricDefinitionError(f"'words' must be a whole number of 10 or more: {words!r}")
        if aggregate not in AGGREGATES:
            raise MetricDefinitionError(
                f"'aggregate' must be one of {', '.join(AGGREGATES)}: {aggregate!r}"
            )
        self.name = name
        self.metric = member
        self.field = field
        self.words = words
        self.sentences = sentences
        self.aggregate = aggregate
        self.threshold = check_threshold(threshold)
        self.include_reason = include_reason
        self.model = model

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "name": self.name,
            "metric": self.metric.to_dict(),
            "field": self.field,
            **({"sentences": True} if self.sentences else {"words": self.words}),
            "aggregate": self.aggregate,
            "threshold": self.threshold,
            "include_reason": self.include_reason,
        }

    def required_params(self) -> list[SingleTurnParams]:
        return self.metric.required_params()

    def _parts(self, case: LLMTestCase) -> list[LLMTestCase]:
        return [
            dataclasses.replace(case, **{self.field: piece})
            for piece in pieces(getattr(case, self.field), self.words)
        ]

    def prepare(self, cases: Sequence[LLMTestCase], session: Any) -> None:
        """Read a prefix group piece by piece: the group's cases share their document, so
        its first piece is read once for all of them, then the second, and so on (case by
        case, each piece would evict the one the next case starts with). The member prepares
        every piece of every case first (a chunked member reads the document's pieces in
        its own order, once for all the summary's sentences). `run` takes these results;
        they are the ones it would read itself."""
        session = as_session(session, self.model)
        start = time.perf_counter()
        split = {id(case): (case, self._parts(case)) for case in cases}
        self.metric.prepare([part for _, parts in split.values() for part in parts], session)
        self._prepared: dict[int, tuple[LLMTestCase, list[MetricResult | None]]] = {
            key: (case, [None] * len(parts)) for key, (case, parts) in split.items()
        }
        for index in range(max((len(p) for _, p in split.values()), default=0)):
            for key, (_, parts) in split.items():
                if index < len(parts):
                    try:
                        result = self.metric.run(parts[index], session, include_reason=False)
                    except (JudgeRefused, JudgeUnavailable):
                        raise  # the judge itself is gone: not one case's error
                    except AnvilError:
                        continue  # `run` reads it again and reports the error
                    self._prepared[key][1][index] = result
        share = (time.perf_counter() - start) / max(1, len(cases))
        self._prepared_seconds = {id(case): share for case in cases}

    def run(
        self, case: LLMTestCase, session: Any, *, include_reason: bool | None = None
    ) -> MetricResult:
        start = time.perf_counter()
        case.require(self.required_params(), self.name)
        session = as_session(session, self.model)
        parts = self._parts(case)
        kept = getattr(self, "_prepared", {}).pop(id(case), None)
        found = kept[1] if kept is not None and kept[0] is case else [None] * len(parts)
        usage = Usage()
        results = []
        for part, result in zip(parts, found, strict=True):
            if result is None:
                result = self.metric.run(part, session, include_reason=False)
            if result.error is not None or result.score is None:
                raise AnvilError(f"{self.metric.name!r} gave no score on a piece: {result.error}")
            usage = usage + result.usage
            results.append(result)
        scores = [float(score_input(r)) for r in results]  # a soft DAG: its P(Yes)
        if self.aggregate == "mean":
            score = sum(scores) / len(scores)
        else:
            score = max(scores) if self.aggregate == "max" else min(scores)
        pick = min if self.aggregate == "min" else max
        chosen = scores.index(pick(scores))
        reason = None
        if self.include_reason if include_reason is None else include_reason:
            explained = self.metric.run(parts[chosen], session, include_reason=True)
            reason = explained.reason
            usage = usage + explained.usage
        score = min(1.0, max(0.0, score))
        trace = ChunkedTrace(
            self.field, self.aggregate, scores, chosen, results[chosen].trace.to_dict()
        )
        return MetricResult(
            metric=self.name,
            score=score,
            success=score >= self.threshold,
            threshold=self.threshold,
            reason=reason,
            trace=trace,
            usage=usage,
            seconds=time.perf_counter()
            - start
            + getattr(self, "_prepared_seconds", {}).pop(id(case), 0.0),
        )

    def __repr__(self) -> str:
        size = "sentences=True" if self.sentences else f"words={self.words}"
        return (
            f"ChunkedMetric(name={self.name!r}, metric={self.metric.name!r}, "
            f"field={self.field!r}, {size}, aggregate={self.aggregate!r})"
        )

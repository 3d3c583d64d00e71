"""What every executor shares: judging one pair safely, and judging a whole group."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

from anvil_local.errors import (
    AnvilError,
    JudgeRefused,
    JudgeUnavailable,
    ModelLoadError,
    NativeCrash,
)
from anvil_local.judge.rounds import run_together
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.result import MetricResult
from anvil_local.run.plan import Plan, WorkGroup
from anvil_local.run.schedule import pair_order, trie_order
from anvil_local.testcase import LLMTestCase

log = logging.getLogger(__name__)

#: Called with (case position, metric index, result) as each pair is judged; returns True
#: when the run must stop (fail-fast).
Deliver = Callable[[int, int, MetricResult], bool]


class Executor(Protocol):
    """Stage 2: judges the plan's groups and delivers each result as it is produced.
    `workers` is how many judges run at once (the plan cuts big groups to balance them)."""

    workers: int

    def execute(self, plan: Plan, deliver: Deliver) -> None: ...


def run_metric(
    metric: BaseMetric, case: LLMTestCase, session: Any, include_reason: bool | None
) -> MetricResult:
    """One metric on one case; any failure becomes an error result, never a score."""
    start = time.perf_counter()
    try:
        return metric.run(case, session, include_reason=include_reason)
    except (KeyboardInterrupt, ModelLoadError, NativeCrash, JudgeRefused, JudgeUnavailable):
        raise  # the run cannot go on here: not one pair's error
    except AnvilError as exc:
        error = str(exc)
    except Exception as exc:  # a judge failure must not stop the run
        log.debug("metric %s failed on %s:\n%s", metric.name, case.id, traceback.format_exc())
        error = f"{type(exc).__name__}: {exc}"
    return MetricResult(
        metric=metric.name,
        score=None,
        success=None,
        threshold=metric.threshold,
        error=error,
        seconds=time.perf_counter() - start,
    )


def _prepare(metric: BaseMetric, cases: list[LLMTestCase], session: Any) -> None:
    """A metric's `prepare`; a failure only costs the reordering (`run` reads for itself
    and reports its own error)."""
    try:
        metric.prepare(cases, session)
    except (KeyboardInterrupt, ModelLoadError, NativeCrash, JudgeRefused, JudgeUnavailable):
        raise
    except Exception as exc:
        log.debug("preparing %s failed: %s", metric.name, exc)


def judge_group(
    group: WorkGroup,
    metrics: list[BaseMetric],
    session: Any,
    include_reason: bool | None,
    deliver: Deliver,
    on_start: Callable[[int, int], None] | None = None,
) -> bool:
    """Judge a group's pairs back to back on one session, in the scheduler's order
    (`schedule.pair_order`), after each metric's `prepare` on the group's cases (in trie
    order too, so what a metric reads there is read along the trie); True when delivery
    said stop."""
    ordered = trie_order(group)
    for index, metric in enumerate(metrics):
        cases = [item.row.case for item in ordered if index in item.metrics]
        if cases:
            _prepare(metric, cases, session)
    try:
        if getattr(session, "batches", False):
            return _judge_side_by_side(group, metrics, session, include_reason, deliver, on_start)
        for item, index in pair_order(group, metrics):
            if on_start is not None:
                on_start(item.row.position, index)
            result = run_metric(metrics[index], item.row.case, session, include_reason)
            if deliver(item.row.position, index, result):
                return True
        return False
    finally:
        if hasattr(session, "drop_prefetched"):
            session.drop_prefetched()


def _judge_side_by_side(
    group: WorkGroup,
    metrics: list[BaseMetric],
    session: Any,
    include_reason: bool | None,
    deliver: Deliver,
    on_start: Callable[[int, int], None] | None,
) -> bool:
    """Over a decision server: each case's metrics run side by side (`judge/rounds.py`), so
    the questions they ask at the same step travel in one request. Cases in the scheduler's
    order; each case's results delivered in its metrics' order once all are judged.
    Metric-major metrics (a G-Eval file alone: its definition before the case) are judged
    first and one pair at a time, as on a local judge: their prompts share a prefix with the
    same metric's next case, not with another metric's on this case, so a request holding a
    case's metrics would read more (measured: 2.4x the tokens on the four SummEval files)."""
    cases: dict[int, tuple[Any, list[int]]] = {}
    for item, index in pair_order(group, metrics):
        if getattr(metrics[index], "metric_major", False):
            if on_start is not None:
                on_start(item.row.position, index)
            result = run_metric(metrics[index], item.row.case, session, include_reason)
            if deliver(item.row.position, index, result):
                return True
            continue
        cases.setdefault(item.row.position, (item.row.case, []))[1].append(index)
    for position, (case, indices) in cases.items():
        if on_start is not None:
            for index in indices:
                on_start(position, index)
        tasks = [partial(run_metric, metrics[i], case, session, include_reason) for i in indices]
        if len(tasks) == 1:  # nothing to ask beside it: no thread
            results: list[Any] = [tasks[0]()]
        else:
            results, rounds = run_together(session, tasks)
            log.debug(
                "case at %d: %d metrics in %d requests (%d questions)",
                position, len(indices), rounds.batches, rounds.questions,
            )  # fmt: skip
        for index, result in zip(indices, results, strict=True):
            if isinstance(result, BaseException):
                raise result
            if deliver(position, index, result):
                return True
    return False

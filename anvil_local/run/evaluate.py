"""evaluate(): cases x metrics on one local model, cached, resumable, on any executor.

A thin composition of the three stages: the plan (`plan.py`: what to judge, minus resumed
and cached pairs, grouped by prompt prefix), an executor (`executors/`: in this process, a
process pool, or Ray actors) and the sinks (`sinks.py`: results file, cache, progress,
JUnit, summary). The CLI, the pytest integration and the benchmarks all call it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from anvil_local.arena import ArenaTestCase
from anvil_local.cache import default_cache
from anvil_local.conversation import ConversationalTestCase
from anvil_local.errors import DataError, WorkerCrash
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.settings import JudgeSettings
from anvil_local.metrics.abstain import Abstention
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.calibration import calibrate
from anvil_local.metrics.result import MetricResult
from anvil_local.models.resolve import resolve_model
from anvil_local.run.dataset import CaseRow, TestCase, rows_from_cases
from anvil_local.run.executors import Executor, make_executor
from anvil_local.run.executors.remote import RemoteExecutor
from anvil_local.run.goldens import EvaluationDataset
from anvil_local.run.meta import run_meta
from anvil_local.run.plan import Plan, Shard, check_inputs, make_plan, shard_rows
from anvil_local.run.records import EvaluationResult, ResultLine
from anvil_local.run.sinks import (
    CacheSink,
    Judged,
    OnLine,
    ProgressSink,
    ResultsFileSink,
    Sink,
)
from anvil_local.testcase import LLMTestCase


def evaluate(
    test_cases: Sequence[TestCase] | Sequence[CaseRow],
    metrics: Sequence[BaseMetric],
    *,
    model: str | Path | ResolvedModel | Any = None,
    settings: JudgeSettings | None = None,
    jobs: int = 1,
    executor: str | Executor | None = None,
    use_cache: bool = True,
    include_reason: bool | None = None,
    fail_fast: bool = False,
    out: str | Path | None = None,
    on_line: OnLine | None = None,
    sinks: Sequence[Sink] = (),
    shard: Shard | str | None = None,
    source: str = "",
    abstain: Abstention | None = None,
) -> EvaluationResult:
    """Judge every case with every metric; returns all results (and writes them to `out`).

    `model` is a catalogue name, a .gguf path, a ResolvedModel, or a loaded judge/session;
    `executor` is "local", "pool" (the default when jobs > 1), "ray", or an executor object
    (`RayExecutor(address=...)`); `sinks` receive every line and the final outcome (JUnit,
    summary, your own); `shard` ("i/n") keeps only that shard's cases; `abstain` marks
    verdicts below its confidence levels uncertain (`anvil_local.metrics.abstain`)."""
    started = time.perf_counter()
    metrics = list(metrics)
    if not metrics:
        raise DataError("no metrics to evaluate")
    if isinstance(shard, str):
        shard = Shard.parse(shard)
    every_row = _as_rows(test_cases)
    rows = shard_rows(every_row, shard)
    check_inputs(rows, metrics, source)
    if abstain is not None and (unknown := abstain.unknown(m.name for m in metrics)):
        raise DataError(f"--abstain-below names no metric of this run: {', '.join(unknown)}")
    if jobs < 1:
        raise DataError(f"jobs must be at least 1, got {jobs}")
    session = model if hasattr(model, "choose") else None  # a judge or session, loaded
    if executor is None or isinstance(executor, str):
        run_executor = make_executor(executor, jobs, session=session)
    else:
        run_executor = executor
    judges, judge_of = _judges_of(session, model, metrics, settings, run_executor.workers)
    if session is None and _on_this_machine(run_executor) and all(j.remote for j in judges):
        # judged on decision servers: threads over them, not worker processes
        lanes = sum(max(jobs, s.concurrency) for j in judges for s in j.remote)
        if lanes > 1:
            run_executor = RemoteExecutor(jobs, lanes)
    by_metric = {m.name: judges[judge_of[i]] for i, m in enumerate(metrics)}

    results_file = None
    if out is not None:
        meta = run_meta(
            by_metric,
            metrics,
            ((row.case_id, row.case.content_key()) for row in every_row),
            count=len(every_row),
            source=source,
            executor=type(run_executor).__name__.removesuffix("Executor").lower(),
            jobs=run_executor.workers,
            shard=f"{shard.index}/{shard.count}" if shard is not None else None,
        )
        results_file = ResultsFileSink(out, meta)
    outcome = EvaluationResult()
    all_sinks: list[Sink] = []
    reported = False  # whether the run got far enough for its sinks to report it
    try:
        wanted = {(r.case_id, m.name) for r in rows for m in metrics}
        resumed = results_file.resume(by_metric, wanted) if results_file is not None else []
        cache = default_cache() if use_cache else None
        plan = make_plan(
            rows,
            metrics,
            judges,
            judge_of=judge_of,
            resumed=resumed,
            cache=cache,
            include_reason=include_reason,
            workers=run_executor.workers,
        )
        outcome.lines.extend(plan.resumed)
        outcome.resumed = len(plan.resumed)
        if results_file is not None:
            all_sinks.append(results_file)
        if cache is not None:
            all_sinks.append(CacheSink(cache, by_metric, include_reason))
        if on_line is not None:
            all_sinks.append(ProgressSink(on_line))
        all_sinks += sinks
        for sink in all_sinks:
            sink.start(plan)
        _run(plan, run_executor, all_sinks, outcome, fail_fast, abstain)
        reported = True
    except KeyboardInterrupt:
        outcome.interrupted = reported = True
    except WorkerCrash as exc:
        exc.outcome = outcome  # what was judged before the crash (written, and kept)
        reported = True
        raise
    finally:
        outcome.wall_seconds = time.perf_counter() - started
        if reported:
            for sink in all_sinks:
                sink.finish(outcome)
        elif results_file is not None:
            results_file.finish(outcome)  # a failed run reports nothing; release the lock
    return outcome


def _run(
    plan: Plan,
    executor: Any,
    sinks: list[Sink],
    outcome: EvaluationResult,
    fail_fast: bool,
    abstain: Abstention | None,
) -> None:
    """Send the cached pairs, then every judged pair, to the outcome and every sink."""
    by_position = {row.position: row for row in plan.rows}

    def emit(row: CaseRow, index: int, result: MetricResult, cached: bool) -> None:
        model = plan.model_for(index)
        result = calibrate(
            plan.metrics[index],
            result,
            model.name,
            model.sha256,
            model.faithful_source(),
            model.format,
        )
        if abstain is not None:
            result = abstain.apply(result)
        line = ResultLine(
            row.position, row.case_id, result, model.name, model.sha256, cached, doc=_doc(row)
        )
        outcome.lines.append(line)
        item = Judged(row, plan.metrics[index], line)
        for sink in sinks:
            sink.accept(item)

    for row, index, result in plan.cached:
        emit(row, index, result, cached=True)

    def deliver(position: int, index: int, result: MetricResult) -> bool:
        emit(by_position[position], index, result, cached=False)
        return fail_fast and result.error is not None

    executor.execute(plan, deliver)


def _doc(row: CaseRow) -> str | None:
    """The case's source document (`doc`), which a comparison resamples by; None if unset."""
    doc = (row.case.metadata or {}).get("doc")
    return None if doc is None or isinstance(doc, dict | list) else str(doc)


def _as_rows(test_cases: Sequence[Any]) -> list[CaseRow]:
    if isinstance(test_cases, EvaluationDataset):
        if not test_cases.test_cases and test_cases.goldens:
            raise DataError(
                "the dataset holds goldens but no test cases: build an LLMTestCase from each "
                "golden (with your app's actual_output) and add_test_case it"
            )
        test_cases = test_cases.test_cases
    if test_cases and all(isinstance(c, CaseRow) for c in test_cases):
        return list(test_cases)
    if isinstance(test_cases, LLMTestCase | ConversationalTestCase | ArenaTestCase):
        test_cases = [test_cases]
    rows = rows_from_cases(test_cases)
    if not rows:
        raise DataError("no test cases to evaluate")
    return rows


def _on_this_machine(executor: Any) -> bool:
    """The executors a run on decision servers replaces with threads over them (the local
    one without a judge of its own, and the process pool); Ray and your own are kept."""
    from anvil_local.run.executors.local import LocalExecutor
    from anvil_local.run.executors.pool import PoolExecutor

    if isinstance(executor, LocalExecutor):
        return executor.session is None
    return isinstance(executor, PoolExecutor)


def _judges_of(
    session: Any,
    model: Any,
    metrics: list[BaseMetric],
    settings: JudgeSettings | None,
    workers: int,
) -> tuple[list[ResolvedModel], list[int]]:
    """Each metric's judge: the loaded judge or the model the run was given, for every
    metric; else the judge each metric names (a catalogue name, a path, a decision server),
    and for a metric that names none the default judge ($ANVIL_JUDGE_URL, $ANVIL_MODEL, else
    this host's tuned default), never another metric's. Returns the distinct judges and
    each metric's index into them, resolved for the executor's workers."""
    if session is not None:
        return [session.model], [0] * len(metrics)
    if model is not None:
        return [resolve_model(model, settings, workers)], [0] * len(metrics)
    judges: list[ResolvedModel] = []
    judge_of: list[int] = []
    resolved: dict[str, ResolvedModel] = {}
    for metric in metrics:
        spec = metric.model
        if hasattr(spec, "choose"):  # a judge object (a remote judge, a loaded judge)
            spec = spec.model
        key = spec if isinstance(spec, ResolvedModel) else str(spec)
        if key not in resolved:
            resolved[key] = resolve_model(spec, settings, workers)
        judge = resolved[key]
        if judge not in judges:
            judges.append(judge)
        judge_of.append(judges.index(judge))
    return judges, judge_of

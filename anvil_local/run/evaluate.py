"""evaluate(): cases x metrics on one local model, cached, resumable, in 1..N processes.

The CLI, the pytest integration and the benchmarks all call this one function.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import queue
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anvil_local.cache import Cache, default_cache, digest
from anvil_local.errors import AnvilError, DataError, WorkerCrash
from anvil_local.judge.judge import Judge, ModelInfo, get_judge
from anvil_local.judge.settings import JudgeSettings, default_threads
from anvil_local.metrics.base import BaseMetric, MetricResult
from anvil_local.run.dataset import CaseRow, rows_from_cases
from anvil_local.run.output import ResultWriter
from anvil_local.run.records import EvaluationResult, ResultLine
from anvil_local.run.schedule import group_by_prefix, split_for_workers
from anvil_local.testcase import LLMTestCase

log = logging.getLogger(__name__)

OnLine = Callable[[ResultLine, int, int], None]  # (line, done, total)


@dataclass(frozen=True)
class Model:
    """The judge model of a run, resolved once (and pulled if needed) in the main process."""

    name: str
    path: str
    sha256: str

    @classmethod
    def resolve(cls, model: str | Path | None) -> Model:
        from anvil_local.catalogue import sha256_file
        from anvil_local.pull import resolve

        name, path, sha = resolve(model)
        return cls(name, str(path), sha or sha256_file(path))


def run_metric(
    metric: BaseMetric, case: LLMTestCase, judge: Any, include_reason: bool | None
) -> MetricResult:
    """One metric on one case; any failure becomes an error result, never a score."""
    start = time.perf_counter()
    try:
        return metric.run(case, judge, include_reason=include_reason)
    except KeyboardInterrupt:
        raise
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


def result_key(
    model_sha: str, metric: BaseMetric, case: LLMTestCase, include_reason: bool | None
) -> str:
    """Cache key: model bytes, the whole canonical metric definition, the case content."""
    reason = metric.include_reason if include_reason is None else include_reason
    return digest("result", model_sha, metric.to_dict(), case.content_key(), reason)


def check_inputs(rows: Sequence[CaseRow], metrics: Sequence[BaseMetric], source: str = "") -> None:
    """Fail before any model work: unique metric names, every field every metric needs."""
    names = [m.name for m in metrics]
    for name in names:
        if names.count(name) > 1:
            raise DataError(f"two metrics are named {name!r}; metric names must be unique")
    for row in rows:
        for metric in metrics:
            for param in metric.required_params():
                value = row.case.get(param)
                if value is None or (isinstance(value, list) and not value):
                    where = f"{source}:{row.line}: " if source else ""
                    raise DataError(
                        f"{where}case {row.case_id!r} has no {param.value!r}, which metric "
                        f"{metric.name!r} needs"
                    )


def evaluate(
    test_cases: Sequence[LLMTestCase] | Sequence[CaseRow],
    metrics: Sequence[BaseMetric],
    *,
    model: str | Path | Judge | Any = None,
    settings: JudgeSettings | None = None,
    jobs: int = 1,
    use_cache: bool = True,
    include_reason: bool | None = None,
    fail_fast: bool = False,
    out: str | Path | None = None,
    on_line: OnLine | None = None,
    source: str = "",
) -> EvaluationResult:
    """Judge every case with every metric; returns all results (and writes them to `out`)."""
    started = time.perf_counter()
    rows = _as_rows(test_cases)
    metrics = list(metrics)
    if not metrics:
        raise DataError("no metrics to evaluate")
    check_inputs(rows, metrics, source)
    if jobs < 1:
        raise DataError("--jobs must be at least 1")
    judge = model if hasattr(model, "choose") else None  # a Judge (or a stand-in in tests)
    resolved = _model_of(judge, model, metrics)
    writer = ResultWriter(out) if out is not None else None
    outcome = EvaluationResult()
    wanted = {(r.case_id, m.name) for r in rows for m in metrics}
    try:
        done = _resume(writer, resolved, outcome, wanted)
    except BaseException:
        if writer is not None:
            writer.close()  # releases the lock
        raise
    cache = default_cache() if use_cache else None

    todo: list[tuple[CaseRow, list[int]]] = []
    total = sum(1 for r in rows for m in metrics if (r.case_id, m.name) not in done)
    counter = [0]

    def emit(row: CaseRow, metric: BaseMetric, result: MetricResult, cached: bool) -> None:
        line = ResultLine(row.position, row.case_id, result, resolved.name, resolved.sha256, cached)
        if writer is not None:
            writer.write(line.to_dict())
        if cache is not None and not cached and result.error is None:
            cache.put_result(
                result_key(resolved.sha256, metric, row.case, include_reason), line.result.to_dict()
            )
        outcome.lines.append(line)
        counter[0] += 1
        if on_line is not None:
            on_line(line, counter[0], total)

    try:
        for row in rows:
            pending = []
            for index, metric in enumerate(metrics):
                if (row.case_id, metric.name) in done:
                    continue
                hit = _cached(cache, resolved, metric, row.case, include_reason)
                if hit is not None:
                    emit(row, metric, hit, cached=True)
                else:
                    pending.append(index)
            if pending:
                todo.append((row, pending))
        if todo:
            groups = split_for_workers(group_by_prefix([row for row, _ in todo]), jobs)
            work = {row.position: idx for row, idx in todo}
            plan = [[(row, work[row.position]) for row in group] for group in groups]
            if jobs == 1 or len(plan) == 1:
                if judge is None:
                    judge = get_judge(Path(resolved.path), settings)
                    judge.info = ModelInfo(resolved.name, resolved.path, resolved.sha256)
                _run_here(plan, metrics, judge, include_reason, fail_fast, emit)
            else:
                _run_workers(
                    plan, metrics, resolved, settings, jobs, include_reason, fail_fast, emit
                )
    except KeyboardInterrupt:
        outcome.interrupted = True
    except WorkerCrash as exc:
        exc.outcome = outcome  # what was judged before the crash (written, and kept)
        raise
    finally:
        if writer is not None:
            writer.close()
        outcome.wall_seconds = time.perf_counter() - started
    return outcome


def _as_rows(test_cases: Sequence[Any]) -> list[CaseRow]:
    if test_cases and all(isinstance(c, CaseRow) for c in test_cases):
        return list(test_cases)
    if isinstance(test_cases, LLMTestCase):
        test_cases = [test_cases]
    rows = rows_from_cases(test_cases)
    if not rows:
        raise DataError("no test cases to evaluate")
    return rows


def _model_of(judge: Judge | None, model: Any, metrics: list[BaseMetric]) -> Model:
    if judge is not None:
        return Model(judge.info.name, judge.info.path, judge.model_sha256)
    if model is None:
        named = {str(m.model) for m in metrics if m.model is not None}
        if len(named) > 1:
            raise DataError(
                f"the metrics name different models ({', '.join(sorted(named))}); "
                "evaluate them separately or pass model="
            )
        model = next(iter(named), None)
    return Model.resolve(model)


def _resume(
    writer: ResultWriter | None,
    model: Model,
    outcome: EvaluationResult,
    wanted: set[tuple[str, str]],
) -> set:
    """Pairs already in the results file (and still asked for) are read back, not re-run.
    Pairs whose line is an error are run again: their old line is dropped first, so the file
    keeps one line per pair."""
    if writer is None:
        return set()
    writer.lock()
    done = set()
    retry = set()
    for item in writer.existing():
        if item.get("model_sha256") not in (None, model.sha256):
            raise DataError(
                f"{writer.path} holds results of another model ({item.get('model')}); "
                "use another --out or remove the file"
            )
        line = ResultLine.from_dict(item)
        pair = (line.case_id, line.metric)
        if pair not in wanted:
            continue
        if item.get("error") is not None:
            retry.add(pair)
            continue
        line.resumed = True
        done.add(pair)
        outcome.lines.append(line)
        outcome.resumed += 1
    writer.drop(retry - done)
    return done


def _cached(
    cache: Cache | None,
    model: Model,
    metric: BaseMetric,
    case: LLMTestCase,
    include_reason: bool | None,
) -> MetricResult | None:
    if cache is None:
        return None
    hit = cache.get_result(result_key(model.sha256, metric, case, include_reason))
    if hit is None:
        return None
    line = ResultLine.from_dict({"position": 0, "case_id": "", **hit})
    return line.result


Plan = list[list[tuple[CaseRow, list[int]]]]


def _run_here(
    plan: Plan,
    metrics: list[BaseMetric],
    judge: Judge,
    include_reason: bool | None,
    fail_fast: bool,
    emit: Any,
) -> None:
    for group in plan:
        for row, indices in group:
            for index in indices:
                result = run_metric(metrics[index], row.case, judge, include_reason)
                emit(row, metrics[index], result, False)
                if fail_fast and result.error is not None:
                    return


def _worker(
    number: int,
    model: Model,
    settings: JudgeSettings,
    metric_dicts: list[dict[str, Any]],
    include_reason: bool | None,
    tasks: Any,
    results: Any,
) -> None:
    """A worker process: load the model once, then judge whole prefix groups."""
    from anvil_local.spec.files import metric_from_dict

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle

    try:
        judge = Judge.load(model.path, settings)
        judge.info = ModelInfo(model.name, model.path, model.sha256)
        metrics = [metric_from_dict(d) for d in metric_dicts]
    except Exception as exc:
        results.put(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        task = tasks.get()
        if task is None:
            results.put(("exit", number))
            return
        for position, case_dict, indices in task:
            case = LLMTestCase(**case_dict)
            for index in indices:
                results.put(("start", (number, position, index)))
                result = run_metric(metrics[index], case, judge, include_reason)
                results.put(("result", (number, position, index, result)))


class _Workers:
    """The worker processes of one run and what each is doing, to name a crash precisely."""

    def __init__(self, processes: list[Any]) -> None:
        self.processes = processes
        self.exited: set[int] = set()
        self.current: dict[int, tuple[int, int]] = {}

    def crashed(self) -> tuple[int, Any] | None:
        """The first worker that stopped without saying goodbye, if any."""
        for number, process in enumerate(self.processes):
            if number not in self.exited and process.exitcode is not None:
                return number, process
        return None


def _crash_message(
    number: int, process: Any, doing: tuple[int, int] | None, by_position, metrics
) -> str:
    from anvil_local.judge.native import describe_signal

    code = process.exitcode
    how = f"crashed with {describe_signal(-code)}" if code < 0 else f"exited with status {code}"
    where = ""
    if doing is not None:
        row = by_position[doing[0]]
        where = f" while judging case {row.case_id!r} with metric {metrics[doing[1]].name!r}"
    return (
        f"worker {number + 1} (pid {process.pid}) {how}{where}; the results written so far are "
        "kept and a re-run resumes after them; `anvil doctor` checks the native library"
    )


def _crash_result(metric: BaseMetric, message: str) -> MetricResult:
    error = message.split(";", 1)[0]
    return MetricResult(metric.name, None, None, metric.threshold, error=error)


def _run_workers(
    plan: Plan,
    metrics: list[BaseMetric],
    model: Model,
    settings: JudgeSettings | None,
    jobs: int,
    include_reason: bool | None,
    fail_fast: bool,
    emit: Any,
) -> None:
    from anvil_local.judge.native import ensure_native_ok

    base = settings or JudgeSettings()
    if base.threads is None:
        base = JudgeSettings(**{**base.to_dict(), "threads": max(1, default_threads() // jobs)})
    try:
        metric_dicts = [m.to_dict() for m in metrics]
    except (AttributeError, NotImplementedError) as exc:
        raise DataError("--jobs > 1 needs metrics that serialise (GEval, DAGMetric)") from exc
    # once here, so that workers find the verdict cached instead of each running the check
    ensure_native_ok(Path(model.path), base.resolved_threads(), base.n_gpu_layers)
    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    by_position = {row.position: row for group in plan for row, _ in group}
    for group in plan:
        tasks.put([(row.position, row.case.to_dict(), indices) for row, indices in group])
    count = min(jobs, len(plan))
    workers = _Workers(
        [
            ctx.Process(
                target=_worker,
                daemon=True,
                args=(n, model, base, metric_dicts, include_reason, tasks, results),
            )
            for n in range(count)
        ]
    )
    for _ in range(count):
        tasks.put(None)
    for process in workers.processes:
        process.start()

    def handle(kind: str, payload: Any) -> bool:
        """Apply one message; True when the run must stop (fail-fast)."""
        if kind == "fatal":
            raise AnvilError(f"a worker could not start: {payload}")
        if kind == "exit":
            workers.exited.add(payload)
            workers.current.pop(payload, None)
        elif kind == "start":
            number, position, index = payload
            workers.current[number] = (position, index)
        else:
            number, position, index, result = payload
            workers.current.pop(number, None)
            emit(by_position[position], metrics[index], result, False)
            return fail_fast and result.error is not None
        return False

    try:
        while len(workers.exited) < count:
            try:
                kind, payload = results.get(timeout=0.5)
            except queue.Empty:
                kind = None
            if kind is not None and handle(kind, payload):
                return
            crash = workers.crashed()
            if crash is None:
                continue
            # keep every result that reached the queue before reporting the crash
            while True:
                try:
                    kind, payload = results.get(timeout=0.2)
                except queue.Empty:
                    break
                if handle(kind, payload):
                    return
            if crash[0] in workers.exited:
                continue  # its goodbye was still in the queue: a normal exit
            number, process = crash
            doing = workers.current.get(number)
            message = _crash_message(number, process, doing, by_position, metrics)
            if doing is not None:  # the pair it was judging is recorded as an error
                metric = metrics[doing[1]]
                emit(by_position[doing[0]], metric, _crash_result(metric, message), False)
            raise WorkerCrash(message)
    finally:
        for process in workers.processes:
            if process.is_alive():
                process.terminate()
        for process in workers.processes:
            process.join(timeout=5)

"""The process-pool executor: N worker processes, each loading the model once.

Workers take whole prefix groups from a queue and send back a message per pair ("start",
then "result"), so when a worker dies the pair it was judging is named, recorded as an error
line, and the run stops with WorkerCrash after keeping every result that reached the queue.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

from anvil_local.errors import AnvilError, ModelLoadError, NativeCrash, WorkerCrash
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.settings import default_threads
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.result import MetricResult
from anvil_local.registry import metric_from_wire, metric_to_wire
from anvil_local.run.dataset import CaseRow
from anvil_local.run.executors.base import Deliver, judge_group
from anvil_local.run.plan import Plan, WorkGroup, WorkItem
from anvil_local.testcase import LLMTestCase


def per_worker(model: ResolvedModel, workers: int) -> ResolvedModel:
    """The model with the cores split over the workers (unless threads were set)."""
    if model.settings.threads is not None:
        return model
    threads = max(1, default_threads() // workers)
    return model.with_settings(replace(model.settings, threads=threads))


def group_to_wire(group: WorkGroup) -> list[tuple[int, int, dict[str, Any], tuple[int, ...]]]:
    return [(i.row.position, i.row.line, i.row.case.to_dict(), i.metrics) for i in group]


def group_from_wire(wire: list[tuple[int, int, dict[str, Any], tuple[int, ...]]]) -> WorkGroup:
    return [
        WorkItem(CaseRow(position, line, LLMTestCase(**case)), metrics)
        for position, line, case, metrics in wire
    ]


def _worker(
    number: int,
    model: ResolvedModel,
    metric_wires: list[dict[str, Any]],
    include_reason: bool | None,
    tasks: Any,
    results: Any,
) -> None:
    """A worker process: load the model once, then judge whole prefix groups."""
    from anvil_local.judge.session import open_session

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the main process's to handle
    try:
        session = open_session(model)
        metrics = [metric_from_wire(w) for w in metric_wires]
    except Exception as exc:
        results.put(("fatal", f"{type(exc).__name__}: {exc}"))
        return

    def deliver(position: int, index: int, result: MetricResult) -> bool:
        results.put(("result", (number, position, index, result)))
        return False

    def on_start(position: int, index: int) -> None:
        results.put(("start", (number, position, index)))

    while True:
        task = tasks.get()
        if task is None:
            results.put(("exit", number))
            return
        try:
            judge_group(group_from_wire(task), metrics, session, include_reason, deliver, on_start)
        except (ModelLoadError, NativeCrash) as exc:  # the model loads on first use
            results.put(("fatal", str(exc)))
            return


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


def crash_message(
    number: int,
    process: Any,
    doing: tuple[int, int] | None,
    by_position: dict[int, CaseRow],
    metrics: list[BaseMetric],
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


def crash_result(metric: BaseMetric, message: str) -> MetricResult:
    error = message.split(";", 1)[0]
    return MetricResult(metric.name, None, None, metric.threshold, error=error)


class PoolExecutor:
    def __init__(self, jobs: int) -> None:
        self.jobs = self.workers = jobs

    def execute(self, plan: Plan, deliver: Deliver) -> None:
        if len(plan.groups) <= 1:  # one group cannot be shared: no process to start
            from anvil_local.run.executors.local import LocalExecutor

            LocalExecutor().execute(plan, deliver)
            return
        from anvil_local.judge.native import ensure_native_ok

        model = per_worker(plan.model, self.jobs)
        wires = [metric_to_wire(m) for m in plan.metrics]
        settings = model.settings
        # once here, so that workers find the verdict cached instead of each running the check
        ensure_native_ok(Path(model.path), settings.resolved_threads(), settings.n_gpu_layers)
        ctx = mp.get_context("spawn")
        tasks, results = ctx.Queue(), ctx.Queue()
        by_position = {item.row.position: item.row for group in plan.groups for item in group}
        for group in plan.groups:
            tasks.put(group_to_wire(group))
        count = min(self.jobs, len(plan.groups))
        workers = _Workers(
            [
                ctx.Process(
                    target=_worker,
                    daemon=True,
                    args=(n, model, wires, plan.include_reason, tasks, results),
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
                return deliver(position, index, result)
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
                message = crash_message(number, process, doing, by_position, plan.metrics)
                if doing is not None:  # the pair it was judging is recorded as an error
                    deliver(doing[0], doing[1], crash_result(plan.metrics[doing[1]], message))
                raise WorkerCrash(message)
        finally:
            for process in workers.processes:
                if process.is_alive():
                    process.terminate()
            for process in workers.processes:
                process.join(timeout=5)

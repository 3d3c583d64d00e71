"""The process-pool executor: N worker processes, each loading the model once.

Workers take whole prefix groups from a queue ("take") and send back a message per pair
("start", then "result"), so when a worker dies the pair it was judging is named and recorded
as an error line, and the rest of its group is handed, once, to a fresh worker.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from anvil_local import signals
from anvil_local.errors import (
    AnvilError,
    ModelError,
    ModelLoadError,
    NativeCrash,
    RemoteJudgeError,
    WorkerCrash,
)
from anvil_local.judge.model import ResolvedModel
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.definitions import metric_from_wire, metric_to_wire
from anvil_local.metrics.result import MetricResult
from anvil_local.run.dataset import CaseRow, case_from_dict
from anvil_local.run.executors.base import Deliver, judge_group
from anvil_local.run.plan import Plan, WorkGroup, WorkItem

log = logging.getLogger(__name__)


def group_to_wire(group: WorkGroup) -> list[tuple[int, int, dict[str, Any], tuple[int, ...]]]:
    return [(i.row.position, i.row.line, i.row.case.to_dict(), i.metrics) for i in group]


def group_from_wire(wire: list[tuple[int, int, dict[str, Any], tuple[int, ...]]]) -> WorkGroup:
    return [
        WorkItem(CaseRow(position, line, case_from_dict(case)), metrics)
        for position, line, case, metrics in wire
    ]


def _worker(
    number: int,
    judges: list[ResolvedModel],
    metric_wires: list[dict[str, Any]],
    include_reason: bool | None,
    tasks: Any,
    results: Any,
    stop: Any,
) -> None:
    """A worker process: open each judge once, on its first group, then judge whole prefix
    groups, until the queue ends or the main process says stop (after the pair in hand)."""
    from anvil_local.models.sessions import open_session

    die_with_parent()
    # Ctrl-C and SIGTERM are the main process's to handle: it stops the run gracefully
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        metrics = [metric_from_wire(w) for w in metric_wires]
    except Exception as exc:
        results.put(("fatal", f"{type(exc).__name__}: {exc}"))
        return
    sessions: dict[int, Any] = {}

    def deliver(position: int, index: int, result: MetricResult) -> bool:
        results.put(("result", (number, position, index, result)))
        return False

    def on_start(position: int, index: int) -> None:
        if stop.is_set():
            raise _Stopped
        results.put(("start", (number, position, index)))

    while True:
        task = tasks.get()
        if task is None or stop.is_set():
            results.put(("exit", number))
            return
        task_id, judge, wire = task
        results.put(("take", (number, task_id)))
        try:
            session = sessions.get(judge)
            if session is None:
                session = sessions[judge] = open_session(judges[judge])
            judge_group(group_from_wire(wire), metrics, session, include_reason, deliver, on_start)
        except _Stopped:
            results.put(("exit", number))
            return
        except (ModelLoadError, NativeCrash, RemoteJudgeError) as exc:  # loaded on first use
            results.put(("fatal", str(exc)))
            return


class _Stopped(Exception):
    """The main process asked the workers to stop (the run was interrupted)."""


def die_with_parent() -> None:
    """A worker ends with the process that started it, whatever killed that one: the
    kernel's parent-death signal (Linux), and a thread watching the parent's sentinel (the
    pipe to it closes when it dies) as a second guard, and for other platforms."""
    parent = mp.parent_process()
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is None:
        return
    if os.getppid() != parent.pid:  # it died before the signal was asked for
        os._exit(1)

    def watch() -> None:
        from multiprocessing.connection import wait

        wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
#: Seconds an interrupted run waits for the pairs being judged before ending the workers.
GRACE = 10.0


class _Workers:
    """The worker processes of one run and what each is doing, to name a crash precisely
    and to hand a dead worker's unfinished pairs to a fresh one."""

    def __init__(self, start: Any) -> None:
        self.start = start  # number -> a started process
        self.processes: list[Any] = []
        self.exited: set[int] = set()  # said goodbye, or crashed and dealt with
        self.current: dict[int, tuple[int, int]] = {}  # number -> (position, metric) judging
        self.holding: dict[int, int] = {}  # number -> id of the task it took

    def add(self) -> None:
        self.processes.append(self.start(len(self.processes)))

    def crashed(self) -> tuple[int, Any] | None:
        """The first worker that stopped without saying goodbye, if any."""
        for number, process in enumerate(self.processes):
            if number not in self.exited and process.exitcode is not None:
                return number, process
        return None

    def alive(self) -> list[int]:
        return [n for n in range(len(self.processes)) if n not in self.exited]


#: What a signal that killed a worker most likely means.
_CAUSES = {
    signal.SIGKILL: "killed: out of memory (the kernel's OOM killer) or kill -9",
    signal.SIGILL: "a CPU instruction this machine cannot run; `anvil doctor` checks the "
    "native library",
    signal.SIGSEGV: "a crash in native code",
    signal.SIGBUS: "a crash in native code (or a model file changed while mapped)",
    signal.SIGTERM: "stopped from outside",
}


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
    cause = _CAUSES.get(-code) if code < 0 else None  # type: ignore[call-overload]
    where = ""
    if doing is not None:
        row = by_position[doing[0]]
        where = f" while judging case {row.case_id!r} with metric {metrics[doing[1]].name!r}"
    because = f" ({cause})" if cause else ""
    return f"worker {number + 1} (pid {process.pid}) {how}{where}{because}"


def crash_result(metric: BaseMetric, message: str) -> MetricResult:
    return MetricResult(metric.name, None, None, metric.threshold, error=message)


def memory_fit(judges: list[ResolvedModel]) -> tuple[int | None, int, int]:
    """How many worker processes fit in this machine's available memory (None: unknown),
    what one needs (each worker may open every judge of the run), and what is available."""
    from anvil_local.judge.memory import available_bytes, worker_bytes

    try:
        need = sum(worker_bytes(j) for j in judges)
    except Exception as exc:  # an estimate that cannot be made clamps nothing
        log.debug("no memory estimate: %s", exc)
        return None, 0, 0
    available = available_bytes()
    return (None if available is None else available // need), need, available or 0


def jobs_note(
    jobs: int,
    groups: int,
    cores: int,
    threads: int,
    fit: int | None = None,
    need: int = 0,
    available: int = 0,
) -> str:
    """What `--jobs N` really uses when N is more than can run ("" when it is not): one
    worker per prompt-prefix group at most (a group is judged by one worker, in order, so
    its prefix stays warm), no more than fit in the available memory (`fit` workers of
    `need` bytes), `threads` each, and workers beyond the cores share them."""
    if fit is not None and fit < jobs and fit < groups:
        each = f"{threads} thread{'s' if threads != 1 else ''}"
        return (
            f"--jobs {jobs}: starting {fit} worker process{'es' if fit != 1 else ''} with "
            f"{each} each, not {jobs}: "
            f"each needs about {need >> 20} MB (its model and context) and this machine has "
            f"{available >> 20} MB available"
        )
    used = min(jobs, groups)
    each = f"{threads} thread{'s' if threads != 1 else ''}"
    if used <= 1 and jobs > 1:
        what = "one prompt-prefix group" if groups == 1 else "nothing to judge"
        return (
            f"--jobs {jobs}: judging in this process with {each}: the run has {what}, "
            "and a group is judged by one worker"
        )
    notes = []
    if used < jobs:
        notes.append(
            f"starting {used} worker processes with {each} each, not {jobs}: the run has "
            f"{groups} prompt-prefix groups, and a group is judged by one worker"
        )
    if used * threads > cores:
        notes.append(f"{used} workers with {each} each share {cores} cores")
    return f"--jobs {jobs}: " + "; ".join(notes) if notes else ""


class PoolExecutor:
    """Worker processes over a shared queue of prefix groups. A worker that dies is named with
    its signal and likely cause; the pair it was judging becomes an error line and the rest
    of its group goes, once, to a fresh worker. A group that kills its second worker too ends
    the run (WorkerCrash), keeping everything judged so far. A run with a crash raises
    WorkerCrash at its end even when every other pair was judged."""

    def __init__(self, jobs: int) -> None:
        self.jobs = self.workers = jobs

    def execute(self, plan: Plan, deliver: Deliver) -> None:
        from anvil_local.judge.settings import default_threads

        threads = max(j.settings.thread_count() for j in plan.judges)
        fit, need, available = (None, 0, 0)
        if len(plan.groups) > 1:
            from anvil_local.judge.native import ensure_native_ok

            for model in plan.judges:  # a build that cannot run here fails in a child first
                if not model.remote:
                    settings = model.settings
                    ensure_native_ok(
                        Path(model.path), settings.thread_count(), settings.n_gpu_layers
                    )
            fit, need, available = memory_fit(plan.judges)
        if fit is not None and fit < 1:
            raise ModelError(
                f"--jobs {self.jobs}: not even one worker fits: each needs about {need >> 20} "
                f"MB (its model and a {plan.model.settings.n_ctx}-token context) and this "
                f"machine has {available >> 20} MB available; free memory, or lower --n-ctx"
            )
        note = jobs_note(
            self.jobs, len(plan.groups), default_threads(), threads, fit, need, available
        )
        if note:
            log.warning("%s", note)
        jobs = min(self.jobs, fit) if fit is not None else self.jobs
        if len(plan.groups) <= 1:  # one group cannot be shared: no process to start
            from anvil_local.run.executors.local import LocalExecutor

            LocalExecutor().execute(plan, deliver)
            return
        judges = plan.judges  # resolved for this many workers (`resolve_model`)
        wires = [metric_to_wire(m) for m in plan.metrics]
        ctx = mp.get_context("spawn")
        tasks, results = ctx.Queue(), ctx.Queue()
        stop = ctx.Event()  # set when the run is interrupted: workers stop after their pair
        by_position = {item.row.position: item.row for group in plan.groups for item in group}
        groups = dict(enumerate(plan.groups))  # task id -> the pairs it holds
        judge_of_task = dict(enumerate(plan.group_judge))  # task id -> its judge
        for task_id, group in groups.items():
            tasks.put((task_id, judge_of_task[task_id], group_to_wire(group)))
        pending = {(i.row.position, m) for group in plan.groups for i in group for m in i.metrics}
        retried: set[int] = set()  # task ids that are already a second attempt
        taken: set[int] = set()  # task ids some worker said it took
        unplaced = 0  # workers that died holding no task we knew of
        crashes: list[str] = []

        def start(number: int) -> Any:
            process = ctx.Process(
                target=_worker,
                daemon=True,
                args=(number, judges, wires, plan.include_reason, tasks, results, stop),
            )
            process.start()
            return process

        workers = _Workers(start)
        for _ in range(min(jobs, len(plan.groups))):
            workers.add()

        def handle(kind: str, payload: Any) -> bool:
            """Apply one message; True when the run must stop (fail-fast)."""
            if kind == "fatal":
                raise AnvilError(f"a worker could not start: {payload}")
            if kind == "exit":
                workers.exited.add(payload)
                workers.current.pop(payload, None)
            elif kind == "take":
                number, task_id = payload
                workers.holding[number] = task_id
                taken.add(task_id)
            elif kind == "start":
                number, position, index = payload
                workers.current[number] = (position, index)
            else:
                number, position, index, result = payload
                workers.current.pop(number, None)
                if (position, index) not in pending:
                    return False  # a second copy of a task handed out again: already in
                pending.discard((position, index))
                return deliver(position, index, result)
            return False

        def drain() -> bool:
            """Apply every message already queued (results sent before a crash)."""
            while True:
                try:
                    kind, payload = results.get(timeout=0.2)
                except queue.Empty:
                    return False
                if handle(kind, payload):
                    return True

        def recover(number: int, process: Any) -> bool:
            """Deal with a dead worker; True when the run must stop (fail-fast)."""
            nonlocal unplaced
            workers.exited.add(number)
            doing = workers.current.pop(number, None)
            message = crash_message(number, process, doing, by_position, plan.metrics)
            task_id = workers.holding.pop(number, None)
            if doing is not None:  # the pair it was judging is recorded as an error
                pending.discard(doing)
                if deliver(doing[0], doing[1], crash_result(plan.metrics[doing[1]], message)):
                    return True
            rest = _unfinished(groups.get(task_id, []), pending) if task_id is not None else []
            if task_id is None:
                unplaced += 1
                if unplaced > 1:  # a second worker died before judging: not one case's doing
                    crashes.append(message)
                    raise WorkerCrash(_crash_summary(crashes, stopped=True))
            if task_id in retried:
                crashes.append(message)
                raise WorkerCrash(_crash_summary(crashes, stopped=True))
            crashes.append(message)
            if rest:
                retry_id = len(groups)
                groups[retry_id] = rest
                judge_of_task[retry_id] = judge_of_task[task_id]
                retried.add(retry_id)
                tasks.put((retry_id, judge_of_task[retry_id], group_to_wire(rest)))
            elif task_id is None:
                # it died between taking a task and saying so: hand out again every task no
                # worker has reported (a copy still queued is judged twice, kept once)
                for lost_id, group in list(groups.items()):
                    lost = _unfinished(group, pending) if lost_id not in taken else []
                    if lost:
                        tasks.put((lost_id, judge_of_task[lost_id], group_to_wire(lost)))
            if rest or (pending and not workers.alive()) or task_id is None:
                workers.add()
            return False

        def wind_down() -> None:
            """Interrupted: no more work is handed out; the pairs being judged may finish
            (and are delivered, so they are written) for up to GRACE seconds, then the
            workers are ended. A second signal ends them at once."""
            stop.set()
            for _ in workers.alive():
                tasks.put(None)  # wakes a worker waiting on an empty queue
            deadline = time.monotonic() + GRACE
            try:
                while workers.alive() and time.monotonic() < deadline and not signals.forced():
                    try:
                        kind, payload = results.get(timeout=0.2)
                    except queue.Empty:
                        for number, process in enumerate(workers.processes):
                            if process.exitcode is not None:
                                workers.exited.add(number)
                        continue
                    if kind in ("result", "exit"):
                        handle(kind, payload)
            except KeyboardInterrupt:
                pass  # the second Ctrl-C or SIGTERM: stop waiting

        try:
            try:
                while pending:
                    try:
                        kind, payload = results.get(timeout=0.5)
                    except queue.Empty:
                        kind = None
                    if kind is not None and handle(kind, payload):
                        return
                    crash = workers.crashed()
                    if crash is None:
                        continue
                    if drain():  # keep every result that reached the queue first
                        return
                    if crash[0] in workers.exited:
                        continue  # its goodbye was still in the queue: a normal exit
                    if recover(*crash):
                        return
            except KeyboardInterrupt:
                wind_down()
                raise
            for _ in workers.alive():
                tasks.put(None)  # every pair is judged: let the workers say goodbye
            for process in workers.processes:
                process.join(timeout=5)
            if crashes:
                raise WorkerCrash(_crash_summary(crashes, stopped=False))
        finally:
            # tasks still queued for workers that are gone (a stop, fail-fast, a crash) must
            # not hold this process's exit: multiprocessing would wait to flush them
            tasks.cancel_join_thread()
            results.cancel_join_thread()
            for process in workers.processes:
                if process.is_alive():
                    process.kill()  # they ignore SIGTERM (it is the main process's)
            for process in workers.processes:
                process.join(timeout=5)


def _unfinished(group: WorkGroup, pending: set[tuple[int, int]]) -> WorkGroup:
    """The group's pairs not yet judged, as a group."""
    rest = []
    for item in group:
        metrics = tuple(m for m in item.metrics if (item.row.position, m) in pending)
        if metrics:
            rest.append(WorkItem(item.row, metrics))
    return rest


def _crash_summary(crashes: list[str], stopped: bool) -> str:
    what = crashes[-1] if len(crashes) == 1 else f"{crashes[-1]} ({len(crashes)} crashes)"
    if stopped:
        return (
            f"{what}; it crashed a fresh worker too, so the run stopped. The results written "
            "so far are kept and a re-run resumes after them"
        )
    return (
        f"{what}; its other pairs were judged by a fresh worker, and the pair it was judging "
        "is an error line that a re-run tries again"
    )

"""The Ray executor: one actor per model replica, on a local Ray or a cluster.

Each actor loads the model once and judges whole prefix groups (a group never leaves its
actor, so its shared prefix is prefilled once); results come back group by group into the
same runner, so the results file, resume and cache behave exactly as with the other
executors. On a cluster (`--ray-address`) the model file must be at the same path on every
node (a shared volume, or `anvil models pull` on each), and a metric kind registered in
your own code must be importable there.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from pathlib import Path
from typing import Any

from anvil_local import signals
from anvil_local.errors import AnvilError, MissingExtra, WorkerCrash
from anvil_local.judge.model import ResolvedModel
from anvil_local.metrics.definitions import metric_from_wire, metric_to_wire
from anvil_local.metrics.result import MetricResult
from anvil_local.run.executors.base import Deliver, judge_group
from anvil_local.run.executors.pool import group_from_wire, group_to_wire
from anvil_local.run.plan import Plan

log = logging.getLogger(__name__)


class JudgeActor:
    """Holds the run's judges (each opened on its first group); judges one group per call."""

    def __init__(
        self,
        judges: list[ResolvedModel],
        metric_wires: list[dict[str, Any]],
        include_reason: Any,
        run_pid: int | None = None,
    ) -> None:
        if run_pid is not None:  # a local Ray: this actor ends with the run, however it ends
            from anvil_local.run.executors.reaper import exit_with

            exit_with(run_pid)
        self.judges = judges
        self.sessions: dict[int, Any] = {}
        self.metrics = [metric_from_wire(w) for w in metric_wires]
        self.include_reason = include_reason

    def judge(self, judge: int, wire: list[Any]) -> list[tuple[int, int, MetricResult]]:
        from anvil_local.models.sessions import open_session

        out: list[tuple[int, int, MetricResult]] = []

        def collect(position: int, index: int, result: MetricResult) -> bool:
            out.append((position, index, result))
            return False

        session = self.sessions.get(judge)
        if session is None:
            session = self.sessions[judge] = open_session(self.judges[judge])
        judge_group(group_from_wire(wire), self.metrics, session, self.include_reason, collect)
        return out


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise MissingExtra("the Ray executor needs Ray: pip install 'anvil-local[ray]'") from exc
    return ray


def _local_runtime_env() -> dict[str, Any]:
    """A local Ray's workers see this process's import path and anvil settings."""
    env = {k: v for k, v in os.environ.items() if k.startswith("ANVIL_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return {"env_vars": env}


class RayExecutor:
    def __init__(
        self, replicas: int = 1, address: str | None = None, cpus: int | None = None
    ) -> None:
        """`replicas` actors (one model each) on the Ray at `address`, or on a local Ray
        started for the run with `cpus` CPUs (default: all of this machine's)."""
        self.replicas = self.workers = replicas
        self.address = address
        self.cpus = cpus

    def execute(self, plan: Plan, deliver: Deliver) -> None:
        if not plan.groups:
            return
        ray = _import_ray()
        started_here = not ray.is_initialized()
        count = min(self.replicas, len(plan.groups))
        if started_here and self.address is None:
            from anvil_local.judge.native import ensure_native_ok

            for model in plan.judges:
                if not model.remote:
                    settings = model.settings
                    ensure_native_ok(
                        Path(model.path), settings.thread_count(), settings.n_gpu_layers
                    )
        # a local Ray's agents outlive a killed run: a watch ends them (reaper.py)
        reaper = None
        if started_here and self.address is None:
            from anvil_local.run.executors.reaper import Reaper

            reaper = Reaper()
        try:
            if started_here and self.address is None:
                ray.init(
                    num_cpus=self.cpus or max(count, os.cpu_count() or 1),
                    include_dashboard=False,
                    log_to_driver=False,
                    runtime_env=_local_runtime_env(),
                )
            elif started_here:
                ray.init(address=self.address, log_to_driver=False)
            signals.restore()  # Ray's core worker took SIGTERM: stop cleanly, exit 143
            self._run(ray, plan, count, deliver, os.getpid() if reaper is not None else None)
        finally:
            if started_here:
                ray.shutdown()
            if reaper is not None:
                reaper.close()

    def _run(self, ray: Any, plan: Plan, count: int, deliver: Deliver, run_pid: int | None):
        wires = [metric_to_wire(m) for m in plan.metrics]
        remote = ray.remote(num_cpus=1, max_restarts=0)(JudgeActor)
        actors = [
            remote.remote(plan.judges, wires, plan.include_reason, run_pid) for _ in range(count)
        ]
        waiting = deque(
            (judge, group_to_wire(g))
            for g, judge in zip(plan.groups, plan.group_judge, strict=True)
        )
        running: dict[Any, tuple[int, list[Any]]] = {}
        try:
            for number, actor in enumerate(actors):
                if waiting:
                    judge, group = waiting.popleft()
                    running[actor.judge.remote(judge, group)] = (number, group)
            while running:
                ready, _ = ray.wait(list(running), num_returns=1)
                number, group = running.pop(ready[0])
                try:
                    results = ray.get(ready[0])
                except ray.exceptions.RayActorError as exc:
                    raise WorkerCrash(self._crash(number, group, plan, exc)) from exc
                except ray.exceptions.RayTaskError as exc:
                    cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                    if isinstance(cause, AnvilError):
                        raise cause from None  # e.g. the model cannot load: one line, exit 2
                    raise WorkerCrash(
                        f"Ray actor {number + 1} failed: {type(cause).__name__}: {cause}"
                    ) from exc
                for position, index, result in results:
                    if deliver(position, index, result):
                        return
                if waiting:
                    judge, group = waiting.popleft()
                    running[actors[number].judge.remote(judge, group)] = (number, group)
        finally:
            for actor in actors:
                ray.kill(actor)

    @staticmethod
    def _crash(number: int, group: list[Any], plan: Plan, exc: Exception) -> str:
        first = group[0]
        row = next(r for r in plan.rows if r.position == first[0])
        return (
            f"Ray actor {number + 1} died while judging the group starting at case "
            f"{row.case_id!r} ({exc.__class__.__name__}); the results written so far are kept "
            "and a re-run resumes after them"
        )

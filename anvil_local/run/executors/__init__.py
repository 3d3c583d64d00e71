"""Stage 2, the executors: where the plan's groups are judged.

- `local`: in this process (the default with one job).
- `pool`: worker processes on this machine, each loading the model once (`--jobs N`).
- `ray`: one Ray actor per model replica, on a local Ray or a cluster (`--executor ray`,
  the `[ray]` extra).
All deliver results the same way, so the sinks (and the results file) do not change.
"""

from __future__ import annotations

from typing import Any

from anvil_local.errors import DataError
from anvil_local.run.executors.base import Deliver, Executor, judge_group, run_metric

EXECUTORS = ("local", "pool", "ray")

__all__ = ["EXECUTORS", "Deliver", "Executor", "judge_group", "make_executor", "run_metric"]


def make_executor(
    name: str | None, jobs: int = 1, session: Any = None, ray_address: str | None = None
) -> Executor:
    """The executor by name; None picks local for one job, the pool for more."""
    if name is None:
        name = "local" if jobs == 1 else "pool"
    if name == "local":
        from anvil_local.run.executors.local import LocalExecutor

        return LocalExecutor(session)
    if name == "pool":
        from anvil_local.run.executors.pool import PoolExecutor

        return PoolExecutor(jobs)
    if name == "ray":
        from anvil_local.run.executors.ray import RayExecutor

        return RayExecutor(replicas=jobs, address=ray_address)
    raise DataError(f"unknown executor {name!r} (expected one of: {', '.join(EXECUTORS)})")

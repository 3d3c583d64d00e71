"""The remote executor: threads over decision servers, for a plan judged on servers only.

Each server of each judge gets `concurrency` threads (a catalogue entry's, or --jobs). The
threads take whole prefix groups from one queue, so a fast server takes more (work stealing)
and a group's shared prefix stays on one server's KV cache. A server that stops answering
(`JudgeUnavailable`: its retries spent) is dropped: the pairs of its group that were not
delivered go back to the queue for the others, and nothing delivered is judged again. When
every server of a judge is gone, the run stops with that line; the results file keeps what
was judged, and a re-run resumes after it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any

from anvil_local.cache import default_cache
from anvil_local.errors import AnvilError, JudgeUnavailable
from anvil_local.judge.remote import RemoteJudge
from anvil_local.judge.session import JudgeSession
from anvil_local.metrics.definitions import metric_from_wire, metric_to_wire
from anvil_local.metrics.result import MetricResult
from anvil_local.run.executors.base import Deliver, judge_group
from anvil_local.run.plan import Plan, WorkGroup, WorkItem

log = logging.getLogger(__name__)


def remote_lanes(plan: Plan, jobs: int = 1) -> list[tuple[int, int]]:
    """(judge index, server index) for every thread the plan's servers get."""
    lanes = []
    for judge, model in enumerate(plan.judges):
        for server, spec in enumerate(model.remote):
            lanes += [(judge, server)] * max(jobs, spec.concurrency)
    return lanes


class RemoteExecutor:
    """Judges on decision servers from threads (see the module docstring)."""

    def __init__(self, jobs: int = 1, lanes: int | None = None) -> None:
        """`jobs` threads per server at least (a server's `concurrency` may ask more);
        `lanes`, the threads in all, is what the plan balances its groups over."""
        self.jobs = jobs
        self.workers = lanes or jobs

    def execute(self, plan: Plan, deliver: Deliver) -> None:
        if not plan.groups:
            return
        if any(not model.remote for model in plan.judges):
            raise AnvilError("the remote executor judges on decision servers only")
        queue: deque[tuple[int, WorkGroup]] = deque(zip(plan.group_judge, plan.groups, strict=True))
        changed = threading.Condition()  # guards everything below; notified on any change
        delivered: set[tuple[int, int]] = set()
        busy = [0] * len(plan.judges)  # groups in flight, by judge
        state: dict[str, Any] = {"stop": False, "fatal": None, "lost": {}}

        def take(judge: int) -> WorkGroup | None:
            """The next group of this judge; while none is queued but some are in flight
            (a server may drop one back), wait; None when the judge's work is done."""
            with changed:
                while not state["stop"]:
                    for i, (owner, group) in enumerate(queue):
                        if owner == judge:
                            del queue[i]
                            busy[judge] += 1
                            return group
                    if busy[judge] == 0:
                        return None
                    changed.wait(0.5)
                return None

        def done(judge: int, rest: WorkGroup | None = None) -> None:
            with changed:
                busy[judge] -= 1
                if rest:
                    queue.appendleft((judge, rest))
                changed.notify_all()

        def hand(position: int, index: int, result: MetricResult) -> bool:
            with changed:
                if state["stop"] or (position, index) in delivered:
                    return state["stop"]
                delivered.add((position, index))
                if deliver(position, index, result):
                    state["stop"] = True
                    changed.notify_all()
                return state["stop"]

        def lane(judge: int, server: int) -> None:
            model = plan.judges[judge]
            spec = model.remote[server]
            metrics = [_own_copy(m) for m in plan.metrics]
            session: JudgeSession | None = None
            try:
                while not state["stop"]:
                    group = take(judge)
                    if group is None:
                        return
                    try:
                        if session is None:
                            judge_of = RemoteJudge(spec, expected=model)
                            session = JudgeSession(judge_of, default_cache())
                        judge_group(group, metrics, session, plan.include_reason, hand)
                    except JudgeUnavailable as exc:
                        done(judge, _undelivered(group, delivered, changed))
                        with changed:
                            state["lost"][spec.url] = str(exc)
                        log.warning("%s; its work goes to the other servers", exc)
                        return
                    except BaseException as exc:  # a refusal, or anything else: the run stops
                        with changed:
                            state["stop"] = True
                            state["fatal"] = state["fatal"] or exc
                            changed.notify_all()
                        done(judge)
                        return
                    done(judge)
            finally:
                if session is not None:
                    session.judge.close()

        threads = [
            threading.Thread(target=lane, args=lane_of, name=f"judge-{n}", daemon=True)
            for n, lane_of in enumerate(remote_lanes(plan, self.jobs))
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                while thread.is_alive():
                    thread.join(0.2)
        except KeyboardInterrupt:
            with changed:
                state["stop"] = True
                changed.notify_all()
            raise
        if state["fatal"] is not None:
            raise state["fatal"]
        if queue and not state["stop"]:
            left = sum(len(item.metrics) for _, group in queue for item in group)
            lost = "; ".join(state["lost"].values())
            raise JudgeUnavailable(
                f"{lost}; {left} pairs were not judged (no server of their judge answers); "
                "the results written are kept and a re-run resumes after them"
            )


def _undelivered(group: WorkGroup, delivered: set, lock: threading.Condition) -> WorkGroup:
    with lock:
        rest = []
        for item in group:
            left = tuple(m for m in item.metrics if (item.row.position, m) not in delivered)
            if left:
                rest.append(WorkItem(item.row, left))
        return rest


def _own_copy(metric: Any) -> Any:
    """A lane's own copy of a metric (some keep a group's prepared readings on themselves),
    rebuilt from its definition; a kind that cannot be rebuilt so is shared as it is."""
    try:
        return metric_from_wire(metric_to_wire(metric))
    except AnvilError:
        return metric

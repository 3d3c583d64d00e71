"""Stage 1, the plan: which (case, metric) pairs this run judges, and in what groups.

Pairs already in the results file (resumed) and pairs the cache answers are taken out;
the rest are grouped by shared prompt prefix (the scheduler) so that each group runs back
to back on one judge. A shard keeps only the prefix groups assigned to it, so `--shard i/n`
runs on n machines split the work without overlap and without breaking a group.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from anvil_local.cache import Cache, digest
from anvil_local.errors import AnvilError, DataError
from anvil_local.judge.model import ResolvedModel
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.result import MetricResult
from anvil_local.run.dataset import CaseRow
from anvil_local.run.records import ResultLine
from anvil_local.run.schedule import group_by_prefix, prefix_key, split_for_workers
from anvil_local.testcase import LLMTestCase

Pair = tuple[str, str]  # (case id, metric name)


@dataclass(frozen=True)
class Shard:
    """Shard `index` (1-based) of `count`: a stable share of the prefix groups."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not match:
            raise DataError(f"a shard is i/n such as 1/4, got {text!r}")
        index, count = int(match.group(1)), int(match.group(2))
        if count < 1 or not 1 <= index <= count:
            raise DataError(f"shard {text}: i must be between 1 and n")
        return cls(index, count)

    def owns(self, row: CaseRow) -> bool:
        """By a hash of the case's prefix key: the same on every machine and run, and a
        prefix group is never split between shards."""
        key = hashlib.sha256(prefix_key(row).encode("utf-8")).digest()
        return int.from_bytes(key[:8], "big") % self.count == self.index - 1


@dataclass(frozen=True)
class WorkItem:
    """One case and the metrics (indices into the plan's metrics) still to judge on it."""

    row: CaseRow
    metrics: tuple[int, ...]


WorkGroup = list[WorkItem]  # cases sharing a prompt prefix, judged back to back


@dataclass
class Plan:
    """What a run judges. Each metric has its judge (`judge_of[i]` indexes `judges`); each
    group is judged by one judge (`group_judge`), so every judge's prompt trie holds."""

    rows: list[CaseRow]
    metrics: list[BaseMetric]
    judges: list[ResolvedModel]
    judge_of: list[int]
    include_reason: bool | None = None
    resumed: list[ResultLine] = field(default_factory=list)
    cached: list[tuple[CaseRow, int, MetricResult]] = field(default_factory=list)
    groups: list[WorkGroup] = field(default_factory=list)
    group_judge: list[int] = field(default_factory=list)

    @property
    def model(self) -> ResolvedModel:
        """The run's judge, when every metric has the same one (else the first)."""
        return self.judges[0]

    def model_for(self, metric: int) -> ResolvedModel:
        return self.judges[self.judge_of[metric]]

    @property
    def pairs_to_judge(self) -> int:
        return sum(len(item.metrics) for group in self.groups for item in group)

    @property
    def total(self) -> int:
        """Pairs this run produces a line for (resumed ones excluded): what progress counts."""
        return len(self.cached) + self.pairs_to_judge


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
        where = f"{source}:{row.line}: " if source else ""
        for metric in metrics:
            wanted = getattr(metric, "case_type", LLMTestCase)
            if not isinstance(row.case, wanted):
                raise DataError(
                    f"{where}case {row.case_id!r} is {_kind_of(type(row.case))}, which metric "
                    f"{metric.name!r} does not judge (it judges {_kind_of(wanted)})"
                )
            for param in metric.required_params():
                if not row.case.has(param):
                    raise DataError(
                        f"{where}case {row.case_id!r} has no {param.value!r}, which metric "
                        f"{metric.name!r} needs"
                    )
            try:
                getattr(metric, "check_case", _no_check)(row.case)
            except AnvilError as exc:
                raise DataError(f"{where}case {row.case_id!r}: {exc}") from exc


def _no_check(case: object) -> None:
    return None


def _kind_of(case_type: type) -> str:
    """How an error names a kind of test case."""
    return {
        "ConversationalTestCase": "a conversation",
        "ArenaTestCase": "an arena of contestants",
    }.get(case_type.__name__, "a single-turn case")


def shard_rows(rows: list[CaseRow], shard: Shard | None) -> list[CaseRow]:
    return rows if shard is None else [row for row in rows if shard.owns(row)]


def make_plan(
    rows: list[CaseRow],
    metrics: list[BaseMetric],
    judges: ResolvedModel | list[ResolvedModel],
    *,
    judge_of: list[int] | None = None,
    resumed: list[ResultLine] = (),  # type: ignore[assignment]
    cache: Cache | None = None,
    include_reason: bool | None = None,
    workers: int = 1,
) -> Plan:
    """Everything asked for, minus what is resumed or cached, grouped by judge and prompt
    prefix for `workers`. `judges` is one model for every metric, or a list with `judge_of`
    naming each metric's."""
    if isinstance(judges, ResolvedModel):
        judges, judge_of = [judges], [0] * len(metrics)
    assert judge_of is not None and len(judge_of) == len(metrics)
    plan = Plan(rows, metrics, list(judges), list(judge_of), include_reason, list(resumed))
    done = {(line.case_id, line.metric) for line in plan.resumed}
    for judge in range(len(plan.judges)):
        todo: list[WorkItem] = []
        for row in rows:
            pending = []
            for index, metric in enumerate(metrics):
                if plan.judge_of[index] != judge or (row.case_id, metric.name) in done:
                    continue
                hit = _cached(cache, plan.judges[judge], metric, row.case, include_reason)
                if hit is not None:
                    plan.cached.append((row, index, hit))
                else:
                    pending.append(index)
            if pending:
                todo.append(WorkItem(row, tuple(pending)))
        by_position = {item.row.position: item for item in todo}
        groups = split_for_workers(group_by_prefix([item.row for item in todo]), workers)
        plan.groups += [[by_position[row.position] for row in group] for group in groups]
        plan.group_judge += [judge] * len(groups)
    plan.cached.sort(key=lambda hit: (hit[0].position, hit[1]))  # file order, as before
    return plan


def _cached(
    cache: Cache | None,
    model: ResolvedModel,
    metric: BaseMetric,
    case: LLMTestCase,
    include_reason: bool | None,
) -> MetricResult | None:
    if cache is None:
        return None
    hit = cache.get_result(result_key(model.sha256, metric, case, include_reason))
    return None if hit is None else MetricResult.from_dict(hit)

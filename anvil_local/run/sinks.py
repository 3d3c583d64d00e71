"""Stage 3, the sinks: where each judged pair goes as it arrives, and what is written when
the run ends (even when it ends early: interrupted, failed fast, or a worker crashed).

A sink has three methods: `start(plan)` before the first line, `accept(item)` for every line
of the run in arrival order, and `finish(outcome)` once at the end. The runner hands every
line to every sink; none of them judges. Subclass `BaseSink` for a sink of your own.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

from anvil_local.cache import Cache
from anvil_local.errors import DataError
from anvil_local.judge.model import ResolvedModel
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.calibration import uncalibrated
from anvil_local.run.dataset import CaseRow
from anvil_local.run.output import ResultWriter
from anvil_local.run.plan import Pair, Plan, result_key
from anvil_local.run.records import EvaluationResult, ResultLine

#: (line, pairs done so far in this run, pairs this run produces)
OnLine = Callable[[ResultLine, int, int], None]


@dataclass(frozen=True)
class Judged:
    """One line of the run with what produced it."""

    row: CaseRow
    metric: BaseMetric
    line: ResultLine


class Sink(Protocol):
    def start(self, plan: Plan) -> None: ...
    def accept(self, item: Judged) -> None: ...
    def finish(self, outcome: EvaluationResult) -> None: ...


class BaseSink:
    """A sink that ignores everything: override what you need."""

    def start(self, plan: Plan) -> None:
        pass

    def accept(self, item: Judged) -> None:
        pass

    def finish(self, outcome: EvaluationResult) -> None:
        pass


class ResultsFileSink(BaseSink):
    """The results file: one flushed JSON line per pair; resumable; locked to one writer."""

    def __init__(self, path: str | Path) -> None:
        self.writer = ResultWriter(path)

    def resume(self, model: ResolvedModel, wanted: set[Pair]) -> list[ResultLine]:
        """Lock the file and read back the lines of pairs still asked for. Error lines are
        dropped from the file (their pairs run again), so it keeps one line per pair."""
        self.writer.lock()
        kept: list[ResultLine] = []
        done: set[Pair] = set()
        retry: set[Pair] = set()
        for item in self.writer.existing():
            if item.get("model_sha256") not in (None, model.sha256):
                raise DataError(
                    f"{self.writer.path} holds results of another model ({item.get('model')}); "
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
            kept.append(line)
        self.writer.drop(retry - done)
        return kept

    def start(self, plan: Plan) -> None:
        self.writer.create()  # a run with nothing to judge (an empty shard) leaves a file too

    def accept(self, item: Judged) -> None:
        self.writer.write(item.line.to_dict())

    def finish(self, outcome: EvaluationResult) -> None:
        self.writer.close()


class CacheSink(BaseSink):
    """Fills the result cache with every pair judged (not errors, not cache hits)."""

    def __init__(self, cache: Cache, model: ResolvedModel, include_reason: bool | None) -> None:
        self.cache = cache
        self.model = model
        self.include_reason = include_reason

    def accept(self, item: Judged) -> None:
        line = item.line
        if line.cached or line.result.error is not None:
            return
        key = result_key(self.model.sha256, item.metric, item.row.case, self.include_reason)
        self.cache.put_result(key, uncalibrated(line.result).to_dict())


class ProgressSink(BaseSink):
    """Calls `on_line(line, done, total)` for each line (progress bars, stdout streaming)."""

    def __init__(self, on_line: OnLine) -> None:
        self.on_line = on_line
        self.total = 0
        self.done = 0

    def start(self, plan: Plan) -> None:
        self.total = plan.total

    def accept(self, item: Judged) -> None:
        self.done += 1
        self.on_line(item.line, self.done, self.total)


class JUnitSink(BaseSink):
    """JUnit XML of every line of the run (resumed ones included), written at the end."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def finish(self, outcome: EvaluationResult) -> None:
        from anvil_local.run.junit import write_junit

        write_junit(self.path, outcome.lines)


class SummarySink(BaseSink):
    """The per-metric summary table, written at the end (to stderr by default)."""

    def __init__(self, out: Path | None = None, stream: TextIO | None = None) -> None:
        self.out = out
        self.stream = stream

    def finish(self, outcome: EvaluationResult) -> None:
        from anvil_local.run.report import render_summary

        stream = self.stream or sys.stderr
        stream.write(render_summary(outcome, self.out) + "\n")

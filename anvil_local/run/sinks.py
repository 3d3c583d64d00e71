"""Stage 3, the sinks: where each judged pair goes as it arrives, and what is written when
the run ends (even when it ends early: interrupted, failed fast, or a worker crashed).

A sink has three methods: `start(plan)` before the first line, `accept(item)` for every line
of the run in arrival order, and `finish(outcome)` once at the end. The runner hands every
line to every sink; none of them judges. Subclass `BaseSink` for a sink of your own.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TextIO

from anvil_local.cache import Cache
from anvil_local.errors import DataError
from anvil_local.judge.model import ResolvedModel
from anvil_local.metrics.abstain import plain
from anvil_local.metrics.base import BaseMetric
from anvil_local.metrics.calibration import uncalibrated
from anvil_local.run.dataset import CaseRow
from anvil_local.run.meta import RunMeta
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
    """The results file: one flushed JSON line per pair; resumable; locked to one writer.
    With `meta`, the file starts with the run's metadata line (`meta.py`)."""

    def __init__(self, path: str | Path, meta: RunMeta | None = None) -> None:
        self.writer = ResultWriter(path)
        self.meta = meta

    def resume(self, judges: dict[str, ResolvedModel], wanted: set[Pair]) -> list[ResultLine]:
        """Lock the file and read back the lines of pairs still asked for. Error lines are
        dropped from the file (their pairs run again), so it keeps one line per pair. A
        file with metadata must agree with this run's (same judges, no metric redefined)
        and records this run; a file without it (an older one) is resumed without. `judges`
        holds each metric's judge, by metric name."""
        self.writer.lock()
        kept: list[ResultLine] = []
        done: set[Pair] = set()
        retry: set[Pair] = set()
        items = self.writer.existing()
        old = self.writer.meta
        meta = None
        if old is not None and self.meta is not None:
            meta = old.resumed_by(self.meta, self.writer.path)
        elif not items:
            meta = self.meta  # a new or empty file: its metadata goes first
        self.writer.new_meta = meta
        for item in items:
            judge = judges.get(str(item.get("metric")))
            if judge is not None and item.get("model_sha256") not in (None, judge.sha256):
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
        if meta is not None:
            self.writer.rewrite(retry - done, meta)  # a file not yet there: `create` writes it
        else:
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

    def __init__(
        self, cache: Cache, judges: dict[str, ResolvedModel], include_reason: bool | None
    ) -> None:
        self.cache = cache
        self.judges = judges  # each metric's judge, by metric name
        self.include_reason = include_reason

    def accept(self, item: Judged) -> None:
        line = item.line
        if line.cached or line.result.error is not None:
            return
        judge = self.judges[item.metric.name]
        key = result_key(judge.sha256, item.metric, item.row.case, self.include_reason)
        self.cache.put_result(key, uncalibrated(plain(line.result)).to_dict())


class ProgressSink(BaseSink):
    """How far the run is, as lines arrive: the one progress reporter, which the CLI and
    library callers configure rather than re-implement.

    `on_line(line, done, total)` is called for each line. `results` receives each line as
    JSON (the CLI's stdout when there is no results file). `stream` shows progress: with
    `bar`, one bar redrawn in place (a terminal); without, a line at the first result, every
    `every` seconds, and at the last (logs). Counts and rate start again with each run, so
    one sink can follow several runs (a bench of several models)."""

    def __init__(
        self,
        on_line: OnLine | None = None,
        *,
        stream: TextIO | None = None,
        bar: bool = False,
        results: TextIO | None = None,
        label: str = "judging",
        every: float = 10.0,
    ) -> None:
        self.on_line = on_line
        self.stream = stream
        self.bar = bar
        self.results = results
        self.label = label
        self.every = every
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.last_shown = 0.0
        self.drawn = 0  # characters of the bar now on screen (0: none)

    def start(self, plan: Plan) -> None:
        self.total = plan.total
        self.done = 0
        self.started = time.monotonic()
        self.last_shown = 0.0

    def accept(self, item: Judged) -> None:
        self.done += 1
        if self.results is not None:
            self.results.write(json.dumps(item.line.to_dict(), ensure_ascii=False) + "\n")
            self.results.flush()
        if self.on_line is not None:
            self.on_line(item.line, self.done, self.total)
        if self.stream is not None:
            if self.bar:
                self._draw_bar(self.stream)
            else:
                self._write_line(self.stream)

    def finish(self, outcome: EvaluationResult) -> None:
        """End the bar's line, so that what follows (the summary) starts on its own."""
        if self.drawn and self.stream is not None:
            self.stream.write("\n")
            self.stream.flush()
        self.drawn = 0

    def _rate(self) -> tuple[int, float, float]:
        """(total, seconds per result, seconds left), the total never below what is done."""
        total = max(self.total, self.done)
        rate = (time.monotonic() - self.started) / self.done
        return total, rate, rate * (total - self.done)

    def _write_line(self, stream: TextIO) -> None:
        now = time.monotonic()
        total = max(self.total, self.done)
        if self.done not in (1, total) and now - self.last_shown < self.every:
            return
        self.last_shown = now
        total, rate, left = self._rate()
        stream.write(
            f"{self.label} {self.done}/{total} ({self.done / total:.0%}), {rate:.2f} s/result, "
            f"about {left:.0f} s left\n"
        )
        stream.flush()

    def _draw_bar(self, stream: TextIO, width: int = 24) -> None:
        total, rate, left = self._rate()
        filled = int(width * self.done / total)
        parts = [f"{self.done}/{total}"]
        if self.done < total:
            minutes, seconds = divmod(int(left), 60)
            parts.append(f"{minutes // 60:02}:{minutes % 60:02}:{seconds:02}")
        parts.append(f"{rate:.2f} s/result")
        text = f"{self.label}  [{'#' * filled}{'-' * (width - filled)}]  {'  '.join(parts)}"
        stream.write("\r" + text.ljust(self.drawn))
        stream.flush()
        self.drawn = len(text)


class JUnitSink(BaseSink):
    """JUnit XML of every line of the run (resumed ones included), written at the end."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def finish(self, outcome: EvaluationResult) -> None:
        from anvil_local.run.junit import write_junit

        write_junit(self.path, outcome.lines)


class SummarySink(BaseSink):
    """The per-metric summary table, written at the end (to stderr by default), then each
    pair of metrics asked to be shown side by side (`anvil eval --pair`)."""

    def __init__(
        self,
        out: Path | None = None,
        stream: TextIO | None = None,
        pairs: Sequence[tuple[str, str]] = (),
    ) -> None:
        self.out = out
        self.stream = stream
        self.pairs = list(pairs)

    def finish(self, outcome: EvaluationResult) -> None:
        from anvil_local.run.report import render_pair, render_summary

        stream = self.stream or sys.stderr
        stream.write(render_summary(outcome, self.out) + "\n")
        for first, second in self.pairs:
            stream.write("\n" + render_pair(outcome, first, second) + "\n")

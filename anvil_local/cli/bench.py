"""`anvil bench`: how well judges (model + metric) agree with human labels, and their cost.
The options become one `BenchRequest`; `anvil_local.bench.request` does the rest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from anvil_local.cli import options


@click.command()
@click.option(
    "--suite",
    default=None,
    metavar="NAME|FILE",
    help="A bench suite (data, metrics, labels): a shipped name or a suite file.",
)
@click.option(
    "--data",
    "data_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Labelled cases (JSONL); with --suite, instead of the suite's data.",
)
@options.LABEL
@options.METRICS
@options.MODELS
@options.JUDGE_URL
@options.JUDGE_MODEL
@options.LIMIT
@options.DOCS
@options.JOBS
@click.option(
    "--report",
    "report_dir",
    default=None,
    type=click.Path(path_type=Path),
    help="Write bench.json, bench.md, report.html and the results files here.",
)
@options.NO_CACHE
@options.THREADS
@options.BENCH_PROGRESS
@click.option(
    "--fit-calibration",
    is_flag=True,
    help="Fit each metric's score -> label map on half the documents, report it on the other "
    "half, and write it into the metric file (per model).",
)
@click.option(
    "--abstain-precision",
    type=click.FloatRange(0.5, 1.0, min_open=True),
    default=None,
    metavar="ACCURACY",
    help="For each binary label: fit the confidence level at which the verdicts kept are "
    "right ACCURACY of the time (on half the documents, measured on the other half) and "
    "report it with the risk-coverage curve; pass the level to `anvil eval --abstain-below`.",
)
def bench(no_cache: bool, progress: bool | None, **fields: Any) -> None:
    """Measure how well judges (model + metric) agree with human labels, and what they cost."""
    from anvil_local.bench.request import BenchRequest, run_bench
    from anvil_local.run.sinks import ProgressSink

    remote = options.judge_from(
        {"judge_urls": fields.pop("judge_urls"), "judge_model": fields.pop("judge_model")}
    )
    if remote is not None:  # one judge more to compare: the decision servers'
        fields["models"] = (*fields["models"], remote)
    request = BenchRequest(use_cache=not no_cache, **fields)
    sinks = [] if progress is False else [ProgressSink(stream=sys.stderr)]
    click.echo(run_bench(request, sinks), nl=False)

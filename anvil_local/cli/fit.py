"""`anvil fit`: fit a head to labelled cases and write it into the metric file.
The options become one `FitRequest`; `anvil_local.bench.request.run_fit` does the rest."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from anvil_local.cli import options


@click.command()
@options.METRIC
@click.option(
    "--data",
    "data_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Labelled cases (JSONL; each case's `labels` holds the label, `doc` its document).",
)
@options.LABEL
@options.MODEL
@options.JUDGE_URL
@options.JUDGE_MODEL
@click.option(
    "--folds",
    type=click.IntRange(2),
    default=5,
    show_default=True,
    help="Cross-validation folds (documents dealt round them).",
)
@options.LIMIT
@options.DOCS
@options.NO_CACHE
@options.THREADS
@options.BENCH_PROGRESS
@click.option(
    "--dry-run",
    is_flag=True,
    help="Report the cross-validated figures; write nothing into the metric file.",
)
def fit(
    label: str | None, no_cache: bool, progress: bool | None, dry_run: bool, **fields: Any
) -> None:
    """Fit a head (logistic for a binary label, linear for a graded one) on what a metric's
    results carry, report it out of fold (documents it was not fitted on) with each feature
    alone beside it and a label-efficiency table, and write it into the metric file for the
    judge model. `anvil eval` then applies it."""
    from anvil_local.bench.request import FitRequest, run_fit
    from anvil_local.errors import DataError
    from anvil_local.run.sinks import ProgressSink

    if label is None:
        raise DataError("anvil fit needs --label labels.NAME")
    fields["model"] = options.judge_from(fields)
    request = FitRequest(
        metric_file=fields.pop("metric_file"),
        label=label,
        use_cache=not no_cache,
        write=not dry_run,
        **fields,
    )
    sinks = [] if progress is False else [ProgressSink(stream=sys.stderr)]
    click.echo(run_fit(request, sinks), nl=False)

"""`anvil eval` (a dataset against metric files) and `anvil merge` (the results files of a
sharded run joined into one)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from anvil_local import signals
from anvil_local.cli import options
from anvil_local.cli.root import EXIT_FAILED
from anvil_local.errors import DataError, WorkerCrash


@click.command("eval")
@options.METRICS_REQUIRED
@click.option(
    "--data",
    "data_file",
    required=True,
    type=click.Path(path_type=Path),
    help="Test cases: JSONL, a JSON array, or CSV.",
)
@click.option(
    "--out",
    "out_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Results JSONL (appended; re-running resumes). Default: stdout.",
)
@click.option(
    "--junit",
    "junit_file",
    default=None,
    type=click.Path(path_type=Path),
    help="Also write JUnit XML.",
)
@options.JOBS
@click.option(
    "--executor",
    type=click.Choice(["local", "pool", "ray"]),
    default=None,
    help="Where pairs are judged: this process (default for --jobs 1), --jobs worker "
    "processes (default when --jobs > 1), or --jobs Ray actors (needs the [ray] extra).",
)
@click.option(
    "--ray-address",
    default=None,
    metavar="ADDRESS",
    help="Ray cluster to use with --executor ray (default: start a local Ray).",
)
@click.option(
    "--shard",
    default=None,
    metavar="I/N",
    help="Judge only shard I of N (stable by prompt-prefix group); join with `anvil merge`.",
)
@options.NO_CACHE
@options.NO_REASON
@click.option("--fail-fast", is_flag=True, help="Stop at the first case-level error.")
@click.option(
    "--abstain-below",
    "abstain_below",
    multiple=True,
    metavar="[METRIC=]LEVEL",
    help="Mark a verdict uncertain when its confidence (0.5 to 1: a DAG's path probability, "
    "else the score as the odds of passing) is below LEVEL; for every metric, or one metric "
    "(repeatable). `anvil bench --abstain-precision` fits a level.",
)
@click.option(
    "--uncertain",
    "uncertain_policy",
    type=click.Choice(["pass", "fail", "error"]),
    default="fail",
    show_default=True,
    help="How an uncertain verdict counts: as a pass, as a fail, or as no verdict (exit 1, "
    "like an error; its score kept).",
)
@options.FIELDS
@options.SIDE_BY_SIDE
@options.PROGRESS
@options.JUDGE
def eval_command(
    metric_files: tuple[Path, ...],
    data_file: Path,
    out_file: Path | None,
    junit_file: Path | None,
    jobs: int,
    executor: str | None,
    ray_address: str | None,
    shard: str | None,
    no_cache: bool,
    no_reason: bool,
    fail_fast: bool,
    abstain_below: tuple[str, ...],
    uncertain_policy: str,
    fields: tuple[str, ...],
    pairs: tuple[str, ...],
    progress: bool | None,
    **load: Any,
) -> None:
    """Evaluate a dataset against metric files. Exit 0: all passed; 1: some case failed
    its threshold or errored; 2: bad input (or llama.cpp cannot run here); 3: a worker
    process crashed (results written so far are kept)."""
    from anvil_local.metrics.abstain import Abstention
    from anvil_local.run.dataset import parse_field_map, read_cases
    from anvil_local.run.evaluate import evaluate
    from anvil_local.run.executors import make_executor
    from anvil_local.run.output import check_writable
    from anvil_local.run.plan import Shard
    from anvil_local.run.sinks import JUnitSink, ProgressSink, Sink, SummarySink
    from anvil_local.spec import load_metrics

    model = options.judge_from(load)
    settings = options.settings_from(load)
    if out_file is not None:
        check_writable(out_file, "--out", regular=True)
    if junit_file is not None:
        check_writable(junit_file, "--junit")
    if ray_address is not None and executor != "ray":
        raise DataError("--ray-address needs --executor ray")
    chosen_shard = Shard.parse(shard) if shard is not None else None
    abstain = Abstention.parse(abstain_below, uncertain_policy)
    metrics = [m for path in metric_files for m in load_metrics(path)]
    side_by_side = _pairs(pairs, [m.name for m in metrics])
    rows = read_cases(data_file, parse_field_map(fields))
    tty = sys.stderr.isatty()
    show = tty if progress is None else progress
    sinks: list[Sink] = [
        ProgressSink(  # closed (its bar ended) before the summary is printed
            stream=sys.stderr if show else None,
            bar=tty,
            results=sys.stdout if out_file is None else None,
        )
    ]
    if junit_file is not None:
        sinks.append(JUnitSink(junit_file))
    sinks.append(SummarySink(out_file, pairs=side_by_side))
    crash: WorkerCrash | None = None
    try:
        outcome = evaluate(
            rows,
            metrics,
            model=model,
            settings=settings,
            jobs=jobs,
            executor=make_executor(executor, jobs, ray_address=ray_address),
            shard=chosen_shard,
            use_cache=not no_cache,
            include_reason=False if no_reason else None,
            fail_fast=fail_fast,
            out=out_file,
            sinks=sinks,
            source=str(data_file),
            abstain=abstain,
        )
    except WorkerCrash as exc:
        crash, outcome = exc, exc.outcome  # its JUnit and summary are written; then fail
    if crash is not None:
        raise crash
    if outcome.interrupted:
        sys.exit(signals.exit_status())
    sys.exit(0 if outcome.all_passed else EXIT_FAILED)


@click.command()
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path),
    help="The merged results file (replaced if it exists).",
)
@click.option(
    "--data",
    "data_file",
    default=None,
    type=click.Path(path_type=Path),
    help="The run's cases file: with --metric, report the pairs no shard judged.",
)
@options.METRICS
@options.FIELDS
def merge(
    inputs: tuple[Path, ...],
    out_file: Path,
    data_file: Path | None,
    metric_files: tuple[Path, ...],
    fields: tuple[str, ...],
) -> None:
    """Join the results files of `anvil eval --shard` runs: one line per (case, metric),
    one model throughout. Exit 0: complete; 1: some pair is missing or an error."""
    from anvil_local.run.merge import merge_results
    from anvil_local.run.output import check_writable

    check_writable(out_file, "--out", regular=True)
    expected = None
    if data_file is not None or metric_files:
        if data_file is None or not metric_files:
            raise DataError("--data and --metric go together (the pairs the run asked for)")
        from anvil_local.run.dataset import parse_field_map, read_cases
        from anvil_local.spec import load_metrics

        metrics = [m for path in metric_files for m in load_metrics(path)]
        rows = read_cases(data_file, parse_field_map(fields))
        expected = [(row.case_id, metric.name) for row in rows for metric in metrics]
    report = merge_results(inputs, out_file, expected)
    click.echo(
        f"merged {len(inputs)} files into {out_file}: {report.lines} lines "
        f"({report.duplicates} duplicates dropped, {report.errors} errors), "
        f"model {report.model or '-'}",
        err=True,
    )
    for case_id, metric in report.missing[:20]:
        click.echo(f"missing: case {case_id!r} metric {metric!r}", err=True)
    if len(report.missing) > 20:
        click.echo(f"... and {len(report.missing) - 20} more missing pairs", err=True)
    sys.exit(EXIT_FAILED if report.missing or report.errors else 0)


def _pairs(items: tuple[str, ...], names: list[str]) -> list[tuple[str, str]]:
    """Each --pair METRIC=METRIC as two metric names of this run (a name may hold "=": the
    split is the one that leaves two of the run's names)."""
    found = []
    for item in items:
        splits = [(item[:i].strip(), item[i + 1 :].strip()) for i, c in enumerate(item) if c == "="]
        pair = next(((a, b) for a, b in splits if a in names and b in names), None)
        if pair is None:
            raise DataError(
                f"--pair {item!r}: give two metrics of this run as METRIC=METRIC "
                f"(this run's: {', '.join(names)})"
            )
        found.append(pair)
    return found

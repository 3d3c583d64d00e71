"""`anvil compare`: a regression gate between two results files (BASE, NEW)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from anvil_local.cli import options
from anvil_local.cli.root import EXIT_FAILED
from anvil_local.errors import MissingExtra


def _need_scipy() -> None:
    try:
        import scipy  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(
            f"anvil compare needs the bench extra ({exc.name} is missing): "
            "pip install 'anvil-local[bench]' (or pip install -e '.[bench]' in a checkout)"
        ) from exc


@click.command("compare")
@click.argument("base", type=click.Path(path_type=Path))
@click.argument("new", type=click.Path(path_type=Path))
@click.option(
    "--tolerance",
    type=click.FloatRange(0),
    default=0.0,
    show_default=True,
    metavar="T",
    help="Fail only when a metric's mean score drops by more than T with 95% confidence "
    "(the interval's upper bound below -T).",
)
@click.option(
    "--fail-on-flip", is_flag=True, help="Also fail when any case flipped from pass to fail."
)
@options.PAIR
@click.option(
    "--allow-model-change",
    is_flag=True,
    help="Compare files judged by different models (refused otherwise).",
)
@click.option(
    "--allow-metric-change",
    is_flag=True,
    help="Compare a metric whose definition differs between the files (refused otherwise).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of Markdown.")
def compare_command(
    base: Path,
    new: Path,
    tolerance: float,
    fail_on_flip: bool,
    pairs: tuple[str, ...],
    allow_model_change: bool,
    allow_metric_change: bool,
    as_json: bool,
) -> None:
    """Compare the results of NEW with BASE, paired by (case, metric): mean scores, the
    paired difference with a 95% bootstrap interval (resampling documents when cases name
    one), pass rates, and the cases that flipped. Prints Markdown for a pull-request comment.
    Exit 0: no metric worse beyond the tolerance; 1: some metric is (or, with
    --fail-on-flip, some case flipped to fail); 2: bad input, or files of different models
    or metric definitions without the flag that allows it."""
    _need_scipy()
    from anvil_local.comparison.compare import compare_files
    from anvil_local.comparison.render import markdown, to_json
    from anvil_local.run.pairs import parse_renames

    comparison = compare_files(
        base,
        new,
        tolerance=tolerance,
        fail_on_flip=fail_on_flip,
        renames=parse_renames(pairs),
        allow_model_change=allow_model_change,
        allow_metric_change=allow_metric_change,
    )
    click.echo(to_json(comparison) if as_json else markdown(comparison), nl=False)
    sys.exit(EXIT_FAILED if comparison.failed else 0)

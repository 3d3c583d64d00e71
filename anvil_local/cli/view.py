"""`anvil view`: an offline HTML viewer for results files."""

from __future__ import annotations

from pathlib import Path

import click

from anvil_local.cli import options


@click.command("view")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out_file",
    required=True,
    type=click.Path(path_type=Path),
    help="The HTML file to write (replaced if it exists).",
)
@options.PAIR
def view_command(results: tuple[Path, ...], out_file: Path, pairs: tuple[str, ...]) -> None:
    """Write one self-contained HTML file (no network, opens offline) to look at results:
    a filterable, sortable table of cases, failing first; each case opens to its trace
    drawn (a G-Eval's score distribution, a DAG's walk on its graph, a likelihood's tokens).
    Two or more files are shown side by side, paired by (case, metric)."""
    from anvil_local.run.output import check_writable
    from anvil_local.run.pairs import parse_renames
    from anvil_local.view import write_view

    check_writable(out_file, "--out")
    rows = write_view(results, out_file, parse_renames(pairs))
    click.echo(f"wrote {out_file}: {rows} rows from {len(results)} files", err=True)

"""`anvil doctor`: whether this install can run the judge, and how fast."""

from __future__ import annotations

import sys

import click

from anvil_local.cli import options
from anvil_local.cli.root import EXIT_FAILED


@click.command()
@options.PROBE_MODEL
@options.PROBE_THREADS
@click.option("--no-probe", is_flag=True, help="Skip the test decode and throughput probe.")
def doctor(probe_model: str | None, probe_threads: int | None, no_probe: bool) -> None:
    """Check that this install can run the judge: versions, the native library against this
    CPU, directories, models, and a few-second throughput probe. Exit 0: usable; 1: not."""
    from anvil_local.doctor import diagnose, render

    findings = diagnose(probe_model, probe_threads, probe=not no_probe)
    click.echo(render(findings))
    sys.exit(EXIT_FAILED if any(f.problem for f in findings) else 0)

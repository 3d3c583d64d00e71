"""The `anvil` group and its error boundary: any AnvilError becomes one `Error: ...` line
with the error's exit code, a usage error one line with exit 2, Ctrl-C exit 130."""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from anvil_local import signals
from anvil_local.errors import AnvilError

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_CRASHED = 3  # a worker process died (WorkerCrash.exit_code)
EXIT_INTERRUPTED = 130  # SIGINT; SIGTERM exits 143 (`anvil_local.signals`)


class AnvilGroup(click.Group):
    """Turns library errors into one line on stderr at the CLI boundary."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except AnvilError as exc:
            click.echo(f"Error: {exc.one_line()}", err=True)
            ctx.exit(exc.exit_code)
        except click.UsageError as exc:  # one line too, with where to find help
            command = exc.ctx.command_path if exc.ctx else "anvil"
            click.echo(f"Error: {exc.format_message()} (see `{command} --help`)", err=True)
            ctx.exit(EXIT_BAD_INPUT)
        except KeyboardInterrupt as exc:
            said = str(exc) if isinstance(exc, signals.Interrupted) else ""
            click.echo(said or "Interrupted.", err=True)
            ctx.exit(signals.exit_status())


@click.group(cls=AnvilGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="anvil-local")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """Offline LLM-as-a-judge: G-Eval and DAG metrics on a local GGUF model."""
    signals.install()  # SIGTERM stops a command as Ctrl-C does (exit 143, not 130)
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="anvil: %(message)s", stream=sys.stderr)

"""`anvil serve`: local GGUF judges as a System One decision server."""

from __future__ import annotations

import sys
from typing import Any

import click

from anvil_local.cli import options


@click.command()
@options.SERVE_MODELS
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on (loopback by default; another address serves the network).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8000,
    show_default=True,
    help="Port to listen on (0: a free one, printed in the ready line).",
)
@click.option(
    "--api-key",
    envvar="ANVIL_API_KEY",
    default=None,
    help="Require 'Authorization: Bearer KEY' on every endpoint but /health "
    "(or $ANVIL_API_KEY). Never printed or logged.",
)
@click.option(
    "--max-questions",
    type=click.IntRange(1),
    default=64,
    show_default=True,
    help="Questions a request may ask.",
)
@click.option(
    "--max-options",
    type=click.IntRange(2, 255),
    default=255,
    show_default=True,
    help="Labels a choice question may have.",
)
@click.option(
    "--max-levels",
    type=click.IntRange(2, 10),
    default=10,
    show_default=True,
    help="Levels a score question may have.",
)
@click.option(
    "--max-body",
    type=click.IntRange(1024),
    default=1 << 20,
    show_default=True,
    help="Largest request body, in bytes.",
)
@click.option(
    "--queue",
    type=click.IntRange(1),
    default=64,
    show_default=True,
    help="Requests admitted at once, waiting or judged; past it: 503 with Retry-After.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.1),
    default=120.0,
    show_default=True,
    help="Seconds a request may take, its wait included; past it: 504.",
)
@options.N_CTX
@options.THREADS
@options.N_GPU_LAYERS
@options.BATCH_SIZE
def serve(
    models: tuple[str, ...], host: str, port: int, api_key: str | None, **kwargs: Any
) -> None:
    """Serve local GGUF judges over HTTP: System One decisions (POST /v1/systemone and the
    OpenAI-shaped /v1/decisions), minimal chat completions, /v1/models and /health.

    Needs the serve extra: pip install 'anvil-local[serve]'. See docs/serve.md."""
    from anvil_local.serve import Limits, ServeSettings, start

    judge = options.settings_from(kwargs)
    limits = Limits(
        questions=kwargs["max_questions"],
        options=kwargs["max_options"],
        levels=kwargs["max_levels"],
        body_bytes=kwargs["max_body"],
        queue=kwargs["queue"],
        timeout=kwargs["timeout"],
    )
    settings = ServeSettings(models, host, port, api_key or None, limits, judge)
    status = start(
        settings,
        ready=lambda line: click.echo(line),  # stdout: what scripts wait for
        note=lambda line: click.echo(line, err=True),
    )
    sys.exit(status)

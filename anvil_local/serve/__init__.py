"""`anvil serve`: local GGUF judges as a System One decision server.

One door: `start(settings, ...)` loads the models, binds, serves until a signal, and
returns the exit status. Inside: `settings` (what it is started with), `wire` (the request
and response shapes), `body` (bytes to a validated request), `questions` (typed questions
as judge prompts and readings as answers, no model), `engine` (the judges, their lanes and
the queue), `decide` (a request's questions read on a lane), one module per endpoint family
(`systemone`, `decisions`, `chat`), `errors` (each failure's status and line), `app` (the
routes) and `server` (uvicorn). Only `engine` and the endpoint work reach the judge, through
`anvil_local.judge`; nothing here imports llama_cpp.
"""

from __future__ import annotations

from collections.abc import Callable

from anvil_local.errors import MissingExtra
from anvil_local.serve.settings import Limits, ServeSettings, is_loopback

__all__ = ["Limits", "ServeSettings", "ready_line", "start"]


def require_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise MissingExtra(
            f"anvil serve needs the serve extra ({exc.name} is missing): "
            "pip install 'anvil-local[serve]'"
        ) from None


def ready_line(url: str, names: list[str], settings: ServeSettings) -> str:
    auth = "bearer key" if settings.api_key else "none"
    return (
        f"anvil serve: ready at {url} (models: {', '.join(names)}; limits: "
        f"{settings.limits.describe()}; auth: {auth})"
    )


def start(
    settings: ServeSettings, ready: Callable[[str], None], note: Callable[[str], None]
) -> int:
    """Load, bind, serve until SIGINT/SIGTERM; `ready` gets the ready line, `note` the
    warnings and the closing line. Returns 128 + the signal that stopped it (0 otherwise)."""
    require_extra()
    from anvil_local.models.resolve import resolve_model
    from anvil_local.serve import server
    from anvil_local.serve.engine import Engine

    sock = server.bind(settings.host, settings.port)  # a busy port fails before any load
    try:
        specs = settings.models or (None,)
        models = [resolve_model(spec, settings.judge, remote=False) for spec in specs]
        engine = Engine.load(models, settings.limits)
        if not is_loopback(settings.host) and not settings.api_key:
            note(
                f"anvil serve: listening on {settings.host} without --api-key: anyone who "
                "can reach this port can use the judge"
            )
        names = list(engine.served)
        try:
            status = server.run(
                engine, settings, sock, lambda url: ready(ready_line(url, names, settings))
            )
        finally:
            engine.close()
    finally:
        sock.close()
    note(f"anvil serve: stopped; {engine.answered} requests answered")
    return status

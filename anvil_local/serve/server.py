"""Running the app: bind the socket ourselves (a busy port is one line, not a traceback),
print one line when ready, stop on SIGINT/SIGTERM after the requests in flight."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Any

from anvil_local.serve.engine import Engine
from anvil_local.serve.errors import ServeStartError
from anvil_local.serve.settings import ServeSettings


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port); port 0 picks a free one."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeStartError(f"cannot listen on {host}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ServeStartError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def run(
    engine: Engine,
    settings: ServeSettings,
    sock: socket.socket,
    on_ready: Callable[[str], None],
) -> int:
    """Serve on `sock` until SIGINT or SIGTERM; returns the signal's exit status (128 +
    signal) after a clean stop, 0 if the server stopped by itself."""
    import uvicorn

    from anvil_local.serve.app import create_app

    config = uvicorn.Config(
        create_app(engine, settings),
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=int(settings.limits.timeout) + 1,
    )
    server = _server_class()(config, lambda: on_ready(url_of(sock)))
    server.run(sockets=[sock])
    return 128 + server.stopped_by if server.stopped_by else 0


def _server_class() -> Any:
    """uvicorn's server, which also says when it is ready and which signal stopped it
    (made late: uvicorn is the serve extra's)."""
    import uvicorn

    class Server(uvicorn.Server):
        stopped_by = 0

        def __init__(self, config: Any, ready: Callable[[], None]) -> None:
            super().__init__(config)
            self.ready = ready

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:
                self.ready()

        def handle_exit(self, sig: int, frame: Any) -> None:
            # uvicorn's own handler, but the signal is not raised again after the stop: the
            # command exits with 128 + signal itself, after its closing line
            self.stopped_by = self.stopped_by or int(sig)
            if self.should_exit:
                self.force_exit = True  # a second signal: stop waiting for requests
            self.should_exit = True

    return Server

"""The app: routes that parse, call an endpoint family and shape the answer; every failure
leaves as one line in the System One error shape, and the server goes on serving."""

from __future__ import annotations

import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from anvil_local.serve.body import check_declared_size, parse_json, validate
from anvil_local.serve.chat import chat_completion
from anvil_local.serve.decisions import decisions
from anvil_local.serve.engine import Cancelled, Engine
from anvil_local.serve.errors import ServeError, too_large, unauthorised
from anvil_local.serve.settings import ServeSettings
from anvil_local.serve.systemone import systemone
from anvil_local.serve.wire import (
    ChatRequest,
    DecisionsRequest,
    ModelCard,
    ModelList,
    SystemOneRequest,
)

log = logging.getLogger(__name__)

Handler = Callable[[Engine, Any, Any], Awaitable[tuple[BaseModel, dict[str, Any]]]]


def json_response(body: BaseModel | dict, status: int = 200, headers: Any = None) -> Response:
    """Compact JSON, fields in declared order, None fields left out: the same bytes for the
    same answer."""
    if isinstance(body, BaseModel):
        content = body.model_dump_json(exclude_none=True, by_alias=True)
    else:
        import json

        content = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return Response(content, status, headers, media_type="application/json")


def error_response(error: ServeError) -> Response:
    return json_response(error.body(), error.status, error.headers)


def create_app(engine: Engine, settings: ServeSettings) -> Starlette:
    """The ASGI app over a loaded engine (whoever made the engine closes it)."""
    key = settings.api_key.encode() if settings.api_key else None
    limits = settings.limits

    def authorise(request: Request) -> None:
        if key is None:
            return
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(token.strip().encode(), key):
            raise unauthorised()

    async def read_body(request: Request) -> bytes:
        check_declared_size(request.headers.get("content-length"), limits.body_bytes)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limits.body_bytes:
                raise too_large(limits.body_bytes)
            chunks.append(chunk)
        return b"".join(chunks)

    def decision_route(wire: type[BaseModel], handler: Handler) -> Callable:
        async def route(request: Request) -> Response:
            authorise(request)
            parsed = validate(wire, parse_json(await read_body(request)))

            async def gone() -> None:
                while (await request.receive())["type"] != "http.disconnect":
                    pass

            body, headers = await handler(engine, parsed, gone)
            return json_response(body, headers=headers)

        return route

    async def models(request: Request) -> Response:
        authorise(request)
        cards = [
            ModelCard(
                id=s.name,
                name=s.name,
                description=s.description,
                sha256=s.model.sha256,
                adapter=s.model.adapter or None,
                n_ctx=s.judge.runtime.n_ctx,
                identity=s.identity,
            )
            for s in engine.served.values()
        ]
        return json_response(ModelList(data=cards, models=cards))

    async def health(request: Request) -> Response:
        return json_response({"status": "ok", "models": list(engine.served)})

    routes = [
        Route("/v1/systemone", decision_route(SystemOneRequest, systemone), methods=["POST"]),
        Route("/v1/decisions", decision_route(DecisionsRequest, decisions), methods=["POST"]),
        Route(
            "/v1/chat/completions", decision_route(ChatRequest, chat_completion), methods=["POST"]
        ),
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]

    app = Starlette(routes=routes)
    app.add_middleware(_OneLineErrors)
    app.add_exception_handler(HTTPException, _http_error)
    return app


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own refusals (no such path, wrong method) in the same shape."""
    assert isinstance(exc, HTTPException)
    kind = "not_found" if exc.status_code == 404 else "invalid_request"
    message = f"{request.method} {request.url.path}: {exc.detail}"
    return error_response(ServeError(exc.status_code, kind, message, dict(exc.headers or {})))


class _OneLineErrors:
    """Turns every failure inside a route into its one-line error response, and logs one
    line per request (method, path, status, seconds; never a header)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = {"code": 0}

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except ServeError as exc:
            await error_response(exc)(scope, receive, sending)
        except Cancelled:
            status["code"] = 499  # the client left: nobody reads an answer
        except Exception as exc:
            log.exception("internal error on %s %s", scope["method"], scope["path"])
            error = ServeError(500, "unknown", f"internal error: {type(exc).__name__}: {exc}")
            if status["code"] == 0:
                await error_response(error)(scope, receive, sending)
        log.info(
            "%s %s %d %.3f s",
            scope["method"],
            scope["path"],
            status["code"],
            time.perf_counter() - start,
        )

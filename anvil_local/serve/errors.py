"""Every failure a request can meet, as one status, one error type and one line.

The body is the System One HTTP profile's error shape on every endpoint:
`{"detail": {"message": "...", "error_type": "..."}}`. The spec names four error types
(`authentication_error`, `timeout`, `tokens_exceeded`, `unknown`); this server adds
`invalid_request`, `not_found` and `overloaded`, which clients must tolerate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from anvil_local.errors import AnvilError


class ServeStartError(AnvilError):
    """The server cannot start as asked (a busy port, a model named twice)."""


@dataclass
class ServeError(Exception):
    """A request that cannot be answered: its HTTP status, error type and one-line message."""

    status: int
    error_type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.message = " ".join(self.message.split())  # one line, always
        super().__init__(self.message)

    def body(self) -> dict[str, dict[str, str]]:
        return {"detail": {"message": self.message, "error_type": self.error_type}}


def bad_request(message: str) -> ServeError:
    """Bytes that are not a readable JSON request (not UTF-8, not JSON, duplicate keys)."""
    return ServeError(400, "invalid_request", message)


def invalid(message: str) -> ServeError:
    """A readable request that breaks the schema or a limit."""
    return ServeError(422, "invalid_request", message)


def too_large(limit: int) -> ServeError:
    return ServeError(413, "invalid_request", f"request body is over the {limit}-byte limit")


def unauthorised() -> ServeError:
    return ServeError(
        401,
        "authentication_error",
        "missing or wrong API key: send 'Authorization: Bearer <key>'",
        {"WWW-Authenticate": "Bearer"},
    )


def not_found(message: str) -> ServeError:
    return ServeError(404, "not_found", message)


def tokens_exceeded(tokens: int, limit: int) -> ServeError:
    return ServeError(
        400,
        "tokens_exceeded",
        f"the state and a question need {tokens} tokens but the model's context holds {limit}",
    )


def timed_out(seconds: float) -> ServeError:
    return ServeError(504, "timeout", f"the request took longer than the {seconds:g} s limit")


def overloaded(queue: int, retry_after: int) -> ServeError:
    return ServeError(
        503,
        "overloaded",
        f"the server's queue is full ({queue} requests): retry later",
        {"Retry-After": str(retry_after)},
    )

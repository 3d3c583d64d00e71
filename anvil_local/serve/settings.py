"""What a server is started with: where it listens, who may call it, and its limits.

One frozen object the CLI fills and the app reads, so `anvil serve --help`, the ready line
and docs/serve.md describe the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from anvil_local.judge.settings import JudgeSettings

#: Loopback only unless told otherwise: a judge server is a local tool first.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000

#: What the System One spec fixes (not configurable): at least two options or levels.
MIN_OPTIONS = 2
MIN_LEVELS = 2


@dataclass(frozen=True)
class Limits:
    """Every limit a request is held to; each is enforced with its own status and message."""

    questions: int = 64  # questions per request (vLLM's cap)
    options: int = 255  # labels of one choice question
    levels: int = 10  # levels of one score question (the spec's range is 2..10)
    body_bytes: int = 1 << 20  # request body
    queue: int = 64  # requests admitted at once (waiting or being judged)
    timeout: float = 120.0  # seconds a request may take, its wait in the queue included
    max_tokens: int = 1024  # the most a chat completion may ask for

    def describe(self) -> str:
        """The limits as the ready line prints them."""
        return (
            f"{self.questions} questions, {self.options} options, {self.levels} levels, "
            f"{_size(self.body_bytes)} body, queue {self.queue}, timeout {self.timeout:g} s"
        )


@dataclass(frozen=True)
class ServeSettings:
    """A server's settings. `models` are catalogue names or .gguf paths (none: the default
    judge); `api_key` None means no authentication (never printed or logged)."""

    models: tuple[str, ...] = ()
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    api_key: str | None = field(default=None, repr=False)
    limits: Limits = field(default_factory=Limits)
    judge: JudgeSettings = field(default_factory=JudgeSettings)


def is_loopback(host: str) -> bool:
    """Whether `host` only listens on this machine."""
    return host in ("localhost", "::1") or host.startswith("127.")


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"

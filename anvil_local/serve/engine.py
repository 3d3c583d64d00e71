"""The judges a server holds, and the queue in front of them.

Each served model has one loaded judge and one lane: a single worker thread that runs its
requests one after another, so requests never interleave inside one llama context, and a
later request on the same state finds it in the KV cache. In front of all lanes sits one
bounded admission count: a request past it is refused at once (503 with Retry-After) rather
than queued without bound. A request that times out or whose client leaves is cancelled: if
it has not started it never runs, and if it has, it stops at its next question.

The engine reaches the judge only through `anvil_local.judge` and the model catalogue.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from anvil_local.judge import Judge, JudgePool
from anvil_local.judge.model import ResolvedModel
from anvil_local.judge.native import llama_cpp_version
from anvil_local.judge.trie import PromptTrie
from anvil_local.serve.errors import (
    ServeError,
    ServeStartError,
    not_found,
    overloaded,
    timed_out,
)
from anvil_local.serve.settings import Limits

log = logging.getLogger(__name__)

T = TypeVar("T")


class Cancelled(Exception):
    """The request was given up (timed out, or its client left) while it was being judged."""


class Ticket:
    """One admitted request's cancel flag, checked by the work between questions."""

    def __init__(self) -> None:
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    def check(self) -> None:
        if self._cancelled.is_set():
            raise Cancelled


@dataclass
class Served:
    """A model the server answers for: its name in requests, identity, judge and lane."""

    name: str
    model: ResolvedModel
    judge: Judge
    lane: ThreadPoolExecutor

    @property
    def identity(self) -> dict[str, Any]:
        """What decides this judge's numbers, echoed to anvil's remote judge so a run can
        refuse answers from another model or build: the model (and adapter), the load
        settings that can change logits, the chat template's source, llama.cpp's version."""
        settings = self.model.settings
        return {
            "model": self.name,
            "sha256": self.model.sha256,
            "adapter_sha256": self.model.adapter_sha256 or None,
            "n_ctx": self.judge.runtime.n_ctx,
            "n_batch": settings.n_batch,
            "n_gpu_layers": settings.n_gpu_layers,
            "template": self.judge.template.source,
            "llama_cpp": llama_cpp_version(),
        }

    @property
    def description(self) -> str:
        base = os.path.basename(self.model.path)
        if self.model.adapter:
            return f"LoRA adapter {os.path.basename(self.model.adapter)} over {base}"
        return base


class Engine:
    """The served judges by name, their lanes, and the admission count."""

    def __init__(self, judges: list[Any], limits: Limits, pool: JudgePool | None = None) -> None:
        """Serve loaded `judges` (each answers to its model's name); `pool`, if given, owns
        them and is cleared on close."""
        names = [j.model.name for j in judges]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ServeStartError(f"a model is served twice: {', '.join(doubled)}")
        self.limits = limits
        self._pool = pool
        self.served: dict[str, Served] = {}
        for judge in judges:
            lane = ThreadPoolExecutor(1, thread_name_prefix=f"judge-{judge.model.name}")
            self.served[judge.model.name] = Served(judge.model.name, judge.model, judge, lane)
        self._admitted = 0
        self._lock = threading.Lock()
        self._tickets: set[Ticket] = set()  # admitted and not yet finished
        self.answered = 0  # requests that got an answer, for the closing line

    @classmethod
    def load(cls, models: list[ResolvedModel], limits: Limits) -> Engine:
        """Load each model (a name served twice is refused before anything loads)."""
        names = [m.name for m in models]
        if len(set(names)) != len(names):
            cls([_Named(m) for m in models], limits)  # raises, naming the model
        keys = [JudgePool.key(m) for m in models]
        if len(set(keys)) != len(keys):  # one loaded model under two names: one context
            raise ServeStartError(
                f"the same model file is served twice, under {', '.join(names)}: serve it once"
            )
        if any(m.remote for m in models):
            raise ServeStartError("anvil serve serves local models, not decision servers")
        pool = JudgePool(limit=max(1, len(models)))
        return cls([pool.get(m) for m in models], limits, pool)

    def get(self, name: str) -> Served:
        served = self.served.get(name)
        if served is None:
            listed = ", ".join(self.served)
            raise not_found(f"model {name!r} is not served here; this server serves: {listed}")
        return served

    def _admit(self) -> None:
        with self._lock:
            if self._admitted >= self.limits.queue:
                raise overloaded(self.limits.queue, retry_after=1)
            self._admitted += 1

    def _release(self, ticket: Ticket) -> None:
        with self._lock:
            self._admitted -= 1
            self._tickets.discard(ticket)

    async def run(
        self,
        served: Served,
        work: Callable[[Judge, Ticket], T],
        gone: Callable[[], Awaitable[None]] | None = None,
    ) -> T:
        """Run `work` on the model's lane, within the request timeout; `gone` returns when
        the client disconnects. The admission place is held until the work has really
        stopped, so the bound counts what the lanes still owe."""
        self._admit()
        ticket = Ticket()
        with self._lock:
            self._tickets.add(ticket)
        start = time.monotonic()

        def job() -> T:
            ticket.check()  # cancelled while it waited: never starts
            served.judge.trie = PromptTrie()  # each request's own trie (see `usage_headers`)
            return work(served.judge, ticket)

        try:
            future = served.lane.submit(job)
        except RuntimeError:  # the lane is shutting down
            self._release(ticket)
            raise ServeError(503, "overloaded", "the server is stopping") from None
        future.add_done_callback(lambda _: self._release(ticket))
        waiting = asyncio.wrap_future(future)
        watch = asyncio.ensure_future(gone()) if gone is not None else None
        try:
            pending = {waiting} if watch is None else {waiting, watch}
            remaining = self.limits.timeout - (time.monotonic() - start)
            done, _ = await asyncio.wait(
                pending, timeout=max(0.0, remaining), return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            if watch is not None and not watch.done():
                watch.cancel()
        if waiting in done:
            result = waiting.result()
            self.answered += 1
            return result
        ticket.cancel()
        waiting.add_done_callback(_swallow)  # the lane finishes or stops on its own
        if watch is not None and watch in done:
            log.info("a client left; its request was cancelled")
            raise Cancelled
        raise timed_out(self.limits.timeout)

    def close(self) -> None:
        """Stop what the lanes still hold (after a graceful stop, only work whose client
        is gone; after a forced one, everything: each stops at its next question), then
        free the models. Closing twice does nothing more."""
        with self._lock:
            for ticket in self._tickets:
                ticket.cancel()
        for served in self.served.values():
            served.lane.shutdown(wait=True, cancel_futures=True)
        if self._pool is not None:
            self._pool.clear()


@dataclass
class _Named:
    """A model standing in for its judge where only the name is read."""

    model: ResolvedModel


def _swallow(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # read, so asyncio does not report it as never retrieved

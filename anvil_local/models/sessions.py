"""Opening a judge session from what a caller has: a model name or path, a ResolvedModel,
a loaded judge, a session, or nothing (the default judge)."""

from __future__ import annotations

from typing import Any

from anvil_local.cache import default_cache
from anvil_local.judge.pool import JudgePool, process_pool
from anvil_local.judge.session import JudgeSession, StepsStore
from anvil_local.judge.settings import JudgeSettings
from anvil_local.models.resolve import ModelSpec, resolve_model


def open_session(
    model: ModelSpec = None,
    settings: JudgeSettings | None = None,
    steps: StepsStore | None = None,
    pool: JudgePool | None = None,
) -> JudgeSession:
    """A session on `model`, resolved now and loaded on first use; steps kept in the on-disk
    cache unless another store is given."""
    return JudgeSession(
        steps=steps or default_cache(), model=resolve_model(model, settings), pool=pool
    )


def as_session(judge: Any = None, model: Any = None) -> JudgeSession:
    """A session from what a caller handed a metric: a session, a judge (or a stand-in
    with the same primitives), or nothing (then `model`, the metric's own, is opened)."""
    if isinstance(judge, JudgeSession):
        return judge
    if judge is None and hasattr(model, "choose"):  # the metric's own judge object
        judge = model
    if judge is None or not hasattr(judge, "choose"):
        return open_session(judge if judge is not None else model)
    return JudgeSession(judge, default_cache())


def get_judge(model: ModelSpec = None, settings: JudgeSettings | None = None) -> Any:
    """The loaded judge for `model`, shared through the process's judge pool."""
    if hasattr(model, "choose"):  # a judge already
        return model
    return process_pool().get(resolve_model(model, settings))

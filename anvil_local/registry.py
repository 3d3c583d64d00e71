"""The registry of metric kinds and DAG node kinds.

Everything that turns a definition into an object goes through here: metric files, the
DAG codec, and the workers of every executor (which rebuild metrics from their dicts). A
new kind is one module plus its registration:

    from anvil_local.registry import register_metric

    @register_metric("keyword")
    class KeywordMetric(BaseMetric): ...

Third-party packages register without being imported by the user, through the
`anvil_local.metrics` entry-point group (each entry point names a module, or a callable
that registers). A metric travelling to a worker carries the module that defines its
class, so a kind registered in the user's own code is found there too.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, TypeVar

from anvil_local.errors import AnvilError, DataError

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "anvil_local.metrics"
_BUILTIN_MODULES = (
    "anvil_local.metrics.geval",
    "anvil_local.metrics.dag.metric",
    "anvil_local.metrics.dag.code",
    "anvil_local.metrics.code",
    "anvil_local.metrics.likelihood",
)

T = TypeVar("T")


@dataclass(frozen=True)
class NodeKind:
    """How one DAG node type reads from and writes to a metric file's node table."""

    name: str
    cls: type
    fields: frozenset[str]  # keys a node spec of this type may hold


_METRICS: dict[str, type] = {}
_NODES: dict[str, NodeKind] = {}
_loaded = False


def register_metric(kind: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: `kind` is the `type` of the metric's dict."""

    def decorate(cls: type[T]) -> type[T]:
        existing = _METRICS.get(kind)
        if existing is not None and existing is not cls and _qualname(existing) != _qualname(cls):
            raise AnvilError(
                f"metric kind {kind!r} is registered twice ({_qualname(existing)} and "
                f"{_qualname(cls)})"
            )
        cls.kind = kind  # type: ignore[attr-defined]
        _METRICS[kind] = cls
        return cls

    return decorate


def register_node(kind: str, fields: set[str] | frozenset[str]) -> Callable[[type[T]], type[T]]:
    """Class decorator for a DAG node type: `kind` is its `type` in a node table."""

    def decorate(cls: type[T]) -> type[T]:
        cls.kind = kind  # type: ignore[attr-defined]
        _NODES[kind] = NodeKind(kind, cls, frozenset(fields) | {"type"})
        return cls

    return decorate


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def load_plugins() -> None:
    """Import the built-in kinds and every entry point of the group, once per process."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _BUILTIN_MODULES:
        importlib.import_module(module)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            loaded = entry.load()
        except Exception as exc:  # a broken plugin must not stop the built-in kinds
            log.warning("metric plugin %s could not be loaded: %s", entry.name, exc)
            continue
        if callable(loaded) and not isinstance(loaded, type):
            loaded()


def metric_kinds() -> dict[str, type]:
    load_plugins()
    return dict(_METRICS)


def node_kinds() -> dict[str, NodeKind]:
    load_plugins()
    return dict(_NODES)


def metric_class(kind: Any) -> type:
    kinds = metric_kinds()
    if kind not in kinds:
        raise DataError(
            f"unknown metric type {kind!r} (expected one of: {', '.join(sorted(kinds))})"
        )
    return kinds[kind]


def metric_from_dict(data: dict[str, Any]) -> Any:
    """The metric a dict describes, by its `type`. A `calibration` table (fitted maps, any
    kind) is read here and kept on the metric, outside its definition: a map never changes
    what is judged, so it is no part of a cache key."""
    if "calibration" not in data:
        return metric_class(data.get("type")).from_dict(data)
    from anvil_local.metrics.calibration import Calibration

    rest = {k: v for k, v in data.items() if k != "calibration"}
    metric = metric_class(rest.get("type")).from_dict(rest)
    metric.calibration = Calibration.from_dict(data["calibration"])
    return metric


def metric_definition(metric: Any) -> dict[str, Any]:
    """What a metric file holds for `metric`: its definition and any fitted calibration."""
    data = metric.to_dict()
    calibration = getattr(metric, "calibration", None)
    if calibration is not None:
        data["calibration"] = calibration.to_dict()
    return data


def node_kind(kind: Any) -> NodeKind | None:
    return node_kinds().get(kind)


# -- metrics on the wire (to worker processes and Ray actors) ---------------------------


def metric_to_wire(metric: Any) -> dict[str, Any]:
    """A metric as plain data a worker can rebuild: its dict and the module of its class."""
    try:
        data = metric.to_dict()
    except NotImplementedError as exc:
        raise DataError(
            f"metric {metric.name!r} cannot be sent to a worker: its class has no to_dict"
        ) from exc
    kind = data.get("type")
    if _METRICS.get(kind) is not type(metric):
        raise DataError(
            f"metric {metric.name!r} ({type(metric).__name__}) is not a registered kind; "
            "decorate its class with @register_metric(...) to run it in worker processes"
        )
    return {"module": type(metric).__module__, "definition": data}


def metric_from_wire(wire: dict[str, Any]) -> Any:
    load_plugins()
    if wire["definition"].get("type") not in _METRICS:
        importlib.import_module(wire["module"])  # registers a kind defined outside plugins
    return metric_from_dict(wire["definition"])

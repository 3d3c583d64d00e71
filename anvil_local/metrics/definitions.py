"""Metrics as plain data: what a metric file holds (a definition and any fitted calibration)
and what travels to a worker process (the definition and the module of its class).

The metric kinds come from the registry by the dict's `type`; a fitted `calibration` table
(any kind) is read here and kept on the metric, outside its definition: a map never changes
what is judged, so it is no part of a cache key. So is a file's `model`, the judge the metric
was made for (a catalogue name): a run without one of its own uses it, and the model's
identity, not the name, is what cache keys hold.
"""

from __future__ import annotations

import importlib
from typing import Any

from anvil_local.errors import DataError
from anvil_local.metrics.calibration import Calibration
from anvil_local.registry import METRIC_KINDS

OUTSIDE = ("calibration", "model")  # what a metric file holds beside the definition


def metric_from_dict(data: dict[str, Any]) -> Any:
    """The metric a dict describes, by its `type`, with its calibration and its model if it
    names them."""
    if not any(k in data for k in OUTSIDE):
        return METRIC_KINDS.get(data.get("type")).from_dict(data)
    rest = {k: v for k, v in data.items() if k not in OUTSIDE}
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise DataError("'model' must be a model's catalogue name or .gguf path")
    metric = METRIC_KINDS.get(rest.get("type")).from_dict(rest)
    if "calibration" in data:
        metric.calibration = Calibration.from_dict(data["calibration"])
    if model is not None:
        metric.model = model.strip()
    return metric


def metric_definition(metric: Any) -> dict[str, Any]:
    """What a metric file holds for `metric`: its definition, the model it names (a name or
    path) and any fitted calibration."""
    data = metric.to_dict()
    if isinstance(getattr(metric, "model", None), str):
        data["model"] = metric.model
    calibration = getattr(metric, "calibration", None)
    if calibration is not None:
        data["calibration"] = calibration.to_dict()
    return data


def metric_to_wire(metric: Any) -> dict[str, Any]:
    """A metric as plain data a worker can rebuild: its dict and the module of its class."""
    try:
        data = metric.to_dict()
    except NotImplementedError as exc:
        raise DataError(
            f"metric {metric.name!r} cannot be sent to a worker: its class has no to_dict"
        ) from exc
    if METRIC_KINDS.find(data.get("type")) is not type(metric):
        raise DataError(
            f"metric {metric.name!r} ({type(metric).__name__}) is not a registered kind; "
            "decorate its class with @register_metric(...) to run it in worker processes"
        )
    return {"module": type(metric).__module__, "definition": data}


def metric_from_wire(wire: dict[str, Any]) -> Any:
    """The metric `metric_to_wire` sent; a kind registered in the user's own code (not a
    plugin) is found by importing the module that defines it."""
    if wire["definition"].get("type") not in METRIC_KINDS:
        importlib.import_module(wire["module"])
    return metric_from_dict(wire["definition"])

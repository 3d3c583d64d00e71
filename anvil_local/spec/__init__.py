"""Metric files (TOML/JSON) <-> metric objects, and DeepEval DAG JSON import."""

from anvil_local.spec.files import (
    MetricFileError,
    dump_metric,
    load_metric,
    load_metrics,
    metric_definition,
    metric_from_dict,
)

__all__ = [
    "MetricFileError",
    "dump_metric",
    "load_metric",
    "load_metrics",
    "metric_definition",
    "metric_from_dict",
]

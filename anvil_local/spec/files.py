"""Metric files: one metric per TOML or JSON file; DeepEval DAG JSON is recognised too."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from anvil_local.errors import AnvilError, not_utf8
from anvil_local.registry import metric_from_dict
from anvil_local.spec import deepeval


class MetricFileError(AnvilError):
    """A metric file that cannot be read or breaks a rule; the message names the file."""


def read_metric_dict(path: Path) -> dict[str, Any]:
    """The file's content as a metric dict (DeepEval DAG JSON converted)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError as exc:
        raise MetricFileError(f"{path}: no such metric file") from exc
    except UnicodeDecodeError as exc:
        raise MetricFileError(not_utf8(path, exc)) from exc
    except OSError as exc:
        raise MetricFileError(f"{path}: cannot read: {exc.strerror}") from exc
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise MetricFileError(f"{path}: metric files are .toml or .json")
    except tomllib.TOMLDecodeError as exc:
        raise MetricFileError(f"{path}: invalid TOML: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise MetricFileError(f"{path}: invalid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MetricFileError(f"{path}: a metric file holds one object")
    if deepeval.is_deepeval_dag(data):
        try:
            data = deepeval.convert(data, name=data.get("name") or path.stem)
        except (AnvilError, ValueError) as exc:
            raise MetricFileError(f"{path}: {exc}") from exc
    return data


def load_metric(path: str | Path) -> Any:
    """A metric of any registered kind from a file; every error names the file (and node)."""
    path = Path(path)
    data = read_metric_dict(path)
    try:
        return metric_from_dict(data)
    except (AnvilError, ValueError, TypeError) as exc:
        raise MetricFileError(f"{path}: {exc}") from exc


def dump_metric(metric: Any, path: str | Path) -> None:
    """Write a metric as JSON (the TOML form is for hand-written files)."""
    Path(path).write_text(
        json.dumps(metric.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
